"""Reliability: 16 concurrent writers lose nothing and never surface "database is locked"; a SIGKILLed writer
loses nothing it acknowledged. Both on SQLite and PostgreSQL; writers are forked processes with their own engines."""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import signal
import time
import traceback

import sqlalchemy as sa

from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.grading import record_judgment
from db.store.engine import get_engine
from db.store.models import Assignment, Judgment, JudgmentHistory, User, utcnow

FORK = mp.get_context("fork")
N_USERS, N_PROCS, ROUNDS = 8, 16, 1


def _writer(url: str, username: str, pair_ids: list[int], seed: int, out) -> None:
    """One 'browser tab': judge every pair ROUNDS times in its own order, reporting each acknowledged write."""
    try:
        get_engine.cache_clear()
        engine = get_engine(url)
        order = pair_ids[seed % len(pair_ids) :] + pair_ids[: seed % len(pair_ids)]
        for rnd in range(ROUNDS):
            for i, pid in enumerate(order):
                info = record_judgment(engine, pid, username, (seed + rnd + i) % 4, note=f"p{seed}")
                out.put(("ok", username, pid, info.grade, info.note, info.changed))
        engine.dispose()
    except BaseException:  # report everything, including "database is locked"
        out.put(("error", username, traceback.format_exc(), None, None, None))


def _assign_users(engine, queue) -> list[str]:
    """N_USERS annotators, each assigned all of queue's pairs."""
    names = [f"w{i}" for i in range(N_USERS)]
    ids = {n: create_user(engine, n, "annotator", actor=OPERATOR).id for n in names}
    now = utcnow()
    with engine.begin() as conn:
        project_id = conn.execute(sa.text("SELECT id FROM projects WHERE name = 'demo'")).scalar_one()
        conn.execute(
            sa.insert(Assignment.__table__),
            [
                {"project_id": project_id, "pair_id": pid, "user_id": ids[n], "position": pos, "created_at": now}
                for n in names
                for pos, pid in enumerate(sorted(queue.values()), start=1)
            ],
        )
    return names


def test_sixteen_concurrent_writers(engine, queue, store_url):
    names = _assign_users(engine, queue)
    pairs = sorted(queue.values())
    engine.dispose()  # forked children must not inherit pooled connections
    out = FORK.Queue()
    procs = [FORK.Process(target=_writer, args=(store_url, names[i % N_USERS], pairs, i, out)) for i in range(N_PROCS)]
    for p in procs:
        p.start()
    expected = N_PROCS * ROUNDS * len(pairs)
    messages = []
    deadline = time.monotonic() + 120
    while len(messages) < expected and time.monotonic() < deadline:
        msg = out.get(timeout=max(0.1, deadline - time.monotonic()))
        messages.append(msg)
        if msg[0] == "error":
            break
    for p in procs:
        p.join(timeout=30)
    errors = [m[2] for m in messages if m[0] == "error"]
    assert not errors, errors[0]
    assert len(messages) == expected and all(p.exitcode == 0 for p in procs)

    with engine.connect() as conn:
        current = {
            (r.pair_id, r.username): r
            for r in conn.execute(
                sa.select(Judgment.pair_id, User.username, Judgment.grade, Judgment.note, Judgment.revision).join(
                    User, User.id == Judgment.user_id
                )
            )
        }
        history: dict = {}
        for r in conn.execute(
            sa.select(
                JudgmentHistory.pair_id,
                User.username,
                JudgmentHistory.action,
                JudgmentHistory.old_grade,
                JudgmentHistory.new_grade,
                JudgmentHistory.old_note,
                JudgmentHistory.new_note,
            )
            .join(User, User.id == JudgmentHistory.user_id)
            .order_by(JudgmentHistory.id)
        ):
            history.setdefault((r.pair_id, r.username), []).append(r)
    # Every (pair, annotator) judged exactly once (no duplicates, none lost).
    assert sorted(current) == sorted((p, n) for p in pairs for n in names)
    changed = {}
    for _, name, pid, *_rest, was_changed in messages:
        changed[(pid, name)] = changed.get((pid, name), 0) + bool(was_changed)
    for key, row in current.items():
        chain = history[key]
        # History is complete and consistent: one row per acknowledged change, each old = the previous new,
        # and the stored judgment is the last new value with revision = number of changes.
        assert len(chain) == changed[key] == row.revision, key
        assert chain[0].action == "create" and chain[0].old_grade is None
        for before, after in itertools.pairwise(chain):
            assert (after.action, after.old_grade, after.old_note) == ("update", before.new_grade, before.new_note)
        assert (chain[-1].new_grade, chain[-1].new_note) == (row.grade, row.note)


def _endless_writer(url: str, username: str, pair_ids: list[int], conn) -> None:
    """Write forever, sending (pair, grade, note) only after each commit returned."""
    get_engine.cache_clear()
    engine = get_engine(url)
    i = 0
    while True:
        pid = pair_ids[i % len(pair_ids)]
        info = record_judgment(engine, pid, username, i % 4, note=f"write {i}")
        conn.send((pid, info.grade, info.note))
        i += 1


def test_sigkill_loses_nothing_acknowledged(engine, queue, store_url):
    pairs = sorted(queue.values())
    engine.dispose()
    receiver, sender = FORK.Pipe(duplex=False)
    proc = FORK.Process(target=_endless_writer, args=(store_url, "ann1", pairs, sender))
    proc.start()
    sender.close()
    acks = []
    deadline = time.monotonic() + 60
    while len(acks) < 30 and time.monotonic() < deadline:
        if receiver.poll(1):
            acks.append(receiver.recv())
    os.kill(proc.pid, signal.SIGKILL)  # mid-stream: the writer is inside its next transaction or about to be
    proc.join(timeout=10)
    assert proc.exitcode == -signal.SIGKILL
    while receiver.poll(0.2):
        try:
            acks.append(receiver.recv())
        except EOFError:
            break
    assert len(acks) >= 30
    with engine.connect() as conn:
        notes = {
            (r.pair_id, r.new_note) for r in conn.execute(sa.select(JudgmentHistory.pair_id, JudgmentHistory.new_note))
        }
        current = dict(conn.execute(sa.select(Judgment.pair_id, Judgment.note)).all())
        if engine.dialect.name == "sqlite":
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
    # Every acknowledged write is in the history; each pair holds its last acknowledged write or a later one
    # that committed before the kill (never an older one).
    assert all((pid, note) in notes for pid, _grade, note in acks)
    last = {pid: int(note.split()[1]) for pid, _g, note in acks}
    for pid, n in last.items():
        assert int(current[pid].split()[1]) >= n

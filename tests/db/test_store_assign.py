"""Assignment: N distinct annotators per pair, seeded overlap fraction, least-loaded first, grouped by query."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.assignment import assign, overlap_sample, plan_assignments
from db.pooling import pool
from db.store.engine import session_scope
from db.store.models import Assignment, Judgment, Pair, Query, User
from tests.helpers import seed

PASSWORD = "a long password 1"


def setup_pairs(engine, project, queries: int = 3, per_query: int = 4, annotators=("ann", "bob", "cat")):
    """`queries` × `per_query` pooled pairs (one run ranks them) and the given annotators."""
    texts = {f"f{q}_{i}": f"text {q} {i}" for q in range(queries) for i in range(per_query)}
    run = {f"q{q}": [f"f{q}_{i}" for i in range(per_query)] for q in range(queries)}
    seed(engine, project.id, {f"q{q}": f"query {q}" for q in range(queries)}, texts, {"R": run})
    pool(engine, "demo", depth=per_query, bm25=0, actor=OPERATOR)
    for name in annotators:
        create_user(engine, name, "annotator", password=PASSWORD, actor=OPERATOR)


def assignments(engine) -> list[tuple[str, str, int, int, int | None]]:
    """(username, query ext, pair id, position, best_rank) of every assignment, in queue order."""
    with session_scope(engine) as s:
        return [
            tuple(r)
            for r in s.execute(
                select(User.username, Query.external_id, Pair.id, Assignment.position, Pair.best_rank)
                .join(User, User.id == Assignment.user_id)
                .join(Pair, Pair.id == Assignment.pair_id)
                .join(Query, Query.id == Pair.query_id)
                .order_by(User.username, Assignment.position)
            ).all()
        ]


def test_every_pair_gets_n_distinct_annotators_grouped_by_query(engine, project):
    setup_pairs(engine, project)
    report = assign(engine, "demo", overlap=2, actor=OPERATOR)
    rows = assignments(engine)
    per_pair = defaultdict(list)
    for user, _, pid, _, _ in rows:
        per_pair[pid].append(user)
    assert len(per_pair) == 12 and all(len(set(u)) == len(u) == 2 for u in per_pair.values())
    assert report.created == 24 and report.pairs_topped_up == 12
    # Least-loaded first over whole queries: 3 queries × 2 readers spread over 3 annotators ⇒ 8 pairs each.
    assert Counter(u for u, *_ in rows) == {"ann": 8, "bob": 8, "cat": 8}
    for user in ("ann", "bob", "cat"):
        queue = [(q, pos, rank) for u, q, _, pos, rank in rows if u == user]
        assert [p for _, p, _ in queue] == list(range(len(queue)))
        queries = [q for q, _, _ in queue]
        assert queries == sorted(queries, key=queries.index)  # each query's pairs are consecutive
        for q in set(queries):
            ranks = [r for qq, _, r in queue if qq == q]
            assert ranks == sorted(ranks) == [1, 2, 3, 4]


def test_rerun_is_idempotent_and_tops_up_new_pairs_and_annotators(engine, project):
    setup_pairs(engine, project, annotators=("ann", "bob"))
    assign(engine, "demo", overlap=2, actor=OPERATOR)
    assert assign(engine, "demo", overlap=2, actor=OPERATOR).created == 0
    create_user(engine, "cat", "annotator", password=PASSWORD, actor=OPERATOR)
    assert assign(engine, "demo", overlap=2, actor=OPERATOR).created == 0  # everyone already has 2
    report = assign(engine, "demo", overlap=3, actor=OPERATOR)
    assert report.created == 12 and report.per_annotator == {"cat": 12}
    rows = assignments(engine)
    assert len(rows) == len({(u, pid) for u, _, pid, _, _ in rows}) == 36


def test_fraction_gets_full_overlap_and_the_rest_one(engine, project):
    setup_pairs(engine, project, queries=5, per_query=8)
    report = assign(engine, "demo", overlap=2, fraction=0.25, seed=7, actor=OPERATOR)
    counts = Counter(pid for _, _, pid, _, _ in assignments(engine))
    assert Counter(counts.values()) == {2: 10, 1: 30}  # round(0.25 × 40) = 10 pairs doubly judged
    assert report.pairs_with_overlap == 10 and report.created == 50
    assert assign(engine, "demo", overlap=2, fraction=0.25, seed=7, actor=OPERATOR).created == 0


def test_overlap_sample_is_seeded_and_exact():
    ids = np.arange(1, 1001)
    a, b, c = overlap_sample(ids, 0.3, 1), overlap_sample(ids, 0.3, 1), overlap_sample(ids, 0.3, 2)
    assert a.sum() == 300 and (a == b).all() and not (a == c).all()
    # Adding pairs keeps most earlier choices (the sample is by hash rank, not by position).
    grown = overlap_sample(np.arange(1, 1101), 0.3, 1)[:1000]
    assert (grown & a).sum() >= 270


def test_least_loaded_annotators_come_first(engine, project):
    setup_pairs(engine, project, queries=1, per_query=3)
    assign(engine, "demo", overlap=2, annotators=["ann", "bob"], actor=OPERATOR)
    seed(engine, project.id, {"q9": "another"}, {"g1": "new text"}, {"S": {"q9": ["g1"]}})
    pool(engine, "demo", depth=1, bm25=0, actor=OPERATOR)
    report = assign(engine, "demo", overlap=2, actor=OPERATOR)
    # ann and bob carry 3 each, cat none: the new pair goes to cat first, then to ann (id order breaks the tie).
    assert report.per_annotator == {"cat": 1, "ann": 1}


def test_a_pair_already_judged_counts_towards_overlap(engine, project):
    setup_pairs(engine, project, queries=1, per_query=1)
    with session_scope(engine, write=True) as s:  # as an import of existing judgments leaves it: no assignment
        pid = s.execute(select(Pair.id)).scalar_one()
        uid = s.execute(select(User.id).where(User.username == "cat")).scalar_one()
        s.add(Judgment(project_id=project.id, pair_id=pid, user_id=uid, grade=2))
    assign(engine, "demo", overlap=2, annotators=["ann", "bob", "cat"], actor=OPERATOR)
    users = sorted(u for u, *_ in assignments(engine))
    assert len(users) == 1 and users[0] != "cat"


def test_refusals(engine, project):
    setup_pairs(engine, project, annotators=("ann",))
    with pytest.raises(ValueError, match="overlap 2 needs at least 2 annotators"):
        assign(engine, "demo", overlap=2, actor=OPERATOR)
    with pytest.raises(LookupError, match="no user named 'zed'"):
        assign(engine, "demo", overlap=1, annotators=["zed"], actor=OPERATOR)
    with pytest.raises(ValueError, match="fraction"):
        assign(engine, "demo", overlap=1, fraction=0, actor=OPERATOR)


class _Row:
    """A pair row as plan_assignments reads it."""

    def __init__(self, pid: int, qid: int) -> None:
        self.id, self.query_id = pid, qid


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    people=st.integers(1, 5),
    n=st.integers(1, 5),
    frac=st.floats(0.05, 1.0),
    preassigned=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 4))),
)
def test_plan_invariants(sizes, people, n, frac, preassigned):
    n = min(n, people)
    rows = [_Row(pid, q) for pid, q in enumerate(q for q, size in enumerate(sizes) for _ in range(size))]
    full = overlap_sample(np.array([r.id for r in rows]), frac, 0)
    users = [(u, f"u{u}") for u in range(people)]
    have, load, pos = defaultdict(set), defaultdict(int), defaultdict(int)
    for pid, uid in preassigned:
        if pid < len(rows) and uid < people and uid not in have[pid]:
            have[pid].add(uid)
            load[uid] += 1
            pos[uid] += 1
    before = {pid: set(us) for pid, us in have.items()}
    plan = plan_assignments(rows, full, n, users, have, load, pos)
    got = defaultdict(set, {pid: set(us) for pid, us in before.items()})
    for pid, uid, _ in plan:
        assert uid not in got[pid]  # never the same pair twice to one annotator
        got[pid].add(uid)
    for i, r in enumerate(rows):
        assert len(got[r.id]) == max(len(before.get(r.id, ())), n if full[i] else 1)
    by_user = defaultdict(list)
    for pid, uid, position in plan:
        by_user[uid].append((position, rows[pid].query_id))
    for queue in by_user.values():
        queries = [q for _, q in sorted(queue)]
        assert queries == sorted(queries, key=queries.index)


def test_cli_assign(engine, project, store_url, capsys):
    setup_pairs(engine, project)
    assert (
        main(
            [
                "assign",
                "--project",
                "demo",
                "--overlap",
                "2",
                "--annotators",
                "ann,bob",
                "--db",
                store_url,
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["per_annotator"] == {"ann": 12, "bob": 12}
    assert main(["assign", "--project", "demo", "--overlap", "4", "--db", store_url]) == 2
    assert "needs at least 4 annotators" in capsys.readouterr().err


def test_overlap_counts_people_who_can_log_in_and_human_grades_only(engine, project):
    # 1 query × 4 pairs; ann and bob can log in, "imp" (an account a judgments import would create: active, no
    # password) cannot; a model judge graded every pair. Overlap 2 must come from ann and bob on every pair:
    # the model's grade is not one of the two, and imp gets nothing.
    setup_pairs(engine, project, queries=1, per_query=4, annotators=("ann", "bob"))
    create_user(engine, "imp", "annotator", actor=OPERATOR)
    with session_scope(engine, write=True) as s:
        model = User(username="llm", role="annotator", kind="model", model_name="m")
        s.add(model)
        s.flush()
        for pid in s.execute(select(Pair.id)).scalars().all():
            s.add(Judgment(project_id=project.id, pair_id=pid, user_id=model.id, grade=2))
    report = assign(engine, "demo", overlap=2, actor=OPERATOR)
    per_pair = defaultdict(set)
    for user, _, pid, _, _ in assignments(engine):
        per_pair[pid].add(user)
    assert len(per_pair) == 4 and all(users == {"ann", "bob"} for users in per_pair.values())
    assert (report.created, report.pairs_asked_overlap, report.pairs_with_overlap, report.pairs_short) == (8, 4, 4, 0)
    # imp named explicitly is assigned (the lead chose it), but the report says the account cannot log in, and
    # its assignment does not count: the pair q0/f0_0 still needs two people who can open their queue.
    with session_scope(engine, write=True) as s:
        s.execute(
            Assignment.__table__.delete().where(
                Assignment.user_id == s.execute(select(User.id).where(User.username == "bob")).scalar_one()
            )
        )
    named = assign(engine, "demo", overlap=2, annotators=["ann", "imp"], actor=OPERATOR)
    assert named.cannot_log_in == ["imp"] and named.created == 4
    assert (named.pairs_with_overlap, named.pairs_short) == (0, 4)

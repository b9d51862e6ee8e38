"""Judging: the queue order, upsert + history in one transaction, permissions, undo, progress, frames."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.adjudication import adjudicate, rejudge_queue
from db.grading import (
    annotator_stats,
    get_pair,
    next_pair,
    previous_pair,
    progress,
    record_judgment,
    undo_judgment,
)
from db.projects import add_guideline, create_project
from db.store.frames import (
    fragments_text,
    judgments_fingerprint,
    judgments_frame,
    qrels_frame,
    queries_frame,
)
from db.store.models import Judgment, JudgmentHistory


def _history(engine, pair_id):
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                sa.select(JudgmentHistory.action, JudgmentHistory.old_grade, JudgmentHistory.new_grade)
                .where(JudgmentHistory.pair_id == pair_id)
                .order_by(JudgmentHistory.id)
            )
        ]


def test_queue_order_and_other_tabs(engine, queue):
    first = next_pair(engine, "demo", "ann1")
    assert (first.query_external_id, first.fragment_external_id, first.position, first.total) == ("q1", "f1", 1, 12)
    tab_b = next_pair(engine, "demo", "ann1")
    assert tab_b.pair_id == first.pair_id  # deterministic: both tabs see the same pair
    record_judgment(engine, first.pair_id, "ann1", 2)
    after = next_pair(engine, "demo", "ann1")  # tab B asks again: the judged pair is skipped
    assert (after.fragment_external_id, after.position) == ("f2", 2)
    record_judgment(engine, queue[("q1", "f3")], "ann1", 1)  # judged out of order in a third tab
    assert next_pair(engine, "demo", "ann1").fragment_external_id == "f2"
    assert next_pair(engine, "demo", "ann2").pair_id == first.pair_id  # ann2's queue is independent
    for pid in queue.values():
        record_judgment(engine, pid, "ann1", 0)
    assert next_pair(engine, "demo", "ann1") is None


def test_upsert_revisions_and_history(engine, queue):
    pid = queue[("q2", "f1")]
    a = record_judgment(engine, pid, "ann1", 1, note="partly", seconds_spent=12.5)
    assert (a.grade, a.note, a.revision, a.changed) == (1, "partly", 1, True)
    same = record_judgment(engine, pid, "ann1", 1, note="partly ", seconds_spent=3)
    assert not same.changed and same.revision == 1
    b = record_judgment(engine, pid, "ann1", 3, note="partly")
    assert (b.id, b.revision, b.changed) == (a.id, 2, True)
    record_judgment(engine, pid, "ann1", None, cant_judge_reason="fragment truncated")
    assert _history(engine, pid) == [("create", None, 1), ("update", 1, 3), ("update", 3, None)]
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(Judgment.grade, Judgment.cant_judge_reason, Judgment.revision, Judgment.seconds_spent).where(
                Judgment.pair_id == pid
            )
        ).all()
    assert [tuple(r) for r in rows] == [(None, "fragment truncated", 3, 12.5)]


def test_grades_are_checked_against_the_scale(engine, queue):
    pid = queue[("q1", "f1")]
    for bad, message in (
        (4, "outside the scale 0-3"),
        (-1, "outside the scale"),
        (True, "integer"),
        (2.0, "integer"),
        (None, "needs a reason"),
    ):
        with pytest.raises(ValueError, match=message):
            record_judgment(engine, pid, "ann1", bad)
    assert _history(engine, pid) == []
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:  # and the database refuses it too
        conn.execute(
            sa.text(
                f"INSERT INTO judgments (project_id, pair_id, user_id, grade, revision, created_at, "
                f"updated_at) VALUES (1, {pid}, 1, 101, 1, '2026-01-01', '2026-01-01')"
            )
        )


def test_only_assigned_annotators_or_leads_judge(engine, queue):
    create_user(engine, "ann3", "annotator", "ann3-password", actor=OPERATOR)
    pid = queue[("q1", "f2")]
    with pytest.raises(PermissionError, match="not assigned"):
        record_judgment(engine, pid, "ann3", 2)
    with pytest.raises(PermissionError, match="not assigned"):
        get_pair(engine, "demo", "ann3", pid)
    assert record_judgment(engine, pid, "boss", 3).grade == 3
    assert get_pair(engine, "demo", "boss", pid).position is None
    with pytest.raises(LookupError, match="no pair"):
        record_judgment(engine, 10_000, "ann1", 1)


def test_judgments_are_stamped_with_the_current_guideline(engine, queue):
    v1 = add_guideline(engine, "demo", "v1 text", actor=OPERATOR)
    old = record_judgment(engine, queue[("q1", "f1")], "ann1", 2)
    v2 = add_guideline(engine, "demo", "v2 text", actor=OPERATOR)
    new = record_judgment(engine, queue[("q1", "f2")], "ann1", 2)
    assert (old.guideline_id, new.guideline_id) == (v1.id, v2.id)
    queue_frame = rejudge_queue(engine, "demo")
    assert queue_frame[["query_id", "fragment_id", "annotator", "guideline", "current"]].values.tolist() == [
        ["q1", "f1", "ann1", 1, 2]
    ]
    record_judgment(engine, queue[("q1", "f1")], "ann1", 3)  # re-judged under v2: off the list
    assert rejudge_queue(engine, "demo").empty


def test_undo_keeps_history_and_requeues(engine, queue):
    pid = queue[("q1", "f1")]
    assert undo_judgment(engine, pid, "ann1") is None
    record_judgment(engine, pid, "ann1", 2, note="n")
    removed = undo_judgment(engine, pid, "ann1")
    assert (removed.grade, removed.note) == (2, "n")
    assert get_pair(engine, "demo", "ann1", pid).grade is None
    assert next_pair(engine, "demo", "ann1").pair_id == pid
    assert _history(engine, pid) == [("create", None, 2), ("undo", 2, None)]
    record_judgment(engine, pid, "ann1", 1)
    assert _history(engine, pid)[-1] == ("create", None, 1)


def test_views_show_only_own_judgment_and_walk_back(engine, queue):
    pid = queue[("q1", "f1")]
    record_judgment(engine, pid, "ann1", 3, note="mine")
    assert (get_pair(engine, "demo", "ann1", pid).grade, get_pair(engine, "demo", "ann1", pid).note) == (3, "mine")
    theirs = get_pair(engine, "demo", "ann2", pid)
    assert (theirs.grade, theirs.note) == (None, None)
    record_judgment(engine, queue[("q1", "f2")], "ann1", 1)
    back = previous_pair(engine, "demo", "ann1")  # before the next unjudged (q1, f3)
    assert (back.fragment_external_id, back.grade, back.position) == ("f2", 1, 2)
    assert previous_pair(engine, "demo", "ann1", back.pair_id).fragment_external_id == "f1"
    assert previous_pair(engine, "demo", "ann1", pid) is None


def test_progress_and_stats(engine, queue):
    for f in ("f1", "f2"):
        record_judgment(engine, queue[("q1", f)], "ann1", 2, seconds_spent=10 if f == "f1" else 20)
    record_judgment(engine, queue[("q3", "f4")], "ann1", 0, seconds_spent=60)
    prog = progress(engine, "demo", "ann1")
    assert (prog.done, prog.assigned) == (3, 12)
    assert prog.per_query == [("q1", 2, 4), ("q2", 0, 4), ("q3", 1, 4)]
    stats = annotator_stats(engine, "demo").set_index("username")
    assert stats.loc["ann1", ["assigned", "done", "judged"]].tolist() == [12, 3, 3]
    assert stats.loc["ann1", "median_seconds"] == 20.0
    assert stats.loc["ann2", ["assigned", "done"]].tolist() == [12, 0]
    assert stats.loc["ann1", "last_active"].tzinfo is not None


def test_frames(engine, queue):
    pid = queue[("q1", "f1")]
    record_judgment(engine, pid, "ann1", 1, note="weak")
    record_judgment(engine, pid, "ann2", 2)
    record_judgment(engine, queue[("q2", "f3")], "ann2", None, cant_judge_reason="foreign language")
    frame = judgments_frame(engine, "demo")
    assert frame[["query_id", "fragment_id", "annotator"]].values.tolist() == [
        ["q1", "f1", "ann1"],
        ["q1", "f1", "ann2"],
        ["q2", "f3", "ann2"],
    ]
    assert str(frame["grade"].dtype) == "Int64" and frame["grade"].isna().tolist() == [False, False, True]
    assert frame["pair_id"].tolist() == [pid, pid, queue[("q2", "f3")]]
    assert frame["category"].tolist() == ["odd", "odd", "even"] and frame["note"].tolist()[0] == "weak"
    # DESIGN.md "Consensus and releases": median takes the lower median on ties → grades {1, 2} give 1;
    # a pair with only a can't-judge has no real grade and is left out.
    assert qrels_frame(engine, "demo").values.tolist() == [["q1", "f1", 1]]
    assert fragments_text(engine, "demo")["f4"] == "fragment 4"
    assert queries_frame(engine, "demo")["query_id"].tolist() == ["q1", "q2", "q3"]


def _stored(engine, pairs) -> dict:
    with engine.connect() as conn:
        return {
            (p, u): g
            for p, u, g in conn.execute(
                sa.text(
                    "SELECT j.pair_id, u.username, j.grade FROM judgments j JOIN users u ON u.id = j.user_id "
                    "WHERE j.pair_id IN (:a, :b, :c)"
                ),
                dict(zip("abc", pairs, strict=True)),
            )
        }


OPS = st.lists(
    st.tuples(
        st.sampled_from(["ann1", "ann2", "boss"]),
        st.integers(0, 2),
        st.one_of(st.integers(0, 3), st.none(), st.just("undo")),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_any_sequence_keeps_judgments_and_history_consistent(engine, queue, ops):
    """Against a dict model: the stored judgments equal the model, and every (pair, user) history is an unbroken
    old → new chain ending at the stored value (or at None after an undo)."""
    pairs = [queue[("q3", f"f{i}")] for i in (1, 2, 3)]
    model = _stored(engine, pairs)  # examples share the database: start from what earlier ones left
    for user, i, grade in ops:
        key = (pairs[i], user)
        if grade == "undo":
            undo_judgment(engine, *key)
            model.pop(key, None)
        else:
            record_judgment(engine, *key, grade, cant_judge_reason="unsure" if grade is None else None)
            model[key] = grade
    assert _stored(engine, pairs) == model
    with engine.connect() as conn:
        history = conn.execute(
            sa.text(
                "SELECT h.pair_id, u.username, h.action, h.old_grade, h.new_grade, h.old_cant_judge_reason "
                "FROM judgment_history h JOIN users u ON u.id = h.user_id WHERE h.pair_id IN (:a, :b, :c) ORDER BY h.id"
            ),
            dict(zip("abc", pairs, strict=True)),
        ).all()
    state: dict = {}
    for pid, user, action, old, new, _reason in history:
        key = (pid, user)
        assert (action == "create") == (key not in state)
        if key in state:
            assert old == state[key]
        if action == "undo":
            del state[key]
        else:
            state[key] = new
    assert state == model


def test_fingerprint_changes_exactly_when_judgments_change(engine, queue):
    keys = [judgments_fingerprint(engine, "demo")]
    pid = queue[("q1", "f1")]
    record_judgment(engine, pid, "ann1", 1)
    keys.append(judgments_fingerprint(engine, "demo"))
    record_judgment(engine, pid, "ann1", 1)  # no-op re-submit
    assert judgments_fingerprint(engine, "demo") == keys[-1]
    record_judgment(engine, pid, "ann1", 2)
    keys.append(judgments_fingerprint(engine, "demo"))
    undo_judgment(engine, pid, "ann1")
    keys.append(judgments_fingerprint(engine, "demo"))
    adjudicate(engine, pid, 3, "clear answer", actor="boss")
    keys.append(judgments_fingerprint(engine, "demo"))
    assert len(set(keys)) == len(keys)
    create_project(engine, "other", actor=OPERATOR)
    assert judgments_fingerprint(engine, "other") == (0, 0)
    assert judgments_fingerprint(engine, "demo") == keys[-1]

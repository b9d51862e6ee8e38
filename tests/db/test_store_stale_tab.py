"""Two tabs of one annotator: a grade saved from a view older than the pair's last change is refused with the
stored grade (ChangedMeanwhile), nothing is written, and keeping one's own grade afterwards keeps the history."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from db.accounts.permissions import OPERATOR
from db.grading import ChangedMeanwhile, get_pair, next_pair, progress, record_judgment, undo_judgment
from db.imports import import_judgments
from db.store.models import JudgmentHistory
from eval_core.errors import Conflict


def _history(engine, pair_id, user_id=None):
    with engine.connect() as conn:
        stmt = sa.select(JudgmentHistory.action, JudgmentHistory.old_grade, JudgmentHistory.new_grade).where(
            JudgmentHistory.pair_id == pair_id
        )
        if user_id is not None:
            stmt = stmt.where(JudgmentHistory.user_id == user_id)
        return [tuple(r) for r in conn.execute(stmt.order_by(JudgmentHistory.id))]


def test_stale_tab_is_refused_with_the_newer_grade(engine, queue):
    tab_a = next_pair(engine, "demo", "ann1")
    tab_b = next_pair(engine, "demo", "ann1")
    assert tab_a.version == tab_b.version == 0  # never graded
    fresh = record_judgment(engine, tab_b.pair_id, "ann1", 2, seen_version=tab_b.version)
    assert fresh.changed and fresh.version > 0
    with pytest.raises(ChangedMeanwhile) as caught:
        record_judgment(engine, tab_a.pair_id, "ann1", 1, seen_version=tab_a.version)
    err = caught.value
    assert isinstance(err, Conflict)  # one of the store's domain errors: the CLI and app show it as one sentence
    assert (err.pair_id, err.grade, err.version) == (tab_a.pair_id, 2, fresh.version)
    assert "graded 2 meanwhile" in str(err)
    assert get_pair(engine, "demo", "ann1", tab_a.pair_id).grade == 2  # the fresh grade stands
    assert _history(engine, tab_a.pair_id) == [("create", None, 2)]  # nothing written by the stale tab
    # the page asked and the annotator keeps 1: saved against the version the refusal named; history has both
    kept = record_judgment(engine, tab_a.pair_id, "ann1", 1, seen_version=err.version)
    assert (kept.grade, kept.revision, kept.changed) == (1, 2, True)
    assert _history(engine, tab_a.pair_id) == [("create", None, 2), ("update", 2, 1)]
    # an up-to-date view saves without asking
    now = get_pair(engine, "demo", "ann1", tab_a.pair_id)
    assert now.version == kept.version
    assert record_judgment(engine, now.pair_id, "ann1", 3, seen_version=now.version).grade == 3


def test_same_grade_from_a_stale_view_is_not_a_conflict(engine, queue):
    view = next_pair(engine, "demo", "ann1")
    record_judgment(engine, view.pair_id, "ann1", 2)
    same = record_judgment(engine, view.pair_id, "ann1", 2, seen_version=view.version)
    assert not same.changed  # what the stale tab says is already stored: nothing to ask, nothing written
    assert progress(engine, "demo", "ann1").done == 1


def test_clear_and_regrade_in_another_tab_is_seen(engine, queue):
    """An undo then a new grade restarts the judgment's revision at 1; the version (history id) still moves."""
    pid = queue[("q1", "f2")]
    record_judgment(engine, pid, "ann1", 2)
    stale = get_pair(engine, "demo", "ann1", pid)
    undo_judgment(engine, pid, "ann1")
    again = record_judgment(engine, pid, "ann1", 2)
    assert again.revision == 1  # the row's revision alone could not tell the two judgments apart
    with pytest.raises(ChangedMeanwhile):
        record_judgment(engine, pid, "ann1", 0, seen_version=stale.version)
    # a stale clear is refused too, and the other tab's grade stays
    with pytest.raises(ChangedMeanwhile) as caught:
        undo_judgment(engine, pid, "ann1", seen_version=stale.version)
    assert caught.value.grade == 2
    assert get_pair(engine, "demo", "ann1", pid).grade == 2
    fresh = get_pair(engine, "demo", "ann1", pid)
    assert undo_judgment(engine, pid, "ann1", seen_version=fresh.version) is not None


def test_cleared_meanwhile_names_it(engine, queue):
    pid = queue[("q2", "f1")]
    record_judgment(engine, pid, "ann1", 1)
    stale = get_pair(engine, "demo", "ann1", pid)
    undo_judgment(engine, pid, "ann1")
    with pytest.raises(ChangedMeanwhile) as caught:
        record_judgment(engine, pid, "ann1", 3, seen_version=stale.version)
    assert caught.value.grade is None and "cleared meanwhile" in str(caught.value)


def test_other_annotators_do_not_make_a_view_stale(engine, queue):
    view = next_pair(engine, "demo", "ann1")
    record_judgment(engine, view.pair_id, "ann2", 3)
    assert record_judgment(engine, view.pair_id, "ann1", 1, seen_version=view.version).grade == 1


def test_an_import_makes_a_view_stale(engine, queue, tmp_path):
    pid = queue[("q1", "f1")]
    view = get_pair(engine, "demo", "ann1", pid)
    path = tmp_path / "j.jsonl"
    path.write_text('{"query_id": "q1", "fragment_id": "f1", "annotator": "ann1", "grade": 3}\n')
    import_judgments(engine, "demo", path, actor=OPERATOR)
    with pytest.raises(ChangedMeanwhile) as caught:
        record_judgment(engine, pid, "ann1", 0, seen_version=view.version)
    assert caught.value.grade == 3


def test_two_tabs_racing_one_wins_one_is_asked(engine, queue):
    """Both tabs saw the same view and save at once: the check and the write share one locked transaction, so
    exactly one write lands and the other is told what it was (both engines)."""
    view = next_pair(engine, "demo", "ann1")
    outcomes: list[object] = []
    barrier = threading.Barrier(2)

    def save(grade):
        barrier.wait()
        try:
            outcomes.append(record_judgment(engine, view.pair_id, "ann1", grade, seen_version=view.version).grade)
        except ChangedMeanwhile as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=save, args=(g,)) for g in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    saved = [o for o in outcomes if isinstance(o, int)]
    refused = [o for o in outcomes if isinstance(o, ChangedMeanwhile)]
    assert len(saved) == 1 and len(refused) == 1
    assert refused[0].grade == saved[0]
    assert len(_history(engine, view.pair_id)) == 1

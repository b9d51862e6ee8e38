"""Control pairs in the store: made from an adjudicated release or by hand, served as ordinary assignments at
the project's rate, and each annotator measured against them (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sklearn.metrics import cohen_kappa_score

from db.accounts.permissions import OPERATOR
from db.control import add_control, controls_from_release, list_controls, parse_rate, project_control_report
from db.grading import next_pair, progress, record_judgment
from db.releases import create_release
from db.store.frames import judgments_frame
from db.store.models import Fragment, Query
from tests.helpers import judge

SETTLED = {("q9", "g1"): 3, ("q9", "g2"): 0, ("q9", "g3"): 2}


def _settled_release(engine, project) -> None:
    """Query q9 with fragments g1-g3, graded by 'old' and adjudicated by boss (reasons kept), in release 1."""
    with engine.begin() as conn:
        conn.execute(sa.insert(Query.__table__).values(project_id=project.id, external_id="q9", text="query 9"))
        for f in ("g1", "g2", "g3"):
            conn.execute(
                sa.insert(Fragment.__table__).values(
                    project_id=project.id, external_id=f, text=f"fragment {f}", content_hash=f"h{f}"
                )
            )
    judge(
        engine,
        project.id,
        {pair: {"old": 1} for pair in SETTLED},
        {pair: (g, f"settled {pair[1]}", "boss") for pair, g in SETTLED.items()},
    )
    create_release(engine, "demo", actor=OPERATOR)


def _queue_of(engine, user: str) -> list[tuple[str, str]]:
    """The user's pairs in the order next_pair serves them, judging each with grade 1."""
    out = []
    while (pair := next_pair(engine, "demo", user)) is not None:
        out.append((pair.query_external_id, pair.fragment_external_id))
        assert pair.position == len(out) and pair.total == 15  # contiguous positions: controls are counted
        record_judgment(engine, pair.pair_id, user, 1)
    return out


def test_release_controls_are_served_as_ordinary_pairs(engine, project, queue):
    """Rate 1/4: 12 regular pending pairs want 12 // 3 = 4 controls, 3 exist, so each annotator gets all 3.
    No pending q9 pair to sit beside: they go to random places in the pending queue (issue 29: no fixed slot,
    such as between two queries, gives them away)."""
    _settled_release(engine, project)
    report = controls_from_release(engine, "demo", 1, "1/4", actor="boss")
    assert (report.added, report.every, report.served) == (3, 4, {"ann1": 3, "ann2": 3})
    every, controls = list_controls(engine, "demo")
    assert every == 4
    assert [(c.query_id, c.fragment_id, c.grade, c.reason, c.release) for c in controls] == [
        ("q9", "g1", 3, "settled g1", 1),
        ("q9", "g2", 0, "settled g2", 1),
        ("q9", "g3", 2, "settled g3", 1),
    ]
    order = _queue_of(engine, "ann1")
    assert sorted(order) == sorted([(q, f"f{i}") for q in ("q1", "q2", "q3") for i in range(1, 5)] + list(SETTLED))
    assert [q for q, _ in order if q != "q9"] == ["q1"] * 4 + ["q2"] * 4 + ["q3"] * 4  # regular order kept
    assert progress(engine, "demo", "ann1").done == 15
    again = controls_from_release(engine, "demo", 1, "1/4", actor="boss")  # idempotent: nothing new to serve
    assert (again.added, again.served) == (0, {})


def test_control_report_counts_only_judgments_made_after(engine, project, queue):
    """'old' graded q9 before it became a control: not measured. ann2 grades the controls 3, 1, 2 against
    settled 3, 0, 2 → accuracy 2/3; κ is scikit-learn's. The control grades still count in agreement: they are
    ordinary judgments in the judgments frame."""
    _settled_release(engine, project)
    controls_from_release(engine, "demo", 1, "1/4", actor="boss")
    given = {"g1": 3, "g2": 1, "g3": 2}
    while (pair := next_pair(engine, "demo", "ann2")) is not None:
        record_judgment(
            engine,
            pair.pair_id,
            "ann2",
            given.get(pair.fragment_external_id, 0) if pair.query_external_id == "q9" else 1,
        )
    report = project_control_report(engine, "demo", replicates=0)
    assert [s.annotator for s in report.per_annotator] == ["ann2"]
    (ann2,) = report.per_annotator
    assert ann2.pairs == 3 and ann2.accuracy.value == pytest.approx(2 / 3)
    expected = cohen_kappa_score([3, 0, 2], [3, 1, 2], labels=[0, 1, 2, 3], weights="linear")
    assert ann2.kappa.value == pytest.approx(expected)
    frame = judgments_frame(engine, "demo")
    assert len(frame[(frame["annotator"] == "ann2") & (frame["query_id"] == "q9")]) == 3


def test_hand_set_control_needs_a_reason_and_a_lead(engine, project, queue):
    with pytest.raises(ValueError, match="needs a reason"):
        add_control(engine, "demo", "q1", "f1", 2, "  ", actor="boss")
    with pytest.raises(PermissionError):
        add_control(engine, "demo", "q1", "f1", 2, "clear answer", actor="ann1")
    with pytest.raises(ValueError, match="outside the project's scale"):
        add_control(engine, "demo", "q1", "f1", 7, "clear answer", actor="boss")
    report = add_control(engine, "demo", "q1", "f1", 2, "clear answer", "1/20", actor="boss")
    assert report.added == 1 and report.served == {}  # both annotators already have q1 f1 in their queue
    assert list_controls(engine, "demo")[1][0].reason == "clear answer"


@pytest.mark.parametrize(("text", "every"), [("1/20", 20), ("0.05", 20), ("20", 20), ("1 / 4", 4)])
def test_parse_rate(text: str, every: int) -> None:
    assert parse_rate(text) == every


def test_parse_rate_refuses_nonsense() -> None:
    for bad in ("1", "abc", "1/0", "0.9"):
        with pytest.raises(ValueError):
            parse_rate(bad)


def test_cli_set_list_report(engine, project, queue, store_url, capsys):
    from annotator.cli import main

    _settled_release(engine, project)
    assert main(["control", "set", "--project", "demo", "--release", "1", "--rate", "1/4", "--db", store_url]) == 0
    assert "3 new control pair(s); one in every 4 pairs; served to: ann1 3, ann2 3" in capsys.readouterr().out
    assert main(["control", "list", "--project", "demo", "--db", store_url]) == 0
    assert "q9\tg1\t3\trelease 1\tsettled g1" in capsys.readouterr().out
    assert main(["control", "report", "--project", "demo", "--db", store_url]) == 0
    assert "no annotator has graded a control pair yet" in capsys.readouterr().out


def test_no_fixed_slot_gives_a_control_pair_away():
    """Issue 29: a control pair was always placed right after the annotator's first pending pair of its query,
    or alone at a query boundary. Placed 300 times (3 queries x 10 pending pairs, 30 in all), a control of q2
    lands anywhere from before q2's first pair to after its last (slots 10-20), a control of a query outside
    the queue anywhere in it (slots 0-30), never elsewhere."""
    import numpy as np

    from db.control import _placed

    queue = [(100 + i, 200 + i, 1 + i // 10, False) for i in range(30)]  # (assignment, pair, query, done)
    rng = np.random.default_rng(7)
    own = {_placed(queue, [999], {999: 2}, rng).index((None, 999)) for _ in range(300)}
    foreign = {_placed(queue, [999], {999: 9}, rng).index((None, 999)) for _ in range(300)}
    assert own == set(range(10, 21))
    assert len(foreign) >= 25 and foreign <= set(range(31)) and not foreign <= {0, 10, 20, 30}

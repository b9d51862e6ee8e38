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
    No pending q9 pair to sit beside: they go to query boundaries nearest an even spread (targets 3, 6, 9 of
    12 → boundaries 4, 4, 8): after q1's four pairs two controls, after q2's four one."""
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
    assert [q for q, _ in order] == ["q1"] * 4 + ["q9", "q9"] + ["q2"] * 4 + ["q9"] + ["q3"] * 4
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

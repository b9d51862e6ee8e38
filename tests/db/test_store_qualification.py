"""The qualification round in the store (SQLite and PostgreSQL): a new annotator grades N control pairs first,
sees each settled grade and reason after grading it, and their regular queue opens at κ ≥ the threshold or
when a lead opens it; round grades are not judgments (never released, never in agreement). A lead grants a
retake on fresh control pairs, closes an open queue again and reopens it, every decision kept."""

from __future__ import annotations

import json

import pytest
from sklearn.metrics import cohen_kappa_score

from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user, set_password
from db.adjudication import rejudge_queue, send_for_rejudging
from db.assignment import assign
from db.control import add_control, project_control_report
from db.grading import next_pair, progress, record_judgment
from db.projects import add_guideline
from db.qualification import (
    choose_round,
    close_queue,
    grade_round_pair,
    grant_retake,
    list_rounds,
    next_round_pair,
    open_queue,
    qualification_settings,
    round_for,
    round_pairs,
    set_qualification,
)
from db.store.frames import judgments_frame
from db.store.models import RoundStatus
from eval_core.errors import Conflict, NotFound, Refused

# Four control pairs set by hand, one per grade of the 0-3 scale.
CONTROLS = {("q1", "f1"): 3, ("q1", "f2"): 0, ("q2", "f1"): 2, ("q2", "f2"): 1}


@pytest.fixture
def round_project(engine, queue):
    """The queue fixture plus the four controls, a round of 4 at the default threshold (the project's 0.6),
    and cat, a new annotator given every pair (overlap 3) before their round starts."""
    for (q, f), grade in CONTROLS.items():
        add_control(engine, "demo", q, f, grade, f"lead says {grade}: <b>{q}/{f}</b>", actor="boss")
    create_user(engine, "cat", "annotator", actor=OPERATOR)
    assign(engine, "demo", overlap=3, annotators=["ann1", "ann2", "cat"], actor=OPERATOR)
    settings = set_qualification(engine, "demo", 4, actor="boss")
    assert (settings.pairs, settings.threshold, settings.threshold_is_default) == (4, 0.6, True)
    return queue


def _grade_round(engine, user: str, given: dict[tuple[str, str], int]) -> list:
    """Grade the user's whole round with `given`; returns what each grade showed (pair with settled grade)."""
    shown = []
    while (pair := next_round_pair(engine, "demo", user)) is not None:
        assert pair.settled is None and pair.reason is None  # nothing of the settled grade before grading
        graded, state = grade_round_pair(
            engine, "demo", user, pair.pair_id, given[(pair.query_external_id, pair.fragment_external_id)]
        )
        shown.append((graded, state))
    return shown


def test_settings_refuse_a_round_larger_than_the_controls_and_bad_thresholds(engine, queue):
    add_control(engine, "demo", "q1", "f1", 3, "clear", actor="boss")
    with pytest.raises(ValueError, match="has 1 control pair"):
        set_qualification(engine, "demo", 2, actor="boss")
    with pytest.raises(ValueError, match="at least 2"):
        set_qualification(engine, "demo", 1, actor="boss")
    with pytest.raises(PermissionError):
        set_qualification(engine, "demo", 0, actor="ann1")
    add_control(engine, "demo", "q1", "f2", 0, "off topic", actor="boss")
    with pytest.raises(ValueError, match="between -1 and 1"):
        set_qualification(engine, "demo", 2, 1.5, actor="boss")
    assert set_qualification(engine, "demo", 2, 0.8, actor="boss").threshold == 0.8
    assert qualification_settings(engine, "demo").pairs == 2
    assert set_qualification(engine, "demo", 0, actor="boss").pairs is None


def test_round_is_spread_over_grades_and_prefers_pairs_outside_the_queue():
    """Grades 3, 3, 0, 0, 1: three picks take one of each grade first; within grade 3 pair 2 (not queued)
    before pair 1 (queued)."""
    controls = [(1, 3, "a"), (2, 3, "b"), (3, 0, "c"), (4, 0, "d"), (5, 1, "e")]
    chosen = choose_round(controls, queued={1}, n=3, seed=0)
    assert sorted(g for _, g, _ in chosen) == [0, 1, 3]
    assert 2 in {p for p, _, _ in chosen} and 1 not in {p for p, _, _ in chosen}


def test_new_annotator_passes_and_the_queue_opens(engine, round_project):
    """cat grades 3, 0, 2, 2 against settled 3, 0, 2, 1: linear-weighted κ (scikit-learn's, full scale) is
    above 0.6, so the round passes. Each grade shows the settled grade and the reason, literally."""
    state = round_for(engine, "demo", "cat")
    assert state is not None and state.status == RoundStatus.IN_ROUND and (state.pairs, state.graded) == (4, 0)
    pair_ids = {(p.query_external_id, p.fragment_external_id) for p in round_pairs(engine, "demo", "cat")}
    assert pair_ids == set(CONTROLS)
    # the round's pairs left cat's queue (they will know the settled grade); the rest is renumbered 1..8
    first = next_pair(engine, "demo", "cat")
    assert first is not None and (first.position, first.total) == (1, 8)
    with pytest.raises(Refused, match="qualification round"):
        record_judgment(engine, first.pair_id, "cat", 1)
    given = {("q1", "f1"): 3, ("q1", "f2"): 0, ("q2", "f1"): 2, ("q2", "f2"): 2}
    shown = _grade_round(engine, "cat", given)
    for graded, _ in shown:
        key = (graded.query_external_id, graded.fragment_external_id)
        assert (
            graded.settled == CONTROLS[key] and graded.reason == f"lead says {CONTROLS[key]}: <b>{key[0]}/{key[1]}</b>"
        )
    *_, (_, final) = shown
    assert [s.status for _, s in shown[:-1]] == [RoundStatus.IN_ROUND] * 3
    order = list(CONTROLS)
    expected = cohen_kappa_score(
        [CONTROLS[k] for k in order], [given[k] for k in order], labels=[0, 1, 2, 3], weights="linear"
    )
    assert expected > 0.6
    assert final.status == RoundStatus.PASSED and final.open and final.kappa == pytest.approx(expected)
    assert final.finished_at is not None and final.opened_by is None
    with pytest.raises(Conflict, match="already graded"):
        grade_round_pair(engine, "demo", "cat", shown[0][0].pair_id, 1)
    record_judgment(engine, first.pair_id, "cat", 1)  # the regular queue is open
    # round grades are not judgments: not in the judgments frame (so neither in releases nor agreement),
    # and not in the control report; the pairs are never given to cat again
    frame = judgments_frame(engine, "demo")
    assert frame[frame["annotator"] == "cat"][["query_id", "fragment_id"]].values.tolist() == [
        [first.query_external_id, first.fragment_external_id]
    ]
    assert "cat" not in {s.annotator for s in project_control_report(engine, "demo", replicates=0).per_annotator}
    assert assign(engine, "demo", overlap=3, annotators=["ann1", "ann2", "cat"], actor=OPERATOR).created == 0
    assert progress(engine, "demo", "cat").assigned == 8


def test_failed_round_waits_for_a_lead_who_opens_the_queue(engine, round_project):
    """cat grades 0, 3, 1, 2 against 3, 0, 2, 1: κ below 0 (scikit-learn's), the round fails and cat cannot
    grade until boss opens the queue; the decision records boss and when."""
    round_for(engine, "demo", "cat")
    given = {("q1", "f1"): 0, ("q1", "f2"): 3, ("q2", "f1"): 1, ("q2", "f2"): 2}
    *_, (_, final) = _grade_round(engine, "cat", given)
    order = list(CONTROLS)
    expected = cohen_kappa_score(
        [CONTROLS[k] for k in order], [given[k] for k in order], labels=[0, 1, 2, 3], weights="linear"
    )
    assert expected < 0.6
    assert final.status == RoundStatus.FAILED and not final.open and final.kappa == pytest.approx(expected)
    assert "stays closed until a lead opens it or grants a retake" in final.sentence()
    pair = next_pair(engine, "demo", "cat")
    assert pair is not None
    with pytest.raises(Refused):
        record_judgment(engine, pair.pair_id, "cat", 2)
    with pytest.raises(Refused, match="name an active lead"):
        open_queue(engine, "demo", "cat", actor=OPERATOR)
    with pytest.raises(PermissionError):
        open_queue(engine, "demo", "cat", actor="ann1")
    opened = open_queue(engine, "demo", "cat", actor="boss")
    assert opened.status == RoundStatus.OPENED and opened.opened_by == "boss" and opened.opened_at is not None
    assert opened.kappa == pytest.approx(expected)  # the round's outcome is kept beside the lead's decision
    assert record_judgment(engine, pair.pair_id, "cat", 2).changed
    assert [(s.username, s.status) for s in list_rounds(engine, "demo")] == [("cat", RoundStatus.OPENED)]


def test_a_lead_can_open_a_queue_before_any_round(engine, round_project):
    opened = open_queue(engine, "demo", "ann2", actor="boss")
    assert (opened.status, opened.pairs, opened.opened_by) == (RoundStatus.OPENED, 0, "boss")
    assert round_for(engine, "demo", "ann2") is not None and round_pairs(engine, "demo", "ann2") == []
    pair = next_pair(engine, "demo", "ann2")
    assert pair is not None and record_judgment(engine, pair.pair_id, "ann2", 1).changed


def test_who_takes_a_round(engine, queue):
    """Only new human annotators: ann1, who graded before the round was switched on, and boss (a lead) get
    none; ann2 (no judgment yet) does. Switching the round off opens every queue."""
    for (q, f), grade in CONTROLS.items():
        add_control(engine, "demo", q, f, grade, "settled", actor="boss")
    record_judgment(engine, queue[("q3", "f1")], "ann1", 1)
    set_qualification(engine, "demo", 2, actor="boss")
    assert round_for(engine, "demo", "ann1") is None
    assert round_for(engine, "demo", "boss") is None
    assert round_for(engine, "demo", "ann2") is not None
    record_judgment(engine, queue[("q3", "f2")], "ann1", 1)
    with pytest.raises(Refused):
        record_judgment(engine, queue[("q3", "f2")], "ann2", 1)
    set_qualification(engine, "demo", None, actor="boss")
    assert round_for(engine, "demo", "ann2") is None
    assert record_judgment(engine, queue[("q3", "f2")], "ann2", 1).changed


def test_cli_qualify_open_rounds(engine, round_project, store_url, capsys):
    from annotator.cli import main

    assert (
        main(["control", "qualify", "--project", "demo", "--pairs", "3", "--threshold", "0.7", "--db", store_url]) == 0
    )
    assert capsys.readouterr().out == (
        "New annotators first grade 3 control pairs, seeing each settled grade and "
        "reason; their queue opens at κ ≥ 0.7, or when a lead opens it.\n"
    )
    assert round_for(engine, "demo", "cat").pairs == 3
    assert main(["control", "open", "--project", "demo", "--user", "cat", "--lead", "boss", "--db", store_url]) == 0
    assert capsys.readouterr().out.startswith("cat: Regular queue opened by lead boss on ")
    assert main(["control", "rounds", "--project", "demo", "--db", store_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("cat\t1\topened\t0/3\tRegular queue opened by lead boss on ")
    assert main(["control", "open", "--project", "demo", "--user", "cat", "--lead", "ann1", "--db", store_url]) == 2
    assert "only a lead may do this" in capsys.readouterr().err
    assert main(["control", "qualify", "--project", "demo", "--pairs", "9", "--db", store_url]) == 2
    assert "fewer than the 9 a round needs" in capsys.readouterr().err


# Four more control pairs, one per grade again: with CONTROLS, eight, so a round of 4 can be taken twice.
MORE = {("q3", "f1"): 3, ("q3", "f2"): 0, ("q3", "f3"): 2, ("q3", "f4"): 1}
SETTLED = CONTROLS | MORE


@pytest.fixture
def retake_project(engine, round_project):
    """round_project with eight control pairs (two of each grade); the round is still 4."""
    for (q, f), grade in MORE.items():
        add_control(engine, "demo", q, f, grade, f"lead says {grade}", actor="boss")
    return round_project


def _pairs_of(engine, user: str) -> set[tuple[str, str]]:
    return {(p.query_external_id, p.fragment_external_id) for p in round_pairs(engine, "demo", user)}


def test_a_failed_annotator_retakes_on_fresh_pairs_and_the_first_round_is_kept(engine, retake_project):
    """cat fails (every grade the far end of the scale from the settled one), boss grants a retake: four control
    pairs cat never met, the first round kept with its grades and κ; cat passes it and the queue opens."""
    round_for(engine, "demo", "cat")
    first = _pairs_of(engine, "cat")
    *_, (_, failed) = _grade_round(engine, "cat", {k: 3 - g for k, g in SETTLED.items()})
    assert failed.status == RoundStatus.FAILED
    with pytest.raises(Refused, match="name an active lead"):
        grant_retake(engine, "demo", "cat", actor=OPERATOR)
    with pytest.raises(PermissionError, match="only a lead"):
        grant_retake(engine, "demo", "cat", actor="ann1")
    with pytest.raises(NotFound):
        grant_retake(engine, "demo", "nobody", actor="boss")
    retake = grant_retake(engine, "demo", "cat", actor="boss")
    assert (retake.status, retake.attempt, retake.pairs, retake.graded, retake.granted_by) == (
        RoundStatus.IN_ROUND,
        2,
        4,
        0,
        "boss",
    )
    assert retake.sentence() == "Retake granted by lead boss: 0 of 4 control pairs graded."
    second = _pairs_of(engine, "cat")
    assert len(first) == len(second) == 4 and not first & second and first | second == set(SETTLED)
    with pytest.raises(Conflict, match="still in their qualification round"):
        grant_retake(engine, "demo", "cat", actor="boss")
    regular = next_pair(engine, "demo", "cat")  # the retake's pairs left cat's queue like the first round's
    assert regular is not None and regular.total == 12 - len(SETTLED)
    with pytest.raises(Refused, match="qualification round"):
        record_judgment(engine, regular.pair_id, "cat", 1)
    *_, (_, passed) = _grade_round(engine, "cat", SETTLED)
    assert passed.status == RoundStatus.PASSED and passed.kappa == pytest.approx(1.0)
    assert record_judgment(engine, regular.pair_id, "cat", 1).changed
    with pytest.raises(Conflict, match="the regular queue of 'cat' in project 'demo' is open: close it first"):
        grant_retake(engine, "demo", "cat", actor="boss")
    order = sorted(first)
    expected = cohen_kappa_score(
        [SETTLED[k] for k in order], [3 - SETTLED[k] for k in order], labels=[0, 1, 2, 3], weights="linear"
    )
    history = list_rounds(engine, "demo", history=True)
    assert [(r.attempt, r.status, r.graded, r.granted_by) for r in history] == [
        (1, RoundStatus.FAILED, 4, None),
        (2, RoundStatus.PASSED, 4, "boss"),
    ]
    assert history[0].kappa == pytest.approx(expected)
    assert [(r.attempt, r.status) for r in list_rounds(engine, "demo")] == [(2, RoundStatus.PASSED)]
    # neither round's pairs come back to cat: not by assign, not in the queue
    assert assign(engine, "demo", overlap=3, annotators=["ann1", "ann2", "cat"], actor=OPERATOR).created == 0
    assert progress(engine, "demo", "cat").assigned == 12 - len(SETTLED)


def test_a_retake_needs_a_round_a_finished_one_and_enough_fresh_pairs(engine, round_project):
    with pytest.raises(Conflict, match="'ann2' has taken no qualification round in project 'demo'"):
        grant_retake(engine, "demo", "ann2", actor="boss")
    with pytest.raises(Conflict, match="'boss' is a lead: only a human annotator's queue"):
        grant_retake(engine, "demo", "boss", actor="boss")
    round_for(engine, "demo", "cat")
    _grade_round(engine, "cat", {k: 3 - g for k, g in CONTROLS.items()})
    # all four control pairs were in cat's first round: none left to retake on
    with pytest.raises(
        Conflict,
        match=r"has 0 control pair\(s\) that 'cat' has neither met in a round nor judged, "
        r"fewer than the 4 a retake needs",
    ):
        grant_retake(engine, "demo", "cat", actor="boss")
    set_qualification(engine, "demo", None, actor="boss")
    with pytest.raises(Conflict, match="no qualification round to retake"):
        grant_retake(engine, "demo", "cat", actor="boss")
    assert [r.attempt for r in list_rounds(engine, "demo", history=True)] == [1]  # nothing was started


def test_a_lead_closes_an_open_queue_which_holds_until_reopened(engine, round_project):
    """ann1 graded before the round (queue open, no round): boss closes it with a reason; the store refuses ann1's
    grades, also with the round switched off, until boss reopens it; the close stays on record."""
    reason = "Grades <b>3</b> for **any** mention: re-read §2"
    pair = round_project[("q3", "f1")]
    set_qualification(engine, "demo", None, actor="boss")
    record_judgment(engine, pair, "ann1", 1)
    set_qualification(engine, "demo", 4, actor="boss")
    with pytest.raises(Refused, match="name an active lead"):
        close_queue(engine, "demo", "ann1", reason, actor=OPERATOR)
    with pytest.raises(PermissionError, match="only a lead"):
        close_queue(engine, "demo", "ann1", reason, actor="ann2")
    closed = close_queue(engine, "demo", "ann1", f"  {reason}\n", actor="boss")
    assert (closed.status, closed.attempt, closed.pairs, closed.closed_by, closed.closed_reason) == (
        RoundStatus.CLOSED,
        1,
        0,
        "boss",
        reason,
    )
    assert closed.closed_at is not None and not closed.open
    assert closed.sentence().startswith("Regular queue closed by lead boss on ")
    assert closed.sentence().endswith(f"; it stays closed until a lead reopens it or grants a retake. Reason: {reason}")
    with pytest.raises(Refused, match="a lead closed the regular queue of 'ann1' in this project"):
        record_judgment(engine, pair, "ann1", 2)
    with pytest.raises(Conflict, match="already closed by lead boss"):
        close_queue(engine, "demo", "ann1", actor="boss")
    with pytest.raises(Refused, match="no round is graded until a lead reopens it"):
        grade_round_pair(engine, "demo", "ann1", pair, 1)
    assert round_for(engine, "demo", "ann1") == closed
    set_qualification(engine, "demo", None, actor="boss")  # the round switched off: the close still holds
    assert round_for(engine, "demo", "ann1") == closed
    with pytest.raises(Refused, match="closed"):
        record_judgment(engine, pair, "ann1", 2)
    assert record_judgment(engine, pair, "ann2", 2).changed  # nobody else is affected
    reopened = open_queue(engine, "demo", "ann1", actor="boss")
    assert (reopened.status, reopened.attempt, reopened.opened_by) == (RoundStatus.OPENED, 2, "boss")
    assert record_judgment(engine, pair, "ann1", 2).changed
    history = list_rounds(engine, "demo", history=True)
    assert [(r.username, r.attempt, r.status, r.closed_by, r.closed_reason, r.opened_by) for r in history] == [
        ("ann1", 1, RoundStatus.CLOSED, "boss", reason, None),
        ("ann1", 2, RoundStatus.OPENED, None, None, "boss"),
    ]
    assert history[0].closed_at == closed.closed_at


def test_only_an_open_queue_of_a_human_annotator_closes(engine, round_project):
    round_for(engine, "demo", "cat")
    with pytest.raises(Conflict, match="the regular queue of 'cat' in project 'demo' is not open"):
        close_queue(engine, "demo", "cat", actor="boss")
    with pytest.raises(Conflict, match="'boss' is a lead"):
        close_queue(engine, "demo", "boss", actor="boss")
    with pytest.raises(ValueError, match="at most 10000"):
        close_queue(engine, "demo", "ann1", "x" * 10_001, actor="boss")
    assert [r.username for r in list_rounds(engine, "demo")] == ["cat"]


def test_closed_after_passing_the_annotator_requalifies_with_a_retake(engine, retake_project):
    round_for(engine, "demo", "cat")
    _grade_round(engine, "cat", SETTLED)
    closed = close_queue(engine, "demo", "cat", None, actor="boss")
    assert (closed.status, closed.attempt, closed.graded, closed.kappa) == (RoundStatus.CLOSED, 1, 4, 1.0)
    assert " after 4 of 4 round pairs (κ 1.00); " in closed.sentence()
    assert closed.sentence().endswith("No reason given.")
    before = next_pair(engine, "demo", "cat")
    assert before is not None
    with pytest.raises(Refused, match="a lead closed the regular queue of 'cat'"):
        record_judgment(engine, before.pair_id, "cat", 1)
    retake = grant_retake(engine, "demo", "cat", actor="boss")
    assert (retake.attempt, retake.status) == (2, RoundStatus.IN_ROUND)
    pair = next_pair(engine, "demo", "cat")
    assert pair is not None
    with pytest.raises(Refused, match="qualification round to pass"):
        record_judgment(engine, pair.pair_id, "cat", 1)
    _grade_round(engine, "cat", SETTLED)
    assert record_judgment(engine, pair.pair_id, "cat", 1).changed
    assert [(r.attempt, r.status) for r in list_rounds(engine, "demo", history=True)] == [
        (1, RoundStatus.CLOSED),
        (2, RoundStatus.PASSED),
    ]


def test_rejudging_never_sends_a_pair_to_someone_who_met_it_in_a_round(engine, round_project):
    """A pair cat graded in the round (settled grade seen) cannot go to cat for re-judging; nothing is sent."""
    set_qualification(engine, "demo", None, actor="boss")  # ann1 graded before the round
    add_guideline(engine, "demo", "# v1\n", actor="boss")
    for pair in CONTROLS:
        record_judgment(engine, round_project[pair], "ann1", 1)
    add_guideline(engine, "demo", "# v2\n", actor="boss")
    set_qualification(engine, "demo", 4, actor="boss")
    set_password(engine, "cat", "cat-password-1", actor=OPERATOR)
    round_for(engine, "demo", "cat")
    _grade_round(engine, "cat", CONTROLS)
    seen = round_project[("q1", "f1")]
    with pytest.raises(
        Conflict,
        match=r"^nothing was sent: pair q\d f\d would go to 'cat' \(and 3 more such "
        r"pair\(s\)\), who saw its settled grade in their qualification round",
    ):
        send_for_rejudging(engine, "demo", None, to=["cat"], actor="boss")
    with pytest.raises(Conflict, match=r"pair q1 f1 would go to 'cat', who saw"):
        send_for_rejudging(engine, "demo", [seen], to=["cat"], actor="boss")
    assert not rejudge_queue(engine, "demo")["sent"].any()
    assert send_for_rejudging(engine, "demo", [seen], actor="boss") == 1  # back to ann1, who judged it


def test_cli_close_retake_and_history(engine, retake_project, store_url, capsys):
    from annotator.cli import main

    base = ["--project", "demo", "--db", store_url]
    round_for(engine, "demo", "cat")
    _grade_round(engine, "cat", {k: 3 - g for k, g in SETTLED.items()})
    assert main(["control", "retake", "--user", "cat", "--lead", "boss", *base]) == 0
    assert capsys.readouterr().out == "cat: Retake granted by lead boss: 0 of 4 control pairs graded.\n"
    assert main(["control", "retake", "--user", "cat", "--lead", "ann1", *base]) == 2
    assert "only a lead may do this" in capsys.readouterr().err
    _grade_round(engine, "cat", SETTLED)
    assert main(["control", "close", "--user", "cat", "--lead", "boss", "--reason", "drifted on <b>v2</b>", *base]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cat: Regular queue closed by lead boss on ")
    assert out.endswith("; it stays closed until a lead reopens it or grants a retake. Reason: drifted on <b>v2</b>\n")
    assert main(["control", "close", "--user", "cat", "--lead", "boss", *base]) == 2
    assert "the regular queue of 'cat' in project 'demo' is already closed by lead boss" in capsys.readouterr().err
    assert main(["control", "rounds", *base]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:4] for line in lines[1:]] == [["cat", "2", "closed", "4/4"]]
    assert main(["control", "rounds", "--history", "--format", "json", *base]) == 0
    rounds = json.loads(capsys.readouterr().out)["rounds"]
    assert [
        (r["username"], r["attempt"], r["status"], r["granted_by"], r["closed_by"], r["closed_reason"]) for r in rounds
    ] == [("cat", 1, "failed", None, None, None), ("cat", 2, "closed", "boss", "boss", "drifted on <b>v2</b>")]
    assert main(["control", "open", "--user", "cat", "--lead", "boss", *base]) == 0
    assert capsys.readouterr().out.startswith("cat: Regular queue opened by lead boss on ")
    assert [r.attempt for r in list_rounds(engine, "demo", history=True)] == [1, 2, 3]

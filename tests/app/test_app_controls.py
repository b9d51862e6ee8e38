"""AppTest of the lead's Controls page on the lead-page fixture (seed 000's query): control pairs from a
release at a rate and by hand, listed literally; the qualification round set, each annotator's round listed,
a lead opening a failed annotator's queue (recorded: who), granting a retake, and closing a queue again with
a reason (shown literally) before reopening it; earlier rounds stay listed."""

from __future__ import annotations

import pytest

from annotator.app.text import literal
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.adjudication import adjudicate
from db.qualification import grade_round_pair, list_rounds, round_for, round_pairs
from db.store import frames
from tests.helpers import PROJECT, page_test, release, shown

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once

REASON = "<b>Deadline</b> **stated** as 30 days: see `policy`"


def _form_button(at, label: str):
    return next(b for b in at.button if b.label == label)


def test_lead_makes_control_pairs_from_a_release_and_by_hand(store):
    at = page_test(store, "lead_controls.py")
    assert not at.exception
    assert any(c.value.startswith("0 control pair(s), not served yet") for c in at.caption)
    adjudicate(store, frames.pair_id(store, PROJECT, "q000", "d20"), 2, "answers with context", actor="lea")
    release(store)
    at = page_test(store, "lead_controls.py")
    next(t for t in at.text_input if t.label == "Rate").set_value("1/4")
    _form_button(at, "Make control pairs").click().run()
    assert not at.exception
    # ana and ben graded every pair already: nothing pending to serve a control among
    assert [shown(s.value) for s in at.success] == [
        "1 new control pair(s); one in every 4 pairs; served to: no annotator."
    ]
    next(t for t in at.text_input if t.label == "Query id").set_value("q000")
    next(t for t in at.text_input if t.label == "Fragment id").set_value("d3")
    next(s for s in at.selectbox if s.label == "Settled grade").set_value(3)
    at.text_area[0].set_value(REASON)
    _form_button(at, "Add control pair").click().run()
    assert not at.exception
    assert [shown(s.value) for s in at.success] == [
        "1 new control pair(s); one in every 4 pairs; served to: no annotator."
    ]
    at = page_test(store, "lead_controls.py")
    table = at.dataframe[0].value
    assert table[["Query", "Fragment", "Settled grade", "From", "Reason"]].values.tolist() == [
        ["q000", "d20", 2, "release 1", "answers with context"],
        ["q000", "d3", 3, "set by hand", REASON],
    ]
    next(t for t in at.text_input if t.label == "Query id").set_value("q000")
    next(t for t in at.text_input if t.label == "Fragment id").set_value("nope")
    at.text_area[0].set_value("why")
    _form_button(at, "Add control pair").click().run()
    assert [shown(e.value) for e in at.error] == [
        "Not added: Project 'shop' has no pair ('q000', 'nope'): pool or import it first."
    ]


def test_lead_sets_the_round_and_opens_a_failed_annotators_queue(store):
    from db.control import add_control

    for fragment, grade in (("d3", 3), ("d7", 2), ("d1", 0)):
        add_control(store, PROJECT, "q000", fragment, grade, f"settled {fragment}", actor=OPERATOR)
    at = page_test(store, "lead_controls.py")
    next(n for n in at.number_input if n.label.startswith("Control pairs in the round")).set_value(3)
    _form_button(at, "Save qualification round").click().run()
    assert not at.exception
    assert [shown(s.value) for s in at.success] == [
        "New annotators first grade 3 control pairs, seeing each settled grade and reason; their queue opens at "
        "κ ≥ 0.6 (the project's agreement threshold), or when a lead opens it."
    ]
    create_user(store, "cat", "annotator", password="cat-pass", actor=OPERATOR)
    round_for(store, PROJECT, "cat")
    for pair in round_pairs(store, PROJECT, "cat"):  # every grade the opposite end of the scale: fails
        settled = {"d3": 3, "d7": 2, "d1": 0}[pair.fragment_external_id]
        grade_round_pair(store, PROJECT, "cat", pair.pair_id, 3 - settled)
    at = page_test(store, "lead_controls.py")
    rounds = at.dataframe[-1].value
    assert rounds[["Annotator", "Status", "Graded", "Round pairs"]].values.tolist() == [
        ["cat", "failed: waits for a lead", 3, 3]
    ]
    at.button(key="open-queue-cat").click().run()
    assert not at.exception
    assert shown(at.success[0].value).startswith("cat: Regular queue opened by lead lea on ")
    assert at.dataframe[-1].value["Opened by"].tolist() == ["lea"]
    assert [(r.username, r.opened_by) for r in list_rounds(store, PROJECT)] == [("cat", "lea")]
    assert not any(b.key == "open-queue-cat" for b in at.button)


def test_lead_grants_a_retake_closes_and_reopens_a_queue(store):
    """Six controls, rounds of 3: cat fails, lea grants a retake with the page's button (three other pairs), cat
    passes it; lea closes cat's queue with a reason in markup through the form, then reopens it; every round
    stays listed, the reason literal."""
    from db.control import add_control
    from db.qualification import set_qualification

    settled = {"d3": 3, "d7": 2, "d1": 0, "d12": 2, "d20": 1, "d2": 0}
    for fragment, grade in settled.items():
        add_control(store, PROJECT, "q000", fragment, grade, f"settled {fragment}", actor=OPERATOR)
    set_qualification(store, PROJECT, 3, actor=OPERATOR)
    create_user(store, "cat", "annotator", password="cat-pass", actor=OPERATOR)
    round_for(store, PROJECT, "cat")
    first = round_pairs(store, PROJECT, "cat")
    for pair in first:
        grade_round_pair(store, PROJECT, "cat", pair.pair_id, 3 - settled[pair.fragment_external_id])
    at = page_test(store, "lead_controls.py")
    assert not at.exception
    at.button(key="retake-cat").click().run()
    assert not at.exception
    assert [shown(s.value) for s in at.success] == ["cat: Retake granted by lead lea: 0 of 3 control pairs graded."]
    rounds = at.dataframe[1].value
    assert rounds[["Annotator", "Round", "Status", "Graded", "Retake granted by"]].values.tolist() == [
        ["cat", 2, "in the round", 0, "lea"]
    ]
    assert at.expander[0].label == "Earlier rounds (1)"
    assert at.dataframe[2].value[["Annotator", "Round", "Status", "Graded"]].values.tolist() == [
        ["cat", 1, "failed: waits for a lead", 3]
    ]
    assert not any(b.key == "retake-cat" for b in at.button)  # in the round: no second retake
    retake = round_pairs(store, PROJECT, "cat")
    assert {p.pair_id for p in retake}.isdisjoint({p.pair_id for p in first})
    for pair in retake:
        grade_round_pair(store, PROJECT, "cat", pair.pair_id, settled[pair.fragment_external_id])

    at = page_test(store, "lead_controls.py")
    assert at.selectbox(key="close-queue-who").options == ["ana", "ben", "cat"]
    _form_button(at, "Close the queue").click().run()
    assert [shown(w.value) for w in at.warning] == ["Not closed: choose the annotator whose queue closes."]
    at.selectbox(key="close-queue-who").set_value("cat")
    at.text_area(key="close-queue-reason").set_value(REASON)
    _form_button(at, "Close the queue").click().run()
    assert not at.exception
    (done,) = at.success
    assert shown(done.value).startswith("cat: Regular queue closed by lead lea on ")
    assert shown(done.value).endswith(f"Reason: {REASON}") and literal(REASON) in done.value
    rounds = at.dataframe[1].value
    assert rounds[["Annotator", "Round", "Status", "Closed by", "Why closed"]].values.tolist() == [
        ["cat", 2, "closed by a lead", "lea", REASON]
    ]
    assert at.selectbox(key="close-queue-who").options == ["ana", "ben"]
    assert any(b.key == "retake-cat" for b in at.button)
    at.button(key="open-queue-cat").click().run()
    assert not at.exception
    assert shown(at.success[0].value).startswith("cat: Regular queue opened by lead lea on ")
    assert at.dataframe[1].value[["Annotator", "Round", "Status", "Opened by"]].values.tolist() == [
        ["cat", 3, "opened by a lead", "lea"]
    ]
    assert at.expander[0].label == "Earlier rounds (2)"
    assert [(r.attempt, r.status.value, r.closed_reason) for r in list_rounds(store, PROJECT, history=True)] == [
        (1, "failed", None),
        (2, "closed", REASON),
        (3, "opened", None),
    ]

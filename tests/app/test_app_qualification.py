"""AppTest of the qualification round on the Annotate page: a new annotator grades the round's control pairs,
sees each settled grade and the lead's reason as plain text, and their regular queue opens after it (or waits
for a lead, who opens it or grants a retake); a queue a lead closed again says who, when and why."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from annotator.app.text import literal
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.assignment import assign
from db.control import add_control
from db.qualification import (
    close_queue,
    grade_round_pair,
    grant_retake,
    list_rounds,
    open_queue,
    round_for,
    round_pairs,
    set_qualification,
)
from db.store.schema import init_db
from tests.helpers import app_as, build, password, shown

# Settled grades and reasons (markup in them must show as typed) of four of the small project's pairs.
CONTROLS = {
    ("qa", "f1"): (3, "**States** the 30 days <b>exactly</b>"),
    ("qa", "f2"): (0, "Shipping, not returns"),
    ("qb", "f4"): (2, "Warranty length, no laptops named"),
    ("qb", "f3"): (1, "Payment: mentions nothing"),
}


@pytest.fixture
def round_db(tmp_path, monkeypatch) -> str:
    """The small project with the four controls, a round of 4, and cat (new) assigned every pair."""
    url = build(tmp_path, monkeypatch)
    engine = init_db(url)
    for (q, f), (grade, why) in CONTROLS.items():
        add_control(engine, "t", q, f, grade, why, actor="lea")
    create_user(engine, "cat", "annotator", password("cat"), actor=OPERATOR)
    assign(engine, "t", overlap=3, annotators=["ana", "ben", "cat"], actor=OPERATOR)
    set_qualification(engine, "t", 4, actor="lea")
    return url


def _key(at) -> tuple[str, str]:
    """(query, fragment) of the round pair on screen."""
    caption = next(c.value for c in at.caption if "qualification pair" in c.value)
    query = caption.split()[1]
    fragment = next(c.value for c in at.caption if "fragment " in c.value).rsplit("fragment ", 1)[1]
    return query, fragment


def _round(at, grade_of) -> list[tuple[tuple[str, str], int]]:
    """Grade the round through the page; checks the feedback of each pair; returns (pair, grade) given."""
    given = []
    for n in range(4):
        assert not at.exception
        assert f"Qualification: {n} / 4 graded" in [p.proto.text for p in at.get("progress")]
        assert not any("Settled grade" in t.value for t in at.text)  # nothing of the settled grade before
        key = _key(at)
        grade = grade_of(key)
        at.button(key=f"round_grade_{grade}").click().run()
        settled, why = CONTROLS[key]
        shown = [t.value for t in at.text]
        assert shown[0].startswith(f"Your grade: {grade} · ")
        assert shown[1].startswith(f"Settled grade: {settled} · ")
        assert shown[2:] == ["The lead's reason:", why]  # literally, markup and all
        given.append((key, grade))
        if n < 3:
            at.button(key="round_next").click().run()
    return given


def test_new_annotator_passes_the_round_and_the_queue_opens(round_db):
    at = app_as("cat", round_db)
    assert not at.exception
    assert [s.value for s in at.subheader] == ["Qualification round"]
    assert not any(b.key and b.key.startswith("grade_") for b in at.button)  # no regular grading yet
    given = _round(at, lambda key: CONTROLS[key][0])
    assert any(shown(s.value).startswith("Passed the qualification round: κ 1.00") for s in at.success)
    assert at.dataframe[0].value["Lead's reason"].tolist() == [CONTROLS[k][1] for k, _ in given]
    at.button(key="round_done").click().run()
    assert not at.exception
    assert not at.subheader and any(b.key == "grade_2" for b in at.button)  # the regular queue
    assert any("Overall: 0 / 2 judged" in p.proto.text for p in at.get("progress"))  # 6 pairs, 4 in the round


def test_failed_round_says_so_and_a_lead_opens_the_queue(round_db):
    """Grades one off the settled ones, upwards (3 stays 3): κ from scikit-learn, below 0.6."""
    at = app_as("cat", round_db)
    given = _round(at, lambda key: min(3, CONTROLS[key][0] + 2))
    kappa = cohen_kappa_score(
        [CONTROLS[k][0] for k, _ in given], [g for _, g in given], labels=[0, 1, 2, 3], weights="linear"
    )
    assert kappa < 0.6
    (warning,) = at.warning
    assert shown(warning.value).startswith(
        f"Did not pass the qualification round: κ {kappa:.2f} against the settled "
        "grades, below 0.6. The regular queue stays closed until a lead opens it or "
        "grants a retake."
    )
    assert app_as("cat", round_db).subheader[0].value == "Qualification round"  # a new session: still closed
    engine = init_db(round_db)
    open_queue(engine, "t", "cat", actor="lea")
    (state,) = list_rounds(engine, "t")
    assert state.opened_by == "lea"
    at = app_as("cat", round_db)
    assert not at.exception and not at.subheader and any(b.key == "grade_2" for b in at.button)


def test_a_retake_is_a_new_round_and_a_closed_queue_says_who_and_why(round_db):
    """Rounds of 2 on the four controls: cat fails the first (far end of the scale), lea grants a retake on the
    other two, cat passes it on the page; lea closes the queue with a reason in markup, which cat reads as typed,
    then reopens it."""
    engine = init_db(round_db)
    set_qualification(engine, "t", 2, actor="lea")
    round_for(engine, "t", "cat")
    first = round_pairs(engine, "t", "cat")
    for pair in first:
        grade_round_pair(
            engine, "t", "cat", pair.pair_id, 3 - CONTROLS[(pair.query_external_id, pair.fragment_external_id)][0]
        )
    grant_retake(engine, "t", "cat", actor="lea")
    at = app_as("cat", round_db)
    assert not at.exception and [s.value for s in at.subheader] == ["Qualification round"]
    caption = next(c.value for c in at.caption if "Before your regular queue opens" in c.value)
    assert shown(caption).startswith(
        "Retake granted by lead lea. Before your regular queue opens, grade these 2 pairs."
    )
    assert "Qualification: 0 / 2 graded" in [p.proto.text for p in at.get("progress")]
    seen = set()
    for n in range(2):
        key = _key(at)
        seen.add(key)
        at.button(key=f"round_grade_{CONTROLS[key][0]}").click().run()
        if n == 0:
            at.button(key="round_next").click().run()
    assert seen.isdisjoint({(p.query_external_id, p.fragment_external_id) for p in first})
    assert any(shown(s.value).startswith("Passed the qualification round: κ 1.00") for s in at.success)
    reason = "Grades **3** for <b>any</b> mention: see [rule 2](http://x.example)"
    close_queue(engine, "t", "cat", reason, actor="lea")
    at = app_as("cat", round_db)
    assert not at.exception and [s.value for s in at.subheader] == ["Regular queue closed"]
    (warning,) = at.warning
    assert literal(reason) in warning.value  # escaped: no bold, tag or link comes from the reason
    assert shown(warning.value).startswith("Regular queue closed by lead lea on ")
    assert shown(warning.value).endswith(
        f"; it stays closed until a lead reopens it or grants a retake. Reason: {reason}"
    )
    assert not any(b.key and b.key.startswith(("grade_", "round_grade_")) for b in at.button)
    open_queue(engine, "t", "cat", actor="lea")
    at = app_as("cat", round_db)
    assert not at.exception and not at.subheader and any(b.key == "grade_2" for b in at.button)

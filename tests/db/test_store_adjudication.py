"""Adjudication: lead-only, on the scale, with a reason; the latest decision is in force; pair_detail shows all."""

from __future__ import annotations

import json

import pytest

from db.adjudication import adjudicate, pair_detail
from db.grading import record_judgment, undo_judgment
from db.store.frames import adjudications_frame, qrels_frame


def test_lead_adjudicates_and_latest_is_in_force(engine, queue):
    pid = queue[("q1", "f1")]
    record_judgment(engine, pid, "ann1", 0, note="off topic")
    record_judgment(engine, pid, "ann2", 3)
    with pytest.raises(PermissionError, match="only a lead may do this"):
        adjudicate(engine, pid, 2, "mine", actor="ann1")
    with pytest.raises(ValueError, match="needs a reason"):
        adjudicate(engine, pid, 2, " ", actor="boss")
    with pytest.raises(ValueError, match="outside the scale 0-3"):
        adjudicate(engine, pid, 5, "too high", actor="boss")
    first = adjudicate(engine, pid, 1, "partial answer", actor="boss")
    adjudicate(engine, pid, 2, "re-read: answers the question", actor="boss")
    assert (first.grade, first.lead) == (1, "boss")
    assert adjudications_frame(engine, "demo").values.tolist() == [
        ["q1", "f1", 2, "re-read: answers the question", "boss"]
    ]
    # DESIGN.md: the adjudicated grade wins over the rule (median of {0, 3} would be 0, the lower median).
    assert qrels_frame(engine, "demo").values.tolist() == [["q1", "f1", 2]]


def test_pair_detail_shows_every_grade_and_history(engine, queue):
    pid = queue[("q2", "f2")]
    record_judgment(engine, pid, "ann1", 1, note="weak")
    record_judgment(engine, pid, "ann1", 2, note="weak")
    record_judgment(engine, pid, "ann2", None, cant_judge_reason="needs domain knowledge")
    undo_judgment(engine, pid, "ann2")
    adjudicate(engine, pid, 2, "agree with ann1", actor="boss")
    with pytest.raises(PermissionError):
        pair_detail(engine, "demo", pid, username="ann1")
    detail = pair_detail(engine, "demo", pid, username="boss")
    assert (detail["query"]["id"], detail["fragment"]["id"], detail["fragment"]["title"]) == ("q2", "f2", "T2")
    assert [(j["annotator"], j["grade"], j["note"], j["revision"]) for j in detail["judgments"]] == [
        ("ann1", 2, "weak", 2)
    ]
    assert [(h["action"], h["annotator"], h["old_grade"], h["new_grade"]) for h in detail["history"]] == [
        ("create", "ann1", None, 1),
        ("update", "ann1", 1, 2),
        ("create", "ann2", None, None),
        ("undo", "ann2", None, None),
    ]
    assert detail["adjudication"] == {"grade": 2, "reason": "agree with ann1", "by": "boss"}
    with pytest.raises(LookupError, match="no pair"):
        pair_detail(engine, "demo", 10_000)


def test_the_cli_operator_must_name_the_lead(engine, queue):
    """Refused on purpose: a decision records its lead (a release line's `by`), and the error says what to pass."""
    from db.accounts.permissions import OPERATOR

    with pytest.raises(
        PermissionError,
        match=r"the CLI operator cannot adjudicate anonymously: name an active lead "
        r"\(actor=USERNAME; from the CLI, --lead LEAD\)",
    ):
        adjudicate(engine, queue[("q1", "f1")], 2, "clear answer", actor=OPERATOR)
    assert adjudications_frame(engine, "demo").empty


def test_every_disputed_pair_among_people_is_listed_widest_first(engine, project, queue):
    """Disputes are pairs whose people differ (a model judge's grade never makes one), widest spread first; the
    boundary filter b keeps pairs graded ≤ b by someone and > b by someone else; decided ones are marked."""
    from db.adjudication import disputes, filter_disputes, next_open
    from db.model_judges import model_annotator
    from db.store.engine import session_scope
    from db.store.models import Assignment

    judge_id, _ = model_annotator(engine, "judge-m", "m-1", actor="boss")
    grades = {
        ("q1", "f1"): (0, 3, None),
        ("q1", "f2"): (1, 2, None),
        ("q2", "f1"): (2, 2, 0),
        ("q2", "f3"): (1, None, None),
        ("q3", "f4"): (3, 1, 3),
        ("q3", "f2"): (0, 0, 3),
    }
    with session_scope(engine, write=True) as session:
        for position, key in enumerate(grades, 100):
            session.add(Assignment(project_id=project.id, pair_id=queue[key], user_id=judge_id, position=position))
    for key, (one, two, model) in grades.items():
        for who, grade in (("ann1", one), ("ann2", two), ("judge-m", model)):
            if grade is not None:
                record_judgment(engine, queue[key], who, grade)
    found = disputes(engine, "demo")
    # spread 3 (q1 f1), then 2 (q3 f4), then 1 (q1 f2); q2 f1 and q3 f2 differ only by the model, q2 f3 has one grade
    assert found[["query_id", "fragment_id", "spread", "grades"]].values.tolist() == [
        ["q1", "f1", 3, "ann1: 0, ann2: 3"],
        ["q3", "f4", 2, "ann1: 3, ann2: 1"],
        ["q1", "f2", 1, "ann1: 1, ann2: 2"],
    ]
    assert filter_disputes(found, boundary=0)["fragment_id"].tolist() == ["f1"]  # only q1 f1 has a 0 and a ≥ 1
    assert filter_disputes(found, boundary=1)[["query_id", "fragment_id"]].values.tolist() == [
        ["q1", "f1"],
        ["q3", "f4"],
        ["q1", "f2"],
    ]
    assert filter_disputes(found, query="q3", boundary=2)["fragment_id"].tolist() == ["f4"]
    adjudicate(engine, queue[("q3", "f4")], 3, "answers fully", actor="boss")
    found = disputes(engine, "demo")
    assert found["adjudicated"].tolist() == [False, True, False]
    assert next_open(found, queue[("q1", "f1")]) == queue[("q1", "f2")]  # skips the decided q3 f4
    assert next_open(found, queue[("q1", "f2")]) == queue[("q1", "f1")]  # wraps to the start


def test_pairs_sent_back_are_rejudged_under_the_guideline_in_force(engine, queue):
    """ann1 and ann2 grade two pairs under v1; v2 comes; the lead sends the queue back. Each annotator's next
    pair is then their v1 pair marked 're-judge under 2'; the new grade (even the same grade) is stamped v2 and
    replaces the current one, history keeps both, and the pair leaves the queue. Sending to someone else opens
    the pair in that person's queue; accounts that cannot log in are refused."""
    from db.accounts.users import create_user
    from db.adjudication import rejudge_queue, send_for_rejudging
    from db.grading import annotator_stats, get_pair, next_pair, progress
    from db.projects import add_guideline
    from db.store.frames import judgments_frame

    add_guideline(engine, "demo", "# v1\n", actor="boss")
    first, second = queue[("q1", "f1")], queue[("q1", "f2")]
    for who, grades in (("ann1", (1, 2)), ("ann2", (3, 0))):
        for pid, grade in zip((first, second), grades, strict=True):
            record_judgment(engine, pid, who, grade)
    add_guideline(engine, "demo", "# v2\n", actor="boss")
    assert next_pair(engine, "demo", "ann1").pair_id == queue[("q1", "f3")]  # the v1 pairs count as done
    listed = rejudge_queue(engine, "demo")
    assert len(listed) == 4 and not listed["sent"].any() and set(listed["guideline"]) == {1}
    with pytest.raises(PermissionError):
        send_for_rejudging(engine, "demo", actor="ann1")
    assert send_for_rejudging(engine, "demo", [first], actor="boss") == 2  # ann1's and ann2's judgment of it
    assert rejudge_queue(engine, "demo").set_index(["pair_id", "annotator"])["sent"].to_dict() == {
        (first, "ann1"): True,
        (first, "ann2"): True,
        (second, "ann1"): False,
        (second, "ann2"): False,
    }
    view = next_pair(engine, "demo", "ann1")
    # blind: the old grade is neither shown nor preselected, and the pair counts as pending until re-graded
    assert (view.pair_id, view.rejudge_version, view.grade, view.note, view.cant_judge_reason) == (
        first,
        2,
        None,
        None,
        None,
    )
    assert get_pair(engine, "demo", "ann1", first).grade is None  # also when opened with Back
    assert (progress(engine, "demo", "ann1").done, progress(engine, "demo", "ann2").done) == (1, 1)
    assert annotator_stats(engine, "demo").set_index("username")["done"].to_dict() == {"ann1": 1, "ann2": 1}
    record_judgment(engine, first, "ann1", 1)  # the same grade, now under v2
    assert progress(engine, "demo", "ann1").done == 2
    assert get_pair(engine, "demo", "ann1", first).grade == 1  # graded again: the pair shows its grade
    frame = judgments_frame(engine, "demo").set_index(["fragment_id", "annotator"])
    assert frame.loc[("f1", "ann1"), "guideline"] == "2" and frame.loc[("f1", "ann2"), "guideline"] == "1"
    assert [
        (h["annotator"], h["old_grade"], h["new_grade"])
        for h in pair_detail(engine, "demo", first)["history"]
        if h["annotator"] == "ann1"
    ] == [("ann1", None, 1), ("ann1", 1, 1)]
    assert next_pair(engine, "demo", "ann1").pair_id == queue[("q1", "f3")]  # back to the open pairs
    assert next_pair(engine, "demo", "ann2").rejudge_version == 2
    left = rejudge_queue(engine, "demo")
    assert (first, "ann1") not in set(zip(left["pair_id"], left["annotator"], strict=True))
    with pytest.raises(ValueError, match=r"cannot send pairs to 'ann2': re-judging needs active people"):
        send_for_rejudging(engine, "demo", [second], to=["ann2"], actor="boss")
    create_user(engine, "cy", "annotator", password="cy-password-1", actor="boss")
    assert send_for_rejudging(engine, "demo", [second], to=["cy"], actor="boss") == 1
    view = next_pair(engine, "demo", "cy")
    assert (view.pair_id, view.rejudge_version, view.grade) == (second, 2, None)


def test_qrelkit_disputes_lists_the_queue_a_shell_loop_adjudicates(engine, store_url, queue, capsys):
    """`qrelkit disputes` prints the Adjudicate page's queue as tab-separated lines, widest spread first: q1 f1
    (0 vs 3, spread 3) before q1 f2 (1 vs 2); --open drops what a lead decided; each line's ids feed
    `qrelkit adjudicate`, after which the pair reads decided."""
    from annotator.cli import main

    record_judgment(engine, queue[("q1", "f1")], "ann1", 0)
    record_judgment(engine, queue[("q1", "f1")], "ann2", 3)
    record_judgment(engine, queue[("q1", "f2")], "ann1", 1)
    record_judgment(engine, queue[("q1", "f2")], "ann2", 2)
    record_judgment(engine, queue[("q2", "f1")], "ann1", 2)
    record_judgment(engine, queue[("q2", "f1")], "ann2", 2)
    assert main(["disputes", "--project", "demo", "--db", store_url]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "query_id\tfragment_id\tspread\tgrades\tdecided",
        "q1\tf1\t3\tann1: 0, ann2: 3\tno",
        "q1\tf2\t1\tann1: 1, ann2: 2\tno",
    ]
    assert "2 disputed pair(s) among people, 0 decided, 2 open" in err
    query, fragment = out.splitlines()[1].split("\t")[:2]
    assert (
        main(
            [
                "adjudicate",
                "--project",
                "demo",
                "--db",
                store_url,
                "--query",
                query,
                "--fragment",
                fragment,
                "--grade",
                "2",
                "--reason",
                "answers half",
                "--user",
                "boss",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["disputes", "--project", "demo", "--db", store_url, "--open"]) == 0
    assert "2 disputed pair(s) among people, 1 decided, 1 open" in capsys.readouterr().err
    assert main(["disputes", "--project", "demo", "--db", store_url, "--open", "--format", "json"]) == 0
    assert [
        (r["query_id"], r["fragment_id"], r["grades"], r["adjudicated"]) for r in json.loads(capsys.readouterr().out)
    ] == [("q1", "f2", {"ann1": 1, "ann2": 2}, False)]


def test_disputes_tied_on_spread_and_variance_go_by_query_then_fragment():
    """Hand derivation: grades (2, 2, 3) and (1, 2, 1) both have spread 1 and sample variance exactly 1/3
    ((3·17 − 7²)/(3·2) = 2/6 and (3·6 − 4²)/6 = 2/6), so the rule's next key, the query, orders them: q0 before
    q1. The earlier pandas groupby variance differed in the last bit (0.33333333333333337 against
    0.3333333333333333) and put q1 first."""
    import pandas as pd

    from db.adjudication import DISPUTE_COLUMNS, disputes_of, find_disputes

    rows = [
        (5, "q0", "f1", "ana", 2),
        (5, "q0", "f1", "ben", 2),
        (5, "q0", "f1", "cy", 3),
        (6, "q1", "f1", "ana", 1),
        (6, "q1", "f1", "ben", 2),
        (6, "q1", "f1", "cy", 1),
        (7, "q2", "f1", "ana", 0),  # spread 2: first
        (7, "q2", "f1", "ben", 2),
    ]
    found = find_disputes(rows, {("q1", "f1")})
    assert [(d.query_id, d.spread, d.low, d.high, d.grades, d.adjudicated) for d in found] == [
        ("q2", 2, 0, 2, "ana: 0, ben: 2", False),
        ("q0", 1, 2, 3, "ana: 2, ben: 2, cy: 3", False),
        ("q1", 1, 1, 2, "ana: 1, ben: 2, cy: 1", True),
    ]
    frame = pd.DataFrame(
        [(q, f, a, g, p, "human") for p, q, f, a, g in rows],
        columns=["query_id", "fragment_id", "annotator", "grade", "pair_id", "annotator_kind"],
    )
    listed = disputes_of(frame, {("q1", "f1")})
    assert list(listed.columns) == DISPUTE_COLUMNS
    assert listed["pair_id"].tolist() == [7, 5, 6]
    assert listed["by_annotator"].tolist()[1] == {"ana": 2, "ben": 2, "cy": 3}


def test_dispute_list_reads_the_same_disputes_as_the_judgments_frame(engine, project, queue):
    """`qrelkit disputes` reads people's grades with one query (no frame); it lists what the Adjudicate page's
    disputes_of finds in the judgments frame: a reference's, a model judge's and a can't-judge grade never make
    a dispute, and the query and boundary filters are the page's."""
    from sqlalchemy import select, update
    from sqlmodel import col

    from db.adjudication import dispute_list, disputes_of, filter_disputes
    from db.model_judges import model_annotator
    from db.store.engine import session_scope
    from db.store.frames import judgments_frame
    from db.store.models import Assignment, User, table_of

    judge_id, _ = model_annotator(engine, "judge-m", "m-1", actor="boss")
    with session_scope(engine, write=True) as session:
        boss_id = session.execute(select(col(User.id)).where(col(User.username) == "boss")).scalar_one()
        for user_id in (judge_id, boss_id):
            for position, key in enumerate(queue, 100):
                session.add(Assignment(project_id=project.id, pair_id=queue[key], user_id=user_id, position=position))
    grades = {
        ("q1", "f1"): {"ann1": 0, "ann2": 3, "boss": 1},
        ("q1", "f2"): {"ann1": 2, "ann2": 2, "judge-m": 0},  # the model alone differs: no dispute
        ("q2", "f3"): {"ann1": 1, "ann2": 1, "boss": 3},  # boss becomes a reference below: no dispute
        ("q3", "f4"): {"ann1": 2, "ann2": None},  # can't judge: one grade, no dispute
        ("q3", "f1"): {"ann1": 3, "ann2": 2},
    }
    for key, by in grades.items():
        for who, grade in by.items():
            reason = "needs domain knowledge" if grade is None else None
            record_judgment(engine, queue[key], who, grade, cant_judge_reason=reason)
    adjudicate(engine, queue[("q3", "f1")], 3, "complete answer", actor="boss")
    with engine.begin() as conn:  # boss's grades become a reference's (as an imported qrels' annotator)
        conn.execute(update(table_of(User)).where(table_of(User).c.username == "boss").values(kind="reference"))
    listed = dispute_list(engine, "demo")
    assert [(d.query_id, d.fragment_id, d.spread, d.grades, d.adjudicated) for d in listed] == [
        ("q1", "f1", 3, "ann1: 0, ann2: 3", False),
        ("q3", "f1", 1, "ann1: 3, ann2: 2", True),
    ]
    frame = disputes_of(judgments_frame(engine, "demo"), {("q3", "f1")})
    assert frame.values.tolist() == [[getattr(d, c) for c in frame.columns] for d in listed]
    for query, boundary in ((None, 2), ("q3", None), ("q1", 0), ("q2", None)):
        assert [d.pair_id for d in dispute_list(engine, "demo", query, boundary)] == filter_disputes(
            frame, query, boundary
        )["pair_id"].tolist()

"""`qrelkit rejudge`: the re-judge queue listed from the shell, and pairs of it sent back (all, one query, one pair,
or a file of pairs; to their annotators or to named people) as a lead checked in the store."""

from __future__ import annotations

import json

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.adjudication import rejudge_queue
from db.grading import next_pair, record_judgment
from db.projects import add_guideline

# Graded under v1 by both annotators, then v2 is published: 3 pairs × 2 annotators = 6 judgments to re-judge.
GRADED = {("q1", "f1"): (1, 2), ("q1", "f2"): (3, 0), ("q2", "f1"): (2, 2)}


def _setup(engine, queue) -> None:
    add_guideline(engine, "demo", "# v1\n", actor="boss")
    for pair, grades in GRADED.items():
        for who, grade in zip(("ann1", "ann2"), grades, strict=True):
            record_judgment(engine, queue[pair], who, grade)
    add_guideline(engine, "demo", "# v2\n", actor="boss")


def _sent(engine) -> set[tuple[str, str, str]]:
    queue = rejudge_queue(engine, "demo")
    return {
        (q, f, a)
        for q, f, a, s in zip(queue["query_id"], queue["fragment_id"], queue["annotator"], queue["sent"], strict=True)
        if s
    }


def test_list_shows_the_queue(engine, store_url, queue, capsys):
    assert main(["rejudge", "--project", "demo", "--list", "--db", store_url]) == 0
    assert "every judgment in project demo was made under the current guideline" in capsys.readouterr().out
    _setup(engine, queue)
    assert main(["rejudge", "--project", "demo", "--list", "--format", "json", "--db", store_url]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [
        (r["query_id"], r["fragment_id"], r["annotator"], r["grade"], r["guideline"], r["current"], r["sent"])
        for r in listed
    ] == [
        (q, f, who, grade, 1, 2, False)
        for (q, f), grades in sorted(GRADED.items())
        for who, grade in zip(("ann1", "ann2"), grades, strict=True)
    ]
    assert main(["rejudge", "--project", "demo", "--list", "--query", "q2", "--db", store_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["query", "id", "fragment", "id", "annotator", "grade", "guideline", "current", "sent"]
    assert [line.split() for line in lines[1:]] == [
        ["q2", "f1", "ann1", "2", "1", "2", "no"],
        ["q2", "f1", "ann2", "2", "1", "2", "no"],
    ]


def test_send_one_pair_a_query_or_all_as_a_lead(engine, store_url, queue, capsys):
    _setup(engine, queue)
    base = ["rejudge", "--project", "demo", "--db", store_url]
    assert main([*base, "--query", "q1", "--fragment", "f1"]) == 2
    assert "sending pairs back for re-judging needs --lead LEAD" in capsys.readouterr().err
    assert main([*base, "--query", "q1", "--fragment", "f1", "--user", "ann1"]) == 2  # not a lead
    assert "qrelkit: error:" in capsys.readouterr().err and not _sent(engine)

    assert main([*base, "--query", "q1", "--fragment", "f1", "--user", "boss", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["pairs"], report["opened"], report["guideline"], report["by"]) == (1, 2, 2, "boss")
    assert _sent(engine) == {("q1", "f1", "ann1"), ("q1", "f1", "ann2")}
    view = next_pair(engine, "demo", "ann2")
    assert (view.pair_id, view.rejudge_version) == (queue[("q1", "f1")], 2)

    assert main([*base, "--query", "q9", "--user", "boss"]) == 2
    assert (
        "qrelkit: error: --query q9: no judgment of it in project 'demo' was made under an older guideline version"
    ) in capsys.readouterr().err

    assert main([*base, "--query", "q1", "--user", "boss"]) == 0  # q1's two pairs, each to its two annotators
    out = capsys.readouterr().out
    assert "pairs: 2" in out and "opened: 4" in out and "to: the annotators who judged them" in out
    assert main([*base, "--user", "boss"]) == 0  # the whole queue: q2/f1 as well
    assert len(_sent(engine)) == 6


def test_send_a_file_of_pairs_to_named_people(engine, store_url, queue, tmp_path, capsys):
    _setup(engine, queue)
    create_user(engine, "cy", "annotator", password="cy-password-1", actor=OPERATOR)
    base = ["rejudge", "--project", "demo", "--user", "boss", "--db", store_url, "--to", "cy", "--pairs"]
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 f2\nq2 f1 extra\nq3\n", encoding="utf-8")
    assert main([*base, str(bad)]) == 2
    assert (
        f"qrelkit: error: {bad}:2: expected QUERY_ID FRAGMENT_ID, got 3 field(s) (and 1 more problem(s))"
        in capsys.readouterr().err
    )
    outside = tmp_path / "outside.txt"
    outside.write_text("q1 f2\n\nq3 f4\n", encoding="utf-8")
    assert main([*base, str(outside)]) == 2
    assert (
        f"qrelkit: error: {outside}:3: pair q3 f4 is not in the re-judge queue (no judgment of it was made "
        f"under an older guideline version)"
    ) in capsys.readouterr().err
    assert not _sent(engine)  # nothing sent from a refused file

    good = tmp_path / "pairs.tsv"
    good.write_text("# pairs the lead disputes\nq1\tf2\nq2 f1\n", encoding="utf-8")
    assert main([*base, str(good), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["pairs"], report["opened"], report["to"]) == (2, 2, ["cy"])  # each pair once, to cy
    first = next_pair(engine, "demo", "cy")
    assert first.rejudge_version == 2 and first.pair_id in {queue[("q1", "f2")], queue[("q2", "f1")]}
    assert main([*base, str(good)]) == 0 and "opened: 2" in capsys.readouterr().out  # again: reopened, not added
    assert (
        main(
            ["rejudge", "--project", "demo", "--user", "boss", "--db", store_url, "--to", "ann1", "--pairs", str(good)]
        )
        == 2
    )  # ann1 cannot log in
    assert "cannot send pairs to 'ann1': re-judging needs active people who can log in" in capsys.readouterr().err


def test_a_pair_never_goes_to_someone_who_met_it_in_a_qualification_round(engine, store_url, queue, capsys):
    """cy saw q1/f2's settled grade in their round: sending it to cy is refused in one sentence and nothing is
    sent; q2/f1, not in the round, goes."""
    from db.control import add_control
    from db.qualification import grade_round_pair, round_for, round_pairs, set_qualification

    _setup(engine, queue)
    for (query, fragment), grade in ((("q1", "f2"), 0), (("q3", "f1"), 3)):
        add_control(engine, "demo", query, fragment, grade, "settled", actor="boss")
    set_qualification(engine, "demo", 2, actor="boss")
    create_user(engine, "cy", "annotator", password="cy-password-1", actor=OPERATOR)
    round_for(engine, "demo", "cy")
    for pair in round_pairs(engine, "demo", "cy"):
        grade_round_pair(engine, "demo", "cy", pair.pair_id, 1)
    base = ["rejudge", "--project", "demo", "--user", "boss", "--db", store_url, "--to", "cy", "--format", "json"]
    assert main([*base, "--query", "q1"]) == 2
    assert capsys.readouterr().err == (
        "qrelkit: error: nothing was sent: pair q1 f2 would go to 'cy', who saw its settled grade in their "
        "qualification round, so their grade would not be blind; send it to someone else or leave it out\n"
    )
    assert next_pair(engine, "demo", "cy") is None  # nothing reached cy's queue
    assert main([*base, "--query", "q2"]) == 0
    assert json.loads(capsys.readouterr().out)["opened"] == 1
    view = next_pair(engine, "demo", "cy")
    assert (view.query_external_id, view.fragment_external_id, view.rejudge_version) == ("q2", "f1", 2)

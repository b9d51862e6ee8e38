"""Bulk work from a script: a file of a lead's decisions (all or nothing, path:line, history kept, through the
one decision writer) and the pairs and assignments exported as files a script reads."""

from __future__ import annotations

import csv
import json

import pytest
from sqlalchemy import func, select

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.adjudication import adjudicate, import_adjudications
from db.assignment import pairs_from_file
from db.exports import export_assignments, export_pairs
from db.grading import record_judgment
from db.store.engine import session_scope
from db.store.frames import adjudications_frame
from db.store.models import Adjudication
from eval_core.errors import InputError


def _count(engine) -> int:
    with session_scope(engine) as s:
        return s.execute(select(func.count()).select_from(Adjudication)).scalar_one()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("decided.qrels", "q1 0 f1 2 both readings hold\nq2 0 f3 0 off topic\n"),
        (
            "decided.jsonl",
            '{"query_id": "q1", "fragment_id": "f1", "grade": 2, "reason": "both readings hold"}\n'
            '{"query_id": "q2", "fragment_id": "f3", "grade": 0, "reason": "off topic"}\n',
        ),
        ("decided.csv", "query_id,fragment_id,grade,reason\nq1,f1,2,both readings hold\nq2,f3,0,off topic\n"),
    ],
)
def test_a_file_of_decisions_is_recorded_as_the_named_leads(engine, queue, tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    adjudicate(engine, queue[("q1", "f1")], 3, "first look", actor="boss")
    report = import_adjudications(engine, "demo", path, actor="boss")
    assert (report.decisions, report.recorded, report.unchanged) == (2, 2, 0)
    frame = adjudications_frame(engine, "demo")
    assert frame.values.tolist() == [
        ["q1", "f1", 2, "both readings hold", "boss"],
        ["q2", "f3", 0, "off topic", "boss"],
    ]
    assert _count(engine) == 3  # the first decision on q1/f1 stays in the history
    again = import_adjudications(engine, "demo", path, actor="boss")
    assert (again.recorded, again.unchanged) == (0, 2) and _count(engine) == 3


def test_a_bad_line_refuses_the_whole_file(engine, queue, tmp_path):
    path = tmp_path / "decided.qrels"
    path.write_text("q1 0 f1 2 fine\nq2 0 f2 7 off the scale\n")
    with pytest.raises(InputError, match=rf"{path}:2: grade 7 is outside the scale 0-3"):
        import_adjudications(engine, "demo", path, actor="boss")
    path.write_text("q1 0 f1 2 fine\nq1 0 f9 1 no such pair\nq3 0 f4 1\n")
    with pytest.raises(InputError) as err:
        import_adjudications(engine, "demo", path, actor="boss")
    assert str(err.value) == f"{path}:2: no pair ('q1', 'f9') in project 'demo' (and 1 more problem(s))"
    assert f"{path}:3: an adjudication needs a reason: give one on the line or with --reason" in err.value.more
    assert _count(engine) == 0


def test_a_default_reason_and_the_lead_are_checked(engine, queue, tmp_path):
    path = tmp_path / "decided.qrels"
    path.write_text("q3 0 f4 1\n")
    with pytest.raises(PermissionError, match="cannot adjudicate anonymously"):
        import_adjudications(engine, "demo", path, actor=None)  # type: ignore[arg-type]
    with pytest.raises(PermissionError, match="only a lead"):
        import_adjudications(engine, "demo", path, actor="ann1")
    assert import_adjudications(engine, "demo", path, actor="boss", reason="bulk pass").recorded == 1
    other = tmp_path / "by.jsonl"
    other.write_text('{"query_id": "q1", "fragment_id": "f2", "grade": 1, "reason": "r", "by": "someone"}\n')
    with pytest.raises(InputError, match=rf"{other}:1: decided by 'someone', but the import records 'boss'"):
        import_adjudications(engine, "demo", other, actor="boss")


def test_pairs_and_assignments_export_what_a_script_needs(engine, queue, tmp_path):
    record_judgment(engine, queue[("q1", "f2")], "ann1", 2)
    out = tmp_path / "pairs.jsonl"
    assert export_pairs(engine, "demo", "jsonl", out) == 12
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    first = next(r for r in rows if (r["query_id"], r["fragment_id"]) == ("q1", "f2"))
    assert first["query"] == "query 1" and first["text"] == "fragment 2" and first["title"] == "T2"
    assert first["graded_by"] == ["ann1"] and first["assigned_to"] == ["ann1", "ann2"]
    assert sorted(pairs_from_file(engine, "demo", out)) == sorted(queue.values())  # assign --pairs reads it back
    table = tmp_path / "assignments.csv"
    assert export_assignments(engine, "demo", "csv", table) == 24
    read = list(csv.DictReader(table.open()))
    mine = [r for r in read if r["annotator"] == "ann1"]
    assert [r["fragment_id"] for r in mine[:4]] == ["f1", "f2", "f3", "f4"]
    assert (mine[1]["done"], mine[1]["grade"]) == ("True", "2") and (mine[0]["done"], mine[0]["grade"]) == ("False", "")


def test_cli_imports_decisions_and_exports_pairs(engine, store_url, queue, tmp_path, capsys):
    path = tmp_path / "decided.qrels"
    path.write_text("q1 0 f1 2 both readings hold\n")
    argv = ["import", "adjudications", str(path), "--project", "demo", "--db", store_url]
    assert main(argv) == 2
    assert "name the lead with --lead NAME" in capsys.readouterr().err
    assert main([*argv, "--lead", "boss", "--report-format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["recorded"] == 1
    assert main([*argv, "--lead", "boss", "--annotator", "x"]) == 2
    assert "--annotator applies to `import judgments` only" in capsys.readouterr().err
    out = tmp_path / "p.csv"
    assert main(["export", "--pairs", "--format", "csv", "-o", str(out), "--project", "demo", "--db", store_url]) == 0
    assert "wrote 12 pair(s)" in capsys.readouterr().err


def test_holes_says_how_many_unjudged_documents_have_no_text(engine, store_url, queue, capsys):
    from tests.helpers import seed

    seed(engine, 1, {}, {}, {"R": {"q1": ["f1", "ghost1", "f2", "ghost2", "ghost3"]}})
    assert main(["holes", "R", "--k", "4", "--project", "demo", "--db", store_url]) == 0
    out, err = capsys.readouterr()
    # f1 and f2 are pairs already; ghost1 and ghost2 become fragments waiting for their text, with their pairs
    assert out == "2 new pairs from the unjudged top-4 of R\n"
    assert "note: 2 unjudged pair(s) have no text yet (their fragments were never imported)" in err
    assert "import their texts with `qrelkit import fragments FILE`" in err


def test_qrels_naming_fragments_without_text_are_refused_in_one_line_with_the_way_out(engine, queue, tmp_path):
    from db.imports import JudgmentsSource, import_judgments

    qrels = tmp_path / "nist.qrels"
    qrels.write_text("q1 0 f1 2\n" + "".join(f"q1 0 D{i} 1\n" for i in range(250)))
    with pytest.raises(InputError) as err:
        import_judgments(engine, "demo", qrels, actor=OPERATOR, source=JudgmentsSource("nist", require_texts=True))
    assert err.value.more == [
        f"{qrels}: 250 lines like line 2: fragment id 'D0' has no text in this project (never imported) — import "
        "their texts first with `qrelkit import fragments FILE` (or the Project page's Import tab; `--field` maps "
        "other field names), or leave out --require-texts to keep them as fragments waiting for their text"
    ]


def test_the_disputes_list_with_grades_filled_in_is_a_file_of_decisions(engine, store_url, queue, tmp_path, capsys):
    """A lead saves `qrelkit disputes`' list, adds a grade and a reason column and fills in the pairs decided: those
    are recorded, the blank ones wait; the list without a grade column is refused, not read as no decision."""
    for pair, a, b in ((("q1", "f1"), 3, 1), (("q1", "f2"), 0, 2)):
        record_judgment(engine, queue[pair], "ann1", a)
        record_judgment(engine, queue[pair], "ann2", b)
    assert main(["disputes", "--project", "demo", "--db", store_url]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == "query_id\tfragment_id\tspread\tgrades\tdecided" and len(listed) == 3
    bare = tmp_path / "disputes.tsv"
    bare.write_text("\n".join(listed) + "\n")
    argv = ["import", "adjudications", str(bare), "--project", "demo", "--lead", "boss", "--db", store_url]
    assert main(argv) == 2
    assert "disputes.tsv:2: this is the list `qrelkit disputes` prints, with no grade column" in capsys.readouterr().err
    filled = [listed[0] + "\tgrade\treason"]
    filled += [line + ("\t2\tboth readings hold" if line.startswith("q1\tf1\t") else "\t\t") for line in listed[1:]]
    bare.write_text("\n".join(filled) + "\n")
    assert main([*argv, "--report-format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["recorded"] == 1
    decided = adjudications_frame(engine, "demo")
    assert decided[["query_id", "fragment_id", "grade", "reason"]].values.tolist() == [
        ["q1", "f1", 2, "both readings hold"]
    ]

"""The Project page's import form (AppTest): NIST-style qrels come in as the grades of the annotator named there."""

from __future__ import annotations

import re

import pytest

from db.store.frames import judgments_frame
from tests.helpers import PROJECT, page_test, release, shown

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once


def test_project_page_imports_qrels_as_an_annotators_grades(store):
    at = page_test(store, "lead_project.py")
    at.radio[0].set_value("judgments").run()
    qrels = b"q000 0 d3 3\nq000 0 d21 0\n"
    at.file_uploader[0].set_value(("2019qrels-pass.txt", qrels, "text/plain")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert at.error and shown(at.error[0].value).startswith(
        "Nothing imported: 2019qrels-pass.txt:1: this looks like TREC qrels"
    )
    next(t for t in at.text_input if t.label == "Qrels graded by").set_value("nist").run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["Created"] == "2"
    nist = judgments_frame(store, PROJECT).query("annotator == 'nist'")
    assert nist[["fragment_id", "grade"]].values.tolist() == [["d21", 0], ["d3", 3]]


@pytest.mark.parametrize(
    ("kind", "name", "body", "advice"),
    [
        ("judgments", "bm25.run", b"q000 Q0 d3 1 2.0 bm25\n", "not judgments: import it as a run"),
        ("fragments", "bm25.run", b"q000 Q0 d3 1 2.0 bm25\n", "not fragments: import it as a run"),
        (
            "fragments",
            "2019qrels-pass.txt",
            b"q000 0 d3 3\n",
            'not fragments: import it as judgments, with "Qrels graded by" filled in',
        ),
        (
            "judgments",
            "2019qrels-pass.txt",
            b"q000 0 d3 3\n",
            'name whose grades they are in "Qrels graded by" (multi-judge qrels: also tick "Multi-judge qrels", '
            "one annotator per judge group)",
        ),
        (
            "run",
            "2019qrels-pass.txt",
            b"q000 0 d3 3\n",
            'not a run: grades are imported as judgments (TREC or BEIR qrels: with "Qrels graded by" filled in)',
        ),
        (
            "judgments",
            "qrels.tsv",
            b"query-id\tcorpus-id\tscore\nq000\td3\t3\n",
            'name whose grades they are in "Qrels graded by" (and for a model\'s, choose model under "The '
            "file's annotators are\")",
        ),
    ],
)
def test_a_refused_upload_advises_the_import_tab_not_the_command_line(store, kind, name, body, advice):
    """A file given as the wrong kind is refused with the readers' advice, worded for the page: the Import tab's
    choices and fields, never a `qrelkit import …` command or a --option a browser has no use for (the page used
    to end "not judgments: `qrelkit import run`")."""
    at = page_test(store, "lead_project.py")
    at.radio[0].set_value(kind).run()
    at.file_uploader[0].set_value((name, body, "text/plain")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    error = shown(at.error[0].value)
    assert error.startswith(f"Nothing imported: {name}:") and advice in error
    assert "qrelkit import" not in error and not re.search(r"--[a-z]", error)


def test_a_qrels_file_uploaded_as_a_run_to_evaluate_is_told_where_grades_go(store):
    """On the Evaluate page there is no argument order to swap: the reader's "were the qrels and the run swapped?
    (qrels first)" reads as where grades go instead."""
    release(store)
    at = page_test(store, "lead_evaluate.py")
    at.radio[0].set_value("Upload a run").run()
    at.file_uploader[0].set_value(("2019qrels-pass.txt", b"q000 0 d3 3\n", "text/plain")).run()
    assert not at.exception
    assert shown(at.error[0].value) == (
        "2019qrels-pass.txt:1: expected 6 fields (qid Q0 docid rank score tag), found 4; this looks like TREC qrels "
        "(qid iter docid grade), not a run: upload a run here; grades are imported on the Project page, as judgments"
    )


def test_an_upload_is_held_to_the_upload_limits_which_the_refusal_names(store, monkeypatch):
    """A browser's file is read under QRELKIT_MAX_UPLOAD_BYTES (a gigabyte unless set), tighter than the CLI's."""
    monkeypatch.setenv("QRELKIT_MAX_UPLOAD_BYTES", "64")
    at = page_test(store, "lead_project.py")
    at.radio[0].set_value("run").run()
    run = b"".join(f"q000 Q0 d{i} {i} {1.0 / i:.3f} bm25\n".encode() for i in range(1, 9))  # 8 lines, > 64 bytes
    at.file_uploader[0].set_value(("bm25.run", run, "text/plain")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert at.error and "holds more than 64 bytes (decompressed)" in shown(at.error[0].value)
    assert "QRELKIT_MAX_UPLOAD_BYTES" in shown(at.error[0].value)
    monkeypatch.delenv("QRELKIT_MAX_UPLOAD_BYTES")
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error  # under the default gigabyte, the same file goes in


def test_a_1_to_5_projects_page_reads_gains_qrels_back_as_grades(store, tmp_path):
    """A release's TREC qrels of a 1-5 project hold gains 0-4: refused as grades (the advice names the box),
    read back as grades with "The qrels hold gains" ticked."""
    from streamlit.testing.v1 import AppTest

    from db.accounts.permissions import OPERATOR
    from db.imports import import_fragments, import_queries
    from db.projects import create_project
    from tests.helpers import PAGES, log_in

    create_project(store, "five", scale=(1, 5), actor=OPERATOR)
    (tmp_path / "q.tsv").write_text("q1\tshipping abroad\n")
    (tmp_path / "f.jsonl").write_text("".join(f'{{"id": "d{i}", "contents": "text {i}"}}\n' for i in range(1, 4)))
    import_queries(store, "five", tmp_path / "q.tsv", actor=OPERATOR)
    import_fragments(store, "five", tmp_path / "f.jsonl", actor=OPERATOR)
    at = log_in(AppTest.from_file(str(PAGES / "lead_project.py"), default_timeout=60), store, "lea")
    at.session_state["project"] = "five"
    at = at.run()
    at.radio[0].set_value("judgments").run()
    next(t for t in at.text_input if t.label == "Qrels graded by").set_value("gold").run()
    at.file_uploader[0].set_value(("golden.qrels", b"q1 0 d1 4\nq1 0 d2 0\nq1 0 d3 1\n", "text/plain")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert at.error and 'tick "The qrels hold gains"' in shown(at.error[0].value)
    assert "--qrels-grades" not in shown(at.error[0].value)
    next(c for c in at.checkbox if c.label.startswith("The qrels hold gains")).check().run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error
    gold = judgments_frame(store, "five").sort_values("fragment_id")
    assert gold[["fragment_id", "grade"]].values.tolist() == [["d1", 5], ["d2", 1], ["d3", 2]]

"""The Project page's import form (AppTest): NIST-style qrels come in as the grades of the annotator named there."""

from __future__ import annotations

import pytest

from db.store.frames import judgments_frame
from tests.helpers import PROJECT, page_test, shown

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

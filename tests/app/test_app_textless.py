"""The Project page says how many pairs wait for their text, and the Evaluate page's holes button says how many of
the unjudged pairs it sends have none (AppTest)."""

from __future__ import annotations

import pytest

from db.accounts.permissions import OPERATOR
from db.imports import Judges, JudgmentsSource, import_judgments, import_run
from tests.helpers import PROJECT, page_test, release, shown

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once


def test_project_page_counts_the_pairs_waiting_for_their_text(store, tmp_path):
    at = page_test(store, "lead_project.py")
    assert not at.exception
    assert not any("wait for their text" in shown(i.value) for i in at.info)  # every fragment has its text
    qrels = tmp_path / "nist.qrels"
    # m1 and m2 were never imported (d3 has its text): 2 pairs wait, q000-m1 and q000-m2, both graded by nist
    qrels.write_text("q000 0 m1 2\nq000 0 m2 0\nq000 0 d3 3\n")
    report = import_judgments(
        store, PROJECT, qrels, actor=OPERATOR, source=JudgmentsSource("nist"), judges=Judges("reference")
    )
    assert report.without_text["count"] == 2
    run = tmp_path / "late.run"
    run.write_text("q000 Q0 m3 1 2.0 late\nq000 Q0 d3 2 1.0 late\n")  # m3: a third fragment, no pair yet
    import_run(store, PROJECT, run, actor=OPERATOR)
    at.run()
    assert not at.exception
    waiting = [shown(i.value) for i in at.info if "wait for their text" in shown(i.value)]
    assert waiting == [
        "2 pair(s) wait for their text (0 of them unjudged; 3 fragment(s) without a text): they are evaluated "
        "and released, but never served to an annotator. Import their texts with `qrelkit import fragments FILE` "
        "(or the Project page's Import tab; `--field` maps other field names), then assign."
    ]


def test_project_page_import_names_the_fragments_it_created_without_text(store):
    at = page_test(store, "lead_project.py")
    at.radio[0].set_value("judgments").run()
    next(t for t in at.text_input if t.label == "Qrels graded by").set_value("nist").run()
    qrels = b"q000 0 d3 3\nq000 0 m1 2\nq000 0 m1x 0\n"  # m1 and the typo m1x were never imported
    at.file_uploader[0].set_value(("2019qrels-pass.txt", qrels, "text/plain")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["Created"] == "3"
    # counted in the same run, above the tabs: q000-m1 and q000-m1x wait (graded by nist); d3 has its text
    assert [shown(i.value)[:61] for i in at.info if "wait for their text" in shown(i.value)] == [
        "2 pair(s) wait for their text (0 of them unjudged; 2 fragment"
    ]
    assert [shown(w.value) for w in at.warning if "no text yet" in shown(w.value)] == [
        "2 fragment(s) have no text yet: their pairs are evaluated and released, but never served to an "
        "annotator until their texts are imported with `qrelkit import fragments FILE` (or the Project page's "
        "Import tab; `--field` maps other field names). First: 2019qrels-pass.txt:2: 'm1'; "
        "2019qrels-pass.txt:3: 'm1x'"
    ]
    at.radio[0].set_value("fragments").run()
    body = b'{"id": "m1", "text": "Returns are accepted within 30 days."}\n'
    at.file_uploader[0].set_value(("m1.jsonl", body, "application/x-ndjson")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception
    assert [i.value for i in at.info if "waited for their text" in i.value] == [
        "1 fragment(s) that waited for their text have it now: assign their pairs."
    ]


def test_evaluate_button_says_how_many_unjudged_pairs_have_no_text(store, tmp_path):
    release(store)
    run = tmp_path / "ghosts.run"
    # top 10: d3 is judged; m1 .. m3 are neither imported nor judged
    run.write_text("q000 Q0 d3 1 4.0 g\nq000 Q0 m1 2 3.0 g\nq000 Q0 m2 3 2.0 g\nq000 Q0 m3 4 1.0 g\n")
    import_run(store, PROJECT, run, name="ghosts", actor=OPERATOR)
    at = page_test(store, "lead_evaluate.py")
    at.selectbox[0].set_value("ghosts").run()
    assert not at.exception
    assert any(shown(c.value).startswith("Of these, 3 unjudged pair(s) have no text yet") for c in at.caption)
    send = next(b for b in at.button if b.label.startswith("Send the 3 unjudged pairs"))
    send.click().run()
    assert not at.exception
    assert [s.value for s in at.success] == [
        "3 new pair(s) created (3 of the unjudged wait for their text); assign them on the Project page."
    ]


def test_a_lead_opening_a_textless_pair_gets_no_grade_buttons(store, tmp_path):
    from streamlit.testing.v1 import AppTest

    from db.store.frames import pair_id
    from tests.helpers import PAGES, log_in

    qrels = tmp_path / "nist.qrels"
    qrels.write_text("q000 0 m1 2\n")
    import_judgments(store, PROJECT, qrels, actor=OPERATOR, source=JudgmentsSource("nist"))
    at = log_in(AppTest.from_file(str(PAGES / "annotate.py"), default_timeout=60), store, "lea")
    at.session_state["project"] = PROJECT
    at.session_state["pair_id"] = pair_id(store, PROJECT, "q000", "m1")
    at.run()
    assert not at.exception
    assert [shown(w.value) for w in at.warning] == [
        "Fragment m1 has no text yet (never imported): nobody grades it until its text is imported (Project page, "
        "Import tab, Fragments)."
    ]
    assert not [b for b in at.button if b.label.startswith(("0", "1", "2", "3"))]


def test_adjudication_page_says_a_disputed_pair_has_no_text_yet(store, tmp_path):
    qrels = tmp_path / "two.jsonl"
    # two people disagree (0 vs 3) on m1, whose text was never imported: a dispute the lead may settle
    qrels.write_text(
        '{"query_id": "q000", "fragment_id": "m1", "annotator": "jo", "grade": 0}\n'
        '{"query_id": "q000", "fragment_id": "m1", "annotator": "kim", "grade": 3}\n'
    )
    import_judgments(store, PROJECT, qrels, actor=OPERATOR)
    at = page_test(store, "lead_adjudicate.py")
    picker = next(s for s in at.selectbox if s.label == "Pair")
    picker.set_value(next(label for label in picker.options if label.startswith("q000 · m1 "))).run()
    assert not at.exception
    assert [i.value for i in at.info if i.value.startswith("No text yet")] == [
        "No text yet: this fragment was named by a run or qrels and its text was never imported."
    ]

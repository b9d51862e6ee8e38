"""Where the pages meet the store, read as the user sees them on a fresh demo (its own server, so what these
tests write stays out of the shared demo's): keyboard-only can't-judge, every dispute counted, the agreement
headline's scope, grade names shown whole."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Server, login, serving_demo
from tests.browser.pages import DEMO_LEAD as LEAD
from tests.browser.pages import (
    FRAGMENT_BOX,
    SLOW,
    choose,
    engine_of,
    follow_lead_link,
    open_lead_page,
    shown_fragment_id,
    tiles,
    wait_drawn,
)
from tests.helpers import human_disputes

pytestmark = pytest.mark.browser

REASON = "Why can't you judge this pair?"


@pytest.fixture(scope="module")
def fresh_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app serving a demo built for this module alone (its tests write grades and decisions)."""
    with serving_demo(tmp_path_factory, "browser-seams") as server:
        yield server


def test_x_opens_the_reason_field_with_the_keyboard_in_it(fresh_demo: Server, page) -> None:
    """X, type the reason, Tab, Enter: the pair is saved as can't judge with that reason and the next opens,
    without touching the mouse."""
    from db.store.frames import judgments_frame

    login(page, fresh_demo.url, "ana", "ana-demo")
    expect(page.locator(FRAGMENT_BOX).locator(".qrelkit-fragment")).to_be_visible()
    first = shown_fragment_id(page)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("x")
    field = page.get_by_role("textbox", name=REASON)
    expect(field).to_be_visible()
    expect(field).to_be_focused()
    page.keyboard.type("needs the product manual")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Save as can't judge")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(FRAGMENT_BOX)).not_to_contain_text(f"fragment {first}")
    wait_drawn(page)
    judged = judgments_frame(engine_of(fresh_demo), "demo")
    cant = judged[(judged.annotator == "ana") & judged.cant_judge_reason.notna()]
    assert cant[["fragment_id", "cant_judge_reason"]].values.tolist() == [[first, "needs the product manual"]]
    assert cant["grade"].isna().all()


def test_adjudication_counts_every_dispute_and_opens_the_next_after_saving(fresh_demo: Server, page) -> None:
    """The caption's count is the store's count of pairs whose people differ; after saving, the picker shows
    the next dispute in the queue."""
    expected = len(human_disputes(engine_of(fresh_demo)))
    login(page, fresh_demo.url, *LEAD)
    follow_lead_link(page, "Adjudicate", heading="Adjudication")
    expect(page.get_by_text(f"{expected} disputed pair(s) among people", exact=False)).to_be_visible()
    picker = page.get_by_role("combobox", name="Pair")
    first = picker.input_value()
    assert " · spread " in first
    page.locator("[data-testid='stRadio'] label").filter(has_text=re.compile(r"^2 · ")).first.click()
    page.get_by_label("Reason").fill("Browser test: a partial answer")
    page.get_by_role("button", name="Save final grade").click()
    page.get_by_text(re.compile(r"Final grade 2 saved for .* Next open dispute:")).wait_for(timeout=SLOW)
    expect(picker).not_to_have_value(first)
    after = picker.input_value()
    assert " · spread " in after and not after.endswith("adjudicated")


def test_agreement_headline_names_the_version_in_force(fresh_demo: Server, page) -> None:
    """The α tile's caption names guideline version 2 (in force); the pooled α is its own, labelled line."""
    open_lead_page(page, fresh_demo, "Agreement", LEAD)
    shown = tiles(page)
    assert "guideline version 2 (in force)" in shown["Krippendorff's α"][1]
    expect(page.get_by_text(re.compile(r"^All guideline versions pooled: ordinal α "))).to_be_visible()


def test_a_long_grade_name_shows_whole(fresh_demo: Server, page) -> None:
    """A grade name of the full 60 characters fits its field: nothing is cut off."""
    from db.projects import MAX_LABEL_CHARS

    open_lead_page(page, fresh_demo, "Project", LEAD)
    page.get_by_text("Grade names", exact=True).click()
    field = page.get_by_role("textbox", name="Grade 3")
    long_name = ("Answers the question fully, with every condition it depends on")[:MAX_LABEL_CHARS]
    assert len(long_name) == MAX_LABEL_CHARS
    field.fill(long_name)
    expect(field).to_have_value(long_name)
    widths = field.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] <= widths[1], widths


def test_pairs_sent_back_reach_the_annotator_marked_as_rejudging(fresh_demo: Server, page, chromium) -> None:
    """The lead sends one query's v1 judgments back from the Guidelines page; ben, in his own browser, is then
    served one of them under "Re-judging under guideline v2" (his queue had moved on to the open queries)."""
    from db.adjudication import rejudge_queue

    queue = rejudge_queue(engine_of(fresh_demo), "demo")
    query = queue.loc[queue["annotator"] == "ben", "query_id"].iloc[0]
    open_lead_page(page, fresh_demo, "Guidelines", LEAD)
    choose(page, "Pairs", f"the pairs of query {query}")  # a long list: choose types to filter it first
    page.get_by_role("button", name="Send back for re-judging").click()
    sent = len(queue[queue["query_id"] == query])
    expect(page.get_by_text(f"{sent} assignment(s) reopened for re-judging under version 2.")).to_be_visible(
        timeout=SLOW
    )
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        ben = context.new_page()
        login(ben, fresh_demo.url, "ben", "ben-demo")
        expect(ben.get_by_text(re.compile(r"^Re-judging under guideline v2: "))).to_be_visible()
        expect(ben.get_by_text(re.compile(rf"^Query {re.escape(query)} · pair "))).to_be_visible()
    finally:
        context.close()


def test_evaluate_says_the_golden_set_changed_not_the_run(fresh_demo: Server, page) -> None:
    """Release 2 relabels 15 queries (their relevant fragments graded 0 by the lead); the runs are unchanged, so
    the Evaluate page's alerts name the golden set, never the run."""
    from annotator.demo import generated
    from db import adjudication, releases
    from db.store.frames import pair_id

    engine = engine_of(fresh_demo)
    for qid in [q["id"] for q in generated()[0]][:15]:
        for grade in (1, 2, 3):
            adjudication.adjudicate(
                engine, pair_id(engine, "demo", qid, f"{qid}-f{grade}"), 0, "off topic", actor="lea"
            )
    releases.create_release(engine, "demo", actor="lea")
    open_lead_page(page, fresh_demo, "Evaluate", LEAD)
    alerts = page.get_by_text(re.compile(r"^The golden set changed, not the run: "))
    expect(alerts.first).to_be_visible(timeout=SLOW)
    assert "0 queries added, 0 removed, 15 relabelled" in alerts.first.inner_text()
    expect(page.get_by_text(re.compile(r"^The run fell"))).to_have_count(0)

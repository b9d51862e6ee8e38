"""The lead's path in a real browser on the demo project: the agreement flag, an adjudication, a release and
its qrels download — plus a screenshot of every lead page for the README."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import Server
from tests.browser.conftest import screenshot as save_screenshot
from tests.browser.pages import DEMO_LEAD as LEAD
from tests.browser.pages import SLOW, engine_of, open_lead_page, painted, wait_drawn

pytestmark = pytest.mark.browser


def screenshot(page, name: str) -> None:
    """A whole-page screenshot: Streamlit scrolls inside its own container, so make the window as tall as the
    page, then wait until the page has laid itself out again and painted (the data grids draw on canvas)."""
    height = page.evaluate("document.querySelector('[data-testid=\"stMain\"]')?.scrollHeight || 900")
    page.set_viewport_size({"width": 1280, "height": min(max(int(height), 900), 6000)})
    painted(page)
    save_screenshot(page, name)


def test_lead_sees_the_agreement_flag_on_the_demo(demo_server: Server, page) -> None:
    open_lead_page(page, demo_server, "Agreement", LEAD)
    banner = page.get_by_text(re.compile(r"Guideline version \d+ flagged: ordinal α")).first
    banner.wait_for(timeout=SLOW)
    assert "The ambiguous boundary is" in banner.inner_text()
    page.get_by_text("Most disputed pairs").wait_for()
    screenshot(page, "lead_agreement")


def test_lead_adjudicates_a_disputed_pair(demo_server: Server, page) -> None:
    from db.store.frames import adjudications_frame

    open_lead_page(page, demo_server, "Agreement", LEAD)
    page.get_by_role("button", name="Adjudicate").first.click(timeout=SLOW)
    page.get_by_role("heading", name="Adjudication").wait_for(timeout=SLOW)
    wait_drawn(page)
    page.locator("[data-testid='stRadio'] label").filter(has_text=re.compile(r"^2 · ")).first.click()
    reason = "Browser test: gives the deadline but not the refund rule"
    page.get_by_label("Reason").fill(reason)
    page.get_by_role("button", name="Save final grade").click()
    page.get_by_text(re.compile(r"Final grade 2 saved for ")).wait_for()
    decided = adjudications_frame(engine_of(demo_server), "demo")
    assert reason in set(decided["reason"])
    assert decided.loc[decided["reason"] == reason, "grade"].tolist() == [2]
    screenshot(page, "lead_adjudicate")


def test_lead_creates_a_release_and_downloads_its_qrels(demo_server: Server, page) -> None:
    from db.releases import list_releases, release_files

    open_lead_page(page, demo_server, "Releases", LEAD)
    before = len(list_releases(engine_of(demo_server), "demo"))
    page.get_by_role("button", name="Create release").click(timeout=SLOW)
    page.get_by_text(re.compile(rf"Release {before + 1} created")).wait_for(timeout=SLOW)
    wait_drawn(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="TREC qrels (gains)").click()
    path = download.value.path()
    body = path.read_bytes()
    assert body == release_files(engine_of(demo_server), "demo", before + 1)["qrels.trec"]
    assert re.fullmatch(rb"(\S+ 0 \S+ [0-3]\n)+", body)
    assert download.value.suggested_filename == f"demo-v{before + 1}-qrels.trec"
    screenshot(page, "lead_releases")


# Each download button's label as shown, and how many of its elements clip their text (wider inside than shown).
DOWNLOAD_LABELS = """() => [...document.querySelectorAll('[data-testid=stDownloadButton] button')].map(b =>
    [b.innerText.trim(), [...b.querySelectorAll('*')].filter(e => e.scrollWidth > e.clientWidth + 1).length])"""


def test_every_release_download_shows_its_whole_label(demo_server: Server, page) -> None:
    """Seven equal columns cut every label longer than "CSV" to "TREC qrels…": the gains and the as-judged TREC
    files looked the same. Each label is drawn whole, none clipped, at the tests' 1280-pixel window."""
    from annotator.app.components.releases import downloads

    open_lead_page(page, demo_server, "Releases", LEAD)
    page.get_by_role("button", name="TREC qrels (grades as judged)").wait_for(timeout=SLOW)
    wait_drawn(page)
    shown = page.evaluate(DOWNLOAD_LABELS)
    assert [label for label, _ in shown] == [label for _, label, _ in downloads()]
    assert [label for label, clipped in shown if clipped] == []


@pytest.mark.parametrize(
    ("title", "shot"),
    [
        ("Project", "lead_project"),
        ("Guidelines", "lead_guidelines"),
        ("Evaluate", "lead_evaluate"),
    ],
)
def test_screenshot_of_each_lead_page(demo_server: Server, page, title: str, shot: str) -> None:
    from db.releases import create_release, list_releases

    engine = engine_of(demo_server)
    if title == "Evaluate" and not list_releases(engine, "demo"):
        create_release(engine, "demo", actor="lea")
    open_lead_page(page, demo_server, title, LEAD)
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, shot)

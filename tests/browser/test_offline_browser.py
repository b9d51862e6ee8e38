"""The app works from its own server alone: opening every page as the lead (and reloading) sends no request to
any other host — no favicon from Google's icon CDN, no web font, no image — so it runs on a closed network and
tells nobody outside who opened which page."""

from __future__ import annotations

import re

import pytest

from annotator.app.main import LEAD_PAGES
from tests.browser.conftest import Server, login
from tests.browser.pages import DEMO_LEAD, open_page, settled

pytestmark = pytest.mark.browser

LOCAL = re.compile(r"^(data:|blob:|about:)")


def test_no_page_sends_a_request_outside_the_app(demo_server: Server, page) -> None:
    elsewhere: list[str] = []
    page.on(
        "request",
        lambda request: (
            None
            if request.url.startswith(demo_server.url) or LOCAL.match(request.url)
            else elsewhere.append(request.url)
        ),
    )
    login(page, demo_server.url, *DEMO_LEAD)
    settled(page)  # the first page, Annotate, is open
    nav = page.get_by_test_id("stSidebarNav")
    titles = [text.strip().splitlines()[-1].strip() for text in nav.get_by_role("link").all_inner_texts()]
    assert len(titles) == 2 + len(LEAD_PAGES)  # Annotate, Guideline and every lead page
    assert titles[0] == "Annotate"
    for title in titles[1:]:
        open_page(page, title)  # waits for the new address and the run that draws the page
        settled(page)
    page.reload()
    settled(page)
    assert elsewhere == []

"""The app works from its own server alone: opening every page as the lead (and reloading) sends no request to
any other host — no favicon from Google's icon CDN, no web font, no image — so it runs on a closed network and
tells nobody outside who opened which page."""

from __future__ import annotations

import re

import pytest

from annotator.app.main import LEAD_PAGES
from tests.browser.conftest import Server, login, wait_idle
from tests.browser.pages import settled

pytestmark = pytest.mark.browser

LOCAL = re.compile(r"^(data:|blob:|about:)")


def test_no_page_sends_a_request_outside_the_app(demo_server: Server, page) -> None:
    elsewhere: list[str] = []
    page.on("request", lambda request: None if request.url.startswith(demo_server.url) or LOCAL.match(request.url)
            else elsewhere.append(request.url))
    login(page, demo_server.url, "lea", "lea-demo")
    nav = page.get_by_test_id("stSidebarNav")
    titles = [text.strip().splitlines()[-1].strip() for text in nav.get_by_role("link").all_inner_texts()]
    assert len(titles) == 2 + len(LEAD_PAGES)  # Annotate, Guideline and every lead page
    for title in titles:
        nav.get_by_role("link", name=re.compile(f"{re.escape(title)}$")).first.click()
        page.wait_for_timeout(300)  # let the page's run start, then wait for it to end
        wait_idle(page)
    page.reload()
    wait_idle(page)
    settled(page)
    assert elsewhere == []

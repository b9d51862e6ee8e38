"""The annotator's path in a real browser: log in, grade with the keyboard, reload, markup shown as text."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Server, login, screenshot, wait_idle
from tests.browser.pages import FRAGMENT_BOX, open_page, overall, press_grade, show_tab, shown_fragment_id

pytestmark = pytest.mark.browser


def nav_titles(page) -> list[str]:
    """Titles of the sidebar menu's links (the Material icon's name is the first line of each)."""
    links = page.get_by_test_id("stSidebarNav").get_by_role("link").all_inner_texts()
    return [text.strip().splitlines()[-1].strip() for text in links]


def close_page_not_found(page) -> None:
    """Dismiss Streamlit's 'Page not found' dialog (shown for a URL outside the user's menu) if it is up."""
    dialog = page.get_by_role("dialog")
    if dialog.count():
        assert "Page not found" in dialog.first.inner_text()
        page.keyboard.press("Escape")
        dialog.first.wait_for(state="hidden")


def markup_annotator(db_url: str) -> tuple[str, str]:
    """An annotator whose whole queue is the demo's markup query (queued last, out of a newcomer's first
    minute): its first pair is the fragment holding <script> and Markdown. Returns the login."""
    import sqlalchemy as sa

    from annotator.demo import MARKUP_QUERY
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.store.engine import get_engine
    from db.store.models import Assignment, Fragment, Pair, Query

    engine = get_engine(db_url)
    user = create_user(engine, "mia", "annotator", password="mia-markup", actor=OPERATOR)
    with engine.begin() as conn:
        pairs = conn.execute(
            sa.select(Pair.id, Pair.project_id)
            .join(Query, Query.id == Pair.query_id)
            .join(Fragment, Fragment.id == Pair.fragment_id)
            .where(Query.external_id == MARKUP_QUERY)
            .order_by((Fragment.external_id != "md-script"), Pair.id)
        ).all()
        for position, (pair_id, project_id) in enumerate(pairs, start=1):
            conn.execute(
                sa.insert(Assignment.__table__).values(
                    project_id=project_id, pair_id=pair_id, user_id=user.id, position=position
                )
            )
    assert pairs, f"the demo has no {MARKUP_QUERY} pairs"
    return "mia", "mia-markup"


def test_fragment_holding_script_and_markdown_renders_as_text(demo_server: Server, page) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    login(page, demo_server.url, *markup_annotator(demo_server.db_url))
    box = page.locator(FRAGMENT_BOX)
    text_only = box.locator(".qrelkit-fragment")  # the fragment's own text, under the app's caption
    expect(text_only).to_contain_text("<script>alert(1)</script>")  # st.html fills in after the run: wait
    text = box.inner_text()
    assert "<script>alert(1)</script>" in text
    assert "**Aviso importante**" in text and "# Esto no es un título" in text
    assert "<b>negrita HTML</b>" in text
    for tag in ("script", "b", "strong", "h1", "a", "li", "img"):
        assert text_only.locator(tag).count() == 0, tag
    assert dialogs == []
    screenshot(page, "annotate")


def test_grade_three_pairs_with_the_keyboard_and_reload_keeps_progress(demo_server: Server, page) -> None:
    from db.store.frames import judgments_frame
    from db.store.schema import init_db

    login(page, demo_server.url, "ben", "ben-demo")
    done, assigned = overall(page)
    graded = {}
    for key in ("2", "3", "1"):
        graded[shown_fragment_id(page)] = int(key)
        press_grade(page, key)
    assert overall(page) == (done + 3, assigned)
    fourth = shown_fragment_id(page)
    page.reload()
    wait_idle(page)  # the session survives the reload: no second login
    assert overall(page) == (done + 3, assigned)
    assert shown_fragment_id(page) == fourth
    judged = judgments_frame(init_db(demo_server.db_url), "demo")
    mine = judged[(judged.annotator == "ben") & judged.fragment_id.isin(list(graded))]
    assert dict(zip(mine.fragment_id, mine.grade.astype(int), strict=True)) == graded


@pytest.mark.parametrize("path", ["lead_agreement", "lead_adjudicate"])
def test_annotator_cannot_open_a_lead_page_by_url(demo_server: Server, page, path: str) -> None:
    page.goto(f"{demo_server.url}/{path}")
    wait_idle(page)
    close_page_not_found(page)
    login(page, None, "ana", "ana-demo")
    close_page_not_found(page)
    expect(page.get_by_test_id("stSidebarNav").get_by_role("link")).to_have_count(2)
    assert nav_titles(page) == ["Annotate", "Guideline"]
    expect(page.get_by_text("Not allowed for your role")).to_have_count(1)
    expect(page.get_by_role("button", name=re.compile("Answers fully"))).to_have_count(0)


def test_screenshots_of_every_page(demo_server: Server, page) -> None:
    page.goto(demo_server.url)
    wait_idle(page)
    screenshot(page, "login")
    login(page, demo_server.url, "lea", "lea-demo")
    expect(page.get_by_test_id("stSidebarNav").get_by_role("link", name=re.compile("Project$"))).to_be_visible()
    titles = nav_titles(page)
    assert titles[:2] == ["Annotate", "Guideline"] and len(titles) > 2
    for title in titles[1:]:
        open_page(page, title)
        if title == "Project":
            show_tab(page, "Annotators")
        screenshot(page, page.url.rstrip("/").rsplit("/", 1)[1])

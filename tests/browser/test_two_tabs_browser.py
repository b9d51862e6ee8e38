"""Two tabs of one annotator in one browser: the stale tab's grade does not overwrite the fresh tab's; it asks
"graded 2 meanwhile in another tab — keep 1?", keeping writes both grades to the history, and the counter
matches the store's count."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Server, login, wait_idle
from tests.browser.pages import FRAGMENT_BOX, engine_of, overall, press, press_grade, shown_fragment_id

pytestmark = pytest.mark.browser


def tabs_annotator(db_url: str) -> tuple[str, str]:
    """A new annotator whose queue is three plain demo pairs (not the markup query); returns the login."""
    import sqlalchemy as sa

    from annotator.demo import MARKUP_QUERY
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.store.engine import get_engine
    from db.store.models import Assignment, Pair, Query

    engine = get_engine(db_url)
    user = create_user(engine, "tia", "annotator", password="tia-two-tabs", actor=OPERATOR)
    with engine.begin() as conn:
        pairs = conn.execute(
            sa.select(Pair.id, Pair.project_id)
            .join(Query, Query.id == Pair.query_id)
            .where(Query.external_id != MARKUP_QUERY)
            .order_by(Pair.id)
            .limit(3)
        ).all()
        for position, (pair_id, project_id) in enumerate(pairs, start=1):
            conn.execute(
                sa.insert(Assignment.__table__).values(
                    project_id=project_id, pair_id=pair_id, user_id=user.id, position=position
                )
            )
    return "tia", "tia-two-tabs"


def test_a_stale_tab_asks_before_it_overwrites_and_keeps_history(demo_server: Server, page) -> None:
    import sqlalchemy as sa

    from db.grading import progress
    from db.store.models import Fragment, Judgment, JudgmentHistory, Pair, User

    login(page, demo_server.url, *tabs_annotator(demo_server.db_url))
    stale = page
    fresh = page.context.new_page()  # a second tab of the same browser: logged in by the session cookie
    fresh.goto(demo_server.url)
    fresh.get_by_test_id("stSidebar").get_by_text("tia", exact=False).first.wait_for()
    wait_idle(fresh)
    expect(fresh.locator(FRAGMENT_BOX).locator(".qrelkit-fragment")).to_be_visible()
    fragment = shown_fragment_id(stale)
    assert shown_fragment_id(fresh) == fragment
    assert overall(stale) == overall(fresh) == (0, 3)

    press_grade(fresh, "2")  # the fresh tab grades 2 and moves on
    assert overall(fresh) == (1, 3)
    wait_idle(stale)
    press(stale, "1")  # the stale tab still shows the pair ungraded
    question = stale.locator(".st-key-stale_question")
    expect(question).to_contain_text(re.compile(r"This pair was graded 2 meanwhile in another tab — keep 1 · "))
    wait_idle(stale)
    engine = engine_of(demo_server)
    with engine.connect() as conn:
        pair_id, user_id = conn.execute(
            sa.select(Pair.id, User.id)
            .join(Fragment, Fragment.id == Pair.fragment_id)
            .join(Judgment, Judgment.pair_id == Pair.id)
            .join(User, User.id == Judgment.user_id)
            .where(Fragment.external_id == fragment, User.username == "tia")
        ).one()
        grade = conn.execute(sa.select(Judgment.grade).where(Judgment.pair_id == pair_id, Judgment.user_id == user_id))
        assert grade.scalar_one() == 2  # not overwritten
    assert overall(stale) == (progress(engine, "demo", "tia").done, 3) == (1, 3)  # the counter recounted

    stale.get_by_role("button", name=re.compile("^Keep mine: 1")).click()
    expect(question).to_have_count(0)
    wait_idle(stale)
    with engine.connect() as conn:
        history = conn.execute(
            sa.select(JudgmentHistory.old_grade, JudgmentHistory.new_grade)
            .where(JudgmentHistory.pair_id == pair_id, JudgmentHistory.user_id == user_id)
            .order_by(JudgmentHistory.id)
        ).all()
        now = conn.execute(sa.select(Judgment.grade).where(Judgment.pair_id == pair_id, Judgment.user_id == user_id))
        assert now.scalar_one() == 1
    assert [tuple(r) for r in history] == [(None, 2), (2, 1)]
    assert shown_fragment_id(stale) != fragment  # on to the next open pair
    assert overall(stale) == (progress(engine, "demo", "tia").done, 3) == (1, 3)

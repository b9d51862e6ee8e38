"""The qualification round in a real browser: a new annotator grades the round's control pairs with the keys,
sees after each the settled grade and the lead's reason as typed (markup shown as text), and once the round
passes their regular queue opens."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, Server, login, require, screenshot, serving, until, wait_idle
from tests.browser.pages import FRAGMENT_BOX, overall, shown_fragment_id

pytestmark = pytest.mark.browser

SETTLED = (3, 0, 2)  # the settled grades of the demo's first three pairs, made control pairs by hand
REASON = "Says **{grade}** <i>plainly</i> [see](http://x.example) for {fragment}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, tuple[int, str]]]]:
    """The demo with three control pairs, a round of 3, and nia, a new annotator given every pair."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    import sqlalchemy as sa

    from annotator.demo import build_demo
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.assignment import assign
    from db.control import add_control
    from db.qualification import set_qualification
    from db.store.models import Fragment, Pair, Query
    from db.store.schema import init_db

    folder = tmp_path_factory.mktemp("browser-qualify")
    db_url = f"sqlite:///{folder / 'qualify.db'}"
    engine = init_db(db_url)
    build_demo(engine)
    with engine.connect() as conn:
        firsts = conn.execute(
            sa.select(Query.external_id, Fragment.external_id)
            .select_from(Pair)
            .join(Query, Query.id == Pair.query_id)
            .join(Fragment, Fragment.id == Pair.fragment_id)
            .order_by(Pair.id)
            .limit(len(SETTLED))
        ).all()
    controls = {}
    for (query, fragment), grade in zip(firsts, SETTLED, strict=True):
        reason = REASON.format(grade=grade, fragment=fragment)
        add_control(engine, "demo", query, fragment, grade, reason, actor=OPERATOR)
        controls[fragment] = (grade, reason)
    create_user(engine, "nia", "annotator", "nia-demo", actor=OPERATOR)
    assign(engine, "demo", overlap=3, annotators=["ana", "ben", "nia"], actor=OPERATOR)
    set_qualification(engine, "demo", len(SETTLED), actor=OPERATOR)
    engine.dispose()
    with serving(db_url, folder) as running:
        yield running, controls


def test_new_annotator_sees_each_settled_grade_and_reason_then_the_queue_opens(server, page) -> None:
    running, controls = server
    login(page, running.url, "nia", "nia-demo")
    expect(page.get_by_role("heading", name="Qualification round")).to_be_visible()
    for n in range(len(SETTLED)):
        box = page.locator(FRAGMENT_BOX)
        expect(box.locator(".qrelkit-fragment")).to_be_visible()
        wait_idle(page)
        assert "Settled grade" not in page.content()  # nothing of the answer before the grade
        fragment = shown_fragment_id(page)
        grade, reason = controls[fragment]
        page.evaluate("document.activeElement && document.activeElement.blur()")
        page.keyboard.press(str(grade))
        feedback = page.locator(".st-key-round_feedback")
        expect(feedback).to_contain_text(f"Settled grade: {grade} · ")
        expect(feedback.get_by_text(reason, exact=True)).to_be_visible()  # as typed: no bold, no link, no tag
        assert feedback.locator("strong, a, i").count() == 0
        if n < len(SETTLED) - 1:
            page.get_by_role("button", name="Next pair →").click()
            until(page, lambda: page.locator(".st-key-round_feedback").count() == 0, what="the next round pair")
    expect(page.get_by_text("Passed the qualification round", exact=False)).to_be_visible()
    screenshot(page, "qualification-passed")
    page.get_by_role("button", name="Start my regular queue →").click()
    expect(page.get_by_role("heading", name="Qualification round")).to_have_count(0)
    expect(page.locator(FRAGMENT_BOX).locator(".qrelkit-fragment")).to_be_visible()
    wait_idle(page)
    done, assigned = overall(page)
    assert done == 0 and assigned > 0
    assert shown_fragment_id(page) not in controls  # the round's pairs left nia's queue

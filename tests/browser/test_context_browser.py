"""Grading in context in a real browser: the query's description and narrative under it, key D opens the
fragment's neighbours beside it, D again the whole document, Escape closes; the grade is the fragment's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, Server, login, require, serving, wait_idle
from tests.browser.pages import FRAGMENT_BOX, press_grade, shown_fragment_id

pytestmark = pytest.mark.browser

CONTEXT_BOX = ".st-key-context_box"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Project 'ctx': query t1 with a description and narrative; document doc-1 in four chunks c0–c3 (stored
    out of order, positions 0–3); ana is assigned the pairs t1 × c2 and t1 × c0 only."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    import sqlalchemy as sa

    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.assignment import assign
    from db.projects import create_project
    from db.store.models import Fragment, Pair, Query
    from db.store.schema import init_db

    folder = tmp_path_factory.mktemp("browser-context")
    db_url = f"sqlite:///{folder / 'context.db'}"
    engine = init_db(db_url)
    create_user(engine, "ana", "annotator", "ana-context", actor=OPERATOR)
    project = create_project(engine, "ctx", overlap=1, actor=OPERATOR)
    with engine.begin() as conn:
        qid = conn.execute(
            sa.insert(Query.__table__)
            .values(
                project_id=project.id,
                external_id="t1",
                text="return deadline",
                description="How long may I wait?",
                narrative="Relevant: states the number of days.",
            )
            .returning(Query.__table__.c.id)
        ).scalar_one()
        for pos in (3, 1, 2, 0):
            fid = conn.execute(
                sa.insert(Fragment.__table__)
                .values(
                    project_id=project.id,
                    external_id=f"c{pos}",
                    doc_id="doc-1",
                    position=pos,
                    text=f"Chunk number {pos} of the returns policy.",
                    content_hash=f"c{pos}",
                )
                .returning(Fragment.__table__.c.id)
            ).scalar_one()
            if pos in (2, 0):
                conn.execute(
                    sa.insert(Pair.__table__).values(
                        project_id=project.id,
                        query_id=qid,
                        fragment_id=fid,
                        best_rank=1 if pos == 2 else 2,
                        created_at=sa.func.now(),
                    )
                )
    assign(engine, "ctx", overlap=1, annotators=["ana"], actor=OPERATOR)
    engine.dispose()
    with serving(db_url, folder) as running:
        yield running


def _ids_in_context(page) -> list[str]:
    """Fragment ids in the context box's captions, in order."""
    captions = page.locator(CONTEXT_BOX).get_by_test_id("stCaptionContainer").all_inner_texts()
    return [c.split("fragment ", 1)[1].split(" ")[0].strip() for c in captions if "fragment " in c]


def test_context_opens_by_key_and_closes_by_escape(server: Server, page) -> None:
    login(page, server.url, "ana", "ana-context")
    box = page.locator(FRAGMENT_BOX)
    expect(box.locator(".qrelkit-fragment")).to_be_visible()
    graded = shown_fragment_id(page)
    assert graded == "c2"
    expect(page.get_by_text("Description: How long may I wait?")).to_be_visible()
    expect(page.get_by_text("Narrative: Relevant: states the number of days.")).to_be_visible()
    assert page.locator(CONTEXT_BOX).count() == 0

    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("d")
    expect(page.locator(CONTEXT_BOX)).to_be_visible()
    wait_idle(page)
    assert _ids_in_context(page) == ["c1", "c2", "c3"]  # the neighbours, in document order
    expect(page.locator(CONTEXT_BOX)).to_contain_text("the fragment you are grading")
    assert shown_fragment_id(page) == "c2"  # the graded fragment is still the one in the fragment box

    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("d")
    expect(page.locator(CONTEXT_BOX)).to_contain_text("whole document (4 fragments)")
    wait_idle(page)
    assert _ids_in_context(page) == ["c0", "c1", "c2", "c3"]

    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Escape")
    expect(page.locator(CONTEXT_BOX)).to_have_count(0)
    wait_idle(page)

    press_grade(page, "2")
    assert shown_fragment_id(page) == "c0"
    from db.store.engine import get_engine
    from db.store.frames import judgments_frame

    frame = judgments_frame(get_engine(server.db_url), "ctx")
    assert frame[["fragment_id", "annotator"]].values.tolist() == [["c2", "ana"]]
    assert frame["grade"].tolist() == [2]

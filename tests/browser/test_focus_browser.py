"""Keyboard focus in a real browser: after picking another project in the sidebar, a grade key grades at once
(Streamlit ignores shortcut keys while focus is in an input, and the project selector is one)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, Server, login, serving, wait_idle
from tests.conftest import require
from tests.helpers import write_jsonl

pytestmark = pytest.mark.browser

FRAGMENT_BOX = ".st-key-fragment_box"
PROJECTS = ("alpha", "beta")  # store order: the app opens on alpha (QRELKIT_PROJECT names no project here)
USERS = {"mouse": "ana", "keyboard": "bo", "twice": "cy"}  # one account per test: none sees another's grades


@pytest.fixture(scope="module")
def two_projects(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Projects alpha and beta (scale 0–3), each one query and three fragments whose ids start with
    the project's initial, every pair assigned to every annotator; built with the store API and served."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.assignment import assign
    from db.imports import import_fragments, import_queries
    from db.pooling import pool
    from db.projects import create_project
    from db.store.schema import init_db

    folder = tmp_path_factory.mktemp("browser-focus")
    db_url = f"sqlite:///{folder / 'focus.db'}"
    engine = init_db(db_url)
    for name in USERS.values():
        create_user(engine, name, "annotator", f"{name}-password", actor=OPERATOR)
    for project in PROJECTS:
        create_project(engine, project, actor=OPERATOR)
        initial = project[0]
        queries = write_jsonl(folder / f"{project}-q.jsonl", [{"id": f"{initial}q", "text": "return deadline"}])
        fragments = write_jsonl(
            folder / f"{project}-f.jsonl",
            [
                {"id": f"{initial}{i}", "text": f"{project} fragment {i}: the return deadline is {10 * i} days."}
                for i in (1, 2, 3)
            ],
        )
        import_queries(engine, project, queries, actor=OPERATOR)
        import_fragments(engine, project, fragments, actor=OPERATOR)
        pool(engine, project, depth=10, actor=OPERATOR)
        assign(engine, project, overlap=len(USERS), annotators=list(USERS.values()), actor=OPERATOR)
    engine.dispose()
    with serving(db_url, folder) as server:
        yield server


def shown_fragment(page) -> str:
    """External id of the fragment on screen (the box's caption ends '· fragment ID')."""
    caption = page.locator(FRAGMENT_BOX).get_by_text(re.compile(r"fragment \S+$")).first.inner_text()
    return caption.rsplit("fragment ", 1)[1].strip()


def pick_project(page, name: str, how: str) -> None:
    """Choose `name` in the sidebar's Project selector with the mouse (click, click the option) or the keyboard
    (focus, type, Enter); the page is left as the user leaves it (no click elsewhere)."""
    picker = page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox")
    if how == "mouse":
        picker.click()
        page.get_by_role("option", name=name).click()
    else:
        picker.get_by_role("combobox").focus()
        page.keyboard.type(name)
        page.keyboard.press("Enter")
    wait_idle(page)


def grade_by_key_and_check(page, server: Server, user: str, project: str, key: str) -> None:
    """Press `key` with the page as it is; the next pair of `project` must open and the store must hold
    exactly that grade from `user` for the pair that was on screen."""
    from db.store.frames import judgments_frame
    from db.store.schema import init_db

    box = page.locator(FRAGMENT_BOX)
    expect(box).to_contain_text(f"fragment {project[0]}")
    first = shown_fragment(page)
    page.keyboard.press(key)
    expect(box).not_to_contain_text(f"fragment {first}")
    wait_idle(page)
    second = shown_fragment(page)
    assert second.startswith(project[0]) and second != first
    judged = judgments_frame(init_db(server.db_url), project)
    mine = judged[judged.annotator == user]
    assert dict(zip(mine.fragment_id, mine.grade.astype(int), strict=True)) == {first: int(key)}


@pytest.mark.parametrize("how", ["mouse", "keyboard"])
def test_a_grade_key_works_right_after_picking_another_project(two_projects: Server, page, how: str) -> None:
    user = USERS[how]
    login(page, two_projects.url, user, f"{user}-password")
    expect(page.locator(FRAGMENT_BOX)).to_contain_text("fragment a")
    pick_project(page, "beta", how)
    grade_by_key_and_check(page, two_projects, user, "beta", "2")


def test_a_grade_key_works_after_picking_a_project_again(two_projects: Server, page) -> None:
    """The second pick draws the same script again: it must still run (and take the focus) once more."""
    user = USERS["twice"]
    login(page, two_projects.url, user, f"{user}-password")
    pick_project(page, "beta", "mouse")
    expect(page.locator(FRAGMENT_BOX)).to_contain_text("fragment b")
    pick_project(page, "alpha", "mouse")
    grade_by_key_and_check(page, two_projects, user, "alpha", "3")


def test_picking_a_project_does_not_move_the_sidebar(two_projects: Server, page) -> None:
    """The script that takes the focus takes no room: nothing below the selector jumps after a pick."""
    login(page, two_projects.url, USERS["mouse"], f"{USERS['mouse']}-password")
    log_out = page.get_by_role("button", name="Log out")
    before = log_out.bounding_box()["y"]
    pick_project(page, "beta", "mouse")
    expect(page.locator(FRAGMENT_BOX)).to_contain_text("fragment b")
    assert log_out.bounding_box()["y"] == before

"""Grade names a lead typed are shown literally on the annotator's grade buttons (no image fetched, no emphasis
made), and the key of a grade named with markup still grades with that number."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, Server, login, until, wait_idle
from tests.browser.pages import MARKUP_TAGS, PLANT, accounts, qrelkit, serve, settled
from tests.conftest import require
from tests.helpers import write_jsonl

pytestmark = pytest.mark.browser

PROJECT = "labels"
LABELS = {1: "Off topic", 2: f"![zzimg]({PLANT}/label.png) **zzbold**", 3: "<b>zztag</b> _zzit_ `zzcode`"}
BUTTONS = re.compile(r"^[1-3] · ")


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A 1–3 project whose grades 2 and 3 are named with Markdown/HTML; ana grades its three pairs."""
    from db.accounts.permissions import OPERATOR
    from db.projects import set_grade_labels
    from db.store.schema import init_db

    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    folder = tmp_path_factory.mktemp("labels")
    db = f"sqlite:///{folder / 'labels.db'}"
    qrelkit("init", "--db", db)
    qrelkit("project", "create", PROJECT, "--scale", "1-3", "--overlap", "1", "--db", db)
    engine = init_db(db)
    set_grade_labels(engine, PROJECT, LABELS, actor=OPERATOR)
    engine.dispose()
    accounts(db, ("ana", "annotator"))
    qrelkit(
        "import",
        "queries",
        write_jsonl(folder / "q.jsonl", [{"id": "q", "text": "plazo de envío"}]),
        "--project",
        PROJECT,
        "--db",
        db,
    )
    fragments = [{"id": f"f{i}", "text": f"Fragmento {i} sobre envíos."} for i in (1, 2, 3)]
    qrelkit("import", "fragments", write_jsonl(folder / "f.jsonl", fragments), "--project", PROJECT, "--db", db)
    (folder / "r.run").write_text("q Q0 f1 1 3 x\nq Q0 f2 2 2 x\nq Q0 f3 3 1 x\n", encoding="utf-8")
    qrelkit("import", "run", str(folder / "r.run"), "--project", PROJECT, "--db", db)
    qrelkit("pool", "--project", PROJECT, "--depth", "10", "--bm25", "0", "--db", db)
    qrelkit("assign", "--project", PROJECT, "--annotators", "ana", "--db", db)
    yield from serve(db, PROJECT, folder)


def test_grade_names_with_markup_show_literally_fetch_nothing_and_grade_by_number(labelled: Server, page) -> None:
    from db.store.engine import get_engine
    from db.store.frames import judgments_frame

    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if request.url.startswith(PLANT) else None)
    login(page, labelled.url, "ana", "ana-password")
    buttons = page.get_by_role("button", name=BUTTONS)
    expect(buttons).to_have_count(3)
    wait_idle(page)
    shown = [text.strip().splitlines()[0].strip() for text in buttons.all_inner_texts()]
    assert shown == [f"{g} · {name}" for g, name in LABELS.items()]
    assert buttons.locator(MARKUP_TAGS).count() == 0  # no image, bold, italic or code made from a name
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("2")
    until(page, lambda: len(judgments_frame(get_engine(labelled.db_url), PROJECT)) > 0)  # stored by the server's run
    frame = judgments_frame(get_engine(labelled.db_url), PROJECT)
    assert frame[["fragment_id", "annotator", "grade"]].values.tolist() == [["f1", "ana", 2]]
    settled(page)
    assert requests == []

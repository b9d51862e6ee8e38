"""The Project page's Pool tab, "From a live search engine", in a browser: a lead uploads a config pointing at a
fake Elasticsearch, presses the button, and the numbers the page shows are those `qrelkit pool --search` reports
for an identical copy of the store, as is the count of pairs waiting for their text."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, Server, login, until, wait_idle
from tests.browser.pages import follow_lead_link, main_text, serve, show_tab
from tests.conftest import require
from tests.fake_search import FakeEngine, elasticsearch_reply
from tests.helpers import PROJECT, build_store, run

pytestmark = pytest.mark.browser

KEY = "live-key-Br0wser-5earch"
CONFIG = "live-es.json"
# The engine's top 5 for seed 000's one query: d3 (pooled, has its text), d99 (new, text in the reply), m3
# (named by a run, waiting for its text: the reply fills it), d98 (new, no text) and m4 (waiting, no text).
HITS = [
    ("d3", 9.0, "kept"),
    ("d99", 8.0, "Returns abroad: 30 days."),
    ("m3", 7.5, "International returns within 30 days."),
    ("d98", 7.0, None),
    ("m4", 6.0, None),
]
SEARCHED = re.compile(
    r"(\d+) query\(ies\) searched, (\d+) hit\(s\) stored as run (\S+), (\d+) fragment\(s\) imported and "
    r"(\d+) text\(s\) filled in from the replies; (\d+) new pair\(s\), (\d+) already pooled\."
)
WITHOUT_TEXT = re.compile(r"(\d+) hit\(s\) of (\S+) name fragments this project has no text for")
WAITING = re.compile(
    r"(\d+) pair\(s\) wait for their text \((\d+) of them unjudged; (\d+) fragment\(s\) without a text\)"
)


def clean(text: str) -> str:
    """Text as read from the page, with the zero-width characters literal() may insert dropped."""
    return re.sub("[\u200b\u2060]", "", text)


def opened_json(page) -> object:
    """The report the last st.json shows (drawn collapsed), every level opened by a click and read back: the
    viewer writes one key or closing bracket a line, without commas."""
    box = page.get_by_test_id("stJson").last
    dots = box.locator(".node-ellipsis")

    def opened() -> bool:
        if dots.count() == 0:
            return True
        dots.first.click()
        return False

    until(page, opened, what="every level of the report opened")
    return json.loads(re.sub(r'([\d"}\]el])\n(?=")', r"\1,\n", box.inner_text()))


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, str]]:
    """Seed 000's store plus a run naming m3 and m4 (fragments waiting for their text), copied before anything is
    pooled: the app serves one copy, the CLI pools the other. The key is in the server's environment."""
    from db.accounts.permissions import OPERATOR
    from db.imports import import_run
    from db.store.engine import get_engine

    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    served, spare = tmp_path / "served", tmp_path / "spare"
    served.mkdir()
    spare.mkdir()
    url = f"sqlite:///{served / 'lead.db'}"
    build_store(url)
    engine = get_engine(url)
    late = served / "late.run"
    late.write_text("q000 Q0 m3 1 2.0 late\nq000 Q0 m4 2 1.0 late\n")
    import_run(engine, PROJECT, late, name="late", actor=OPERATOR)
    engine.dispose()
    for part in ("lead.db", "lead.db-wal", "lead.db-shm"):
        if (served / part).exists():
            shutil.copy(served / part, spare / part)
    monkeypatch.setenv("QRELKIT_SEARCH_API_KEY", KEY)
    for server in serve(url, PROJECT, served):
        yield server, f"sqlite:///{spare / 'lead.db'}"


@pytest.fixture
def fake() -> Iterator[FakeEngine]:
    server = FakeEngine(lambda request: (200, elasticsearch_reply(HITS)))
    yield server
    server.close()


def test_live_search_pool_shows_what_the_cli_reports(stores, fake, page, tmp_path) -> None:
    from db.store.engine import get_engine
    from db.textless import texts_waiting

    app, spare_url = stores
    config = tmp_path / CONFIG
    config.write_text(json.dumps({"template": "elasticsearch", "url": f"{fake.root}/shop/_search", "k": 5}))

    code, out, err = run(["pool", "--search", str(config), "--project", PROJECT, "--db", spare_url, "--format", "json"])
    assert code == 0, err
    cli = json.loads(out)
    # By hand: 1 query, 5 hits; d99 imported with its text, m3's text filled; d3 was pooled, the other four are
    # new pairs; d98 and m4 have no text.
    found = cli["search"]
    assert (found["queries"], found["hits"], found["run"], found["run_stored"]) == (1, 5, "live-es", "new")
    assert (found["fragments_imported"], found["texts_filled"], found["hits_without_text"]) == (1, 1, 2)
    assert (cli["created"], cli["existing"]) == (4, 1)
    assert "note: 2 hit(s) of live-es name fragments" in err
    # Pairs waiting after the pool: q000–d98 and q000–m4, unjudged; fragments without a text: d98 and m4.
    waiting = texts_waiting(get_engine(spare_url), PROJECT)
    assert (waiting.pairs, waiting.unjudged, waiting.fragments) == (2, 2, 2)

    login(page, app.url, "lea", "lead-pass")
    follow_lead_link(page, "Project")
    before = WAITING.search(clean(main_text(page)))
    assert before is not None and before.groups() == ("0", "0", "2")  # m3 and m4 wait, in no pair yet
    show_tab(page, "Pool")
    page.locator(".st-key-search-config input[type='file']").set_input_files(str(config))
    press = page.get_by_role("button", name="Search and pool")
    expect(press).to_be_enabled()
    wait_idle(page)
    press.click()
    until(page, lambda: SEARCHED.search(clean(main_text(page))) is not None, what="the pool's report")
    wait_idle(page)
    text = clean(main_text(page))
    assert page.get_by_test_id("stException").count() == 0
    searched = SEARCHED.search(text)
    assert searched is not None
    assert searched.groups() == tuple(
        str(v)
        for v in (
            found["queries"],
            found["hits"],
            found["run"],
            found["fragments_imported"],
            found["texts_filled"],
            cli["created"],
            cli["existing"],
        )
    )
    without = WITHOUT_TEXT.search(text)
    assert without is not None and without.groups() == (str(found["hits_without_text"]), found["run"])
    shown = WAITING.search(text)
    assert shown is not None
    assert tuple(map(int, shown.groups())) == (waiting.pairs, waiting.unjudged, waiting.fragments)
    served = texts_waiting(get_engine(app.db_url), PROJECT)
    assert (served.pairs, served.unjudged, served.fragments) == (waiting.pairs, waiting.unjudged, waiting.fragments)
    # The whole report under the message, opened: what the CLI printed, run stored "new" and hits without text.
    assert opened_json(page) == cli
    assert [r["headers"]["Authorization"] for r in fake.requests] == [f"ApiKey {KEY}"] * 2  # the CLI's, the page's

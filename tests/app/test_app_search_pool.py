"""The Project page's Pool tab pools from a live search engine (AppTest, against the fake engine): a config file
uploaded, the key from the server's environment, the top-k stored as a run and pooled; a refusal names the
uploaded file, not its temporary copy, and says nothing of the key."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from db.store.engine import session_scope
from db.store.models import Run
from tests.fake_search import FakeEngine, elasticsearch_reply
from tests.helpers import page_test, pairs_of, shown

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once

KEY = "live-key-Zx81Qw27Er45Ty90"


@pytest.fixture
def fake():
    made: list[FakeEngine] = []

    def make(answer) -> FakeEngine:
        made.append(FakeEngine(answer))
        return made[-1]

    yield make
    for server in made:
        server.close()


def search_and_pool(at, config: dict, filename: str = "live-es.json"):
    at.file_uploader(key="search-config").set_value((filename, json.dumps(config).encode(), "application/json"))
    at.run()
    next(b for b in at.button if b.label == "Search and pool").click().run()
    return at


def test_project_page_pools_a_live_engines_top_k(store, fake, monkeypatch):
    # Seed 000's one query: the engine answers d3 (a known fragment), d99 (new, its text in the reply) and d98
    # (new, no text): d3, d99 and d98 become pairs with the run as their source, d98's waiting for its text
    # (never served until it is imported), and the page says so.
    server = fake(
        lambda request: (
            200,
            elasticsearch_reply([("d3", 9.0, "kept"), ("d99", 8.0, "Returns abroad: 30 days."), ("d98", 7.0, None)]),
        )
    )
    monkeypatch.setenv("QRELKIT_SEARCH_API_KEY", KEY)
    at = page_test(store, "lead_project.py")
    search_and_pool(at, {"template": "elasticsearch", "url": f"{server.root}/shop/_search", "k": 3})
    assert not at.exception and not at.error
    assert [shown(s.value) for s in at.success if "searched" in s.value] == [
        "1 query(ies) searched, 3 hit(s) stored as run live-es, 1 fragment(s) imported and 0 text(s) filled in "
        "from the replies; "
        "2 new pair(s), 1 already pooled."
    ]
    assert any("1 hit(s) of live-es name fragments" in shown(i.value) for i in at.info)
    assert server.requests[0]["headers"]["Authorization"] == f"ApiKey {KEY}"
    with session_scope(store) as s:
        project_id = s.execute(select(Run.project_id).where(Run.name == "live-es")).scalar_one()
        request = s.execute(select(Run.request).where(Run.name == "live-es")).scalar_one()
    assert request["url"] == f"{server.root}/shop/_search" and KEY not in json.dumps(request)
    pairs = pairs_of(store, project_id)
    assert pairs[("q000", "d99")] == (["live-es"], 2)
    assert "live-es" in pairs[("q000", "d3")][0]
    assert pairs[("q000", "d98")] == (["live-es"], 3)


def test_a_refusal_names_the_uploaded_config_and_not_the_key(store, fake, monkeypatch):
    server = fake(lambda request: (401, {"error": f"bad key {KEY}"}))
    monkeypatch.setenv("QRELKIT_SEARCH_API_KEY", KEY)
    at = page_test(store, "lead_project.py")
    search_and_pool(at, {"template": "elasticsearch", "url": f"{server.root}/shop/_search", "size": 3}, "mine.json")
    assert not at.exception
    assert [shown(e.value) for e in at.error] == [
        "Nothing pooled: Mine.json: unknown setting(s) 'size' (known: attempts, auth, body, concurrency, field, "
        "hits, id, k, max_reply_bytes, method, params, score, template, text, timeout, url)."
    ]
    search_and_pool(at, {"template": "elasticsearch", "url": f"{server.root}/shop/_search"})
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 1 and "answered HTTP 401: the credentials were refused or are missing" in errors[0]
    assert KEY not in errors[0]
    with session_scope(store) as s:
        assert "live-es" not in set(s.execute(select(Run.name)).scalars())

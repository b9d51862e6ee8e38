"""`qrelkit pool --search CONFIG` against a local fake engine (http.server on 127.0.0.1) that answers as
Elasticsearch's `_search` and Solr's `select` do: the top-k becomes a stored run with its request (never a
credential) and pairs sourced from it; queries with quotes and backslashes make valid JSON and URLs; a trickling
server ends at the deadline, a flood at the reply cap; a 401 is fatal and says nothing of the key; a wrong path
in the config is named with the query; and a failure stores nothing. The store parts run on SQLite and
PostgreSQL."""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.parse
from pathlib import Path

import pytest
from sqlalchemy import select

from annotator.search_client import SearchClient, SearchConfig, SearchFailed, load_config, render_body, render_url
from db.store.engine import session_scope
from db.store.models import Fragment, Run, RunEntry
from tests.fake_judge import flood, trickle
from tests.fake_search import FakeEngine, elasticsearch_reply
from tests.helpers import pairs_of, run, seed

KEY = "es-key-7Hq2Lm9Xp4Rt8Wz1Vb6Nc3"
QUERIES = {"q1": 'the "quoted" \\ backslash query', "q2": "plain words & more?"}
TEXTS = {"d1": "first known passage", "d2": "second known passage", "d3": "third known passage"}


@pytest.fixture
def engines():
    made: list[FakeEngine] = []

    def make(answer=None, behave=None) -> FakeEngine:
        made.append(FakeEngine(answer, behave))
        return made[-1]

    yield make
    for server in made:
        server.close()


# What each query finds: (id, score, text or None when the engine does not return the field).
FOUND = {
    QUERIES["q1"]: [("d2", 3.5, TEXTS["d2"]), ("d9", 2.0, "a passage only the engine knows"), ("d1", 1.0, TEXTS["d1"])],
    QUERIES["q2"]: [("d3", 5.0, TEXTS["d3"]), ("d7", 4.0, None), ("d1", 0.5, TEXTS["d1"])],
}


def elasticsearch(request: dict) -> tuple[int, object]:
    """Elasticsearch's _search reply: hits.hits[] with _id, _score and _source, `size` hits at most."""
    return 200, elasticsearch_reply(FOUND[request["body"]["query"]["match"]["text"]][: request["body"]["size"]])


def solr(request: dict) -> tuple[int, object]:
    """Solr's select reply (wt=json): response.docs[] with id, score and the stored field (multivalued here)."""
    docs = [
        {"id": doc, "score": score, **({"text": [text]} if text else {})}
        for doc, score, text in FOUND[request["params"]["q"]][: int(request["params"]["rows"])]
    ]
    return 200, {"responseHeader": {"status": 0}, "response": {"numFound": len(docs), "start": 0, "docs": docs}}


def config(tmp_path: Path, name: str = "es-bm25", **settings) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(settings), encoding="utf-8")
    return path


@pytest.fixture
def collection(engine, project):
    seed(engine, project.id, QUERIES, TEXTS)
    return engine


def stored_runs(engine) -> dict[str, dict | None]:
    with session_scope(engine) as s:
        return dict(s.execute(select(Run.name, Run.request)).all())


def entries(engine, name: str) -> list[tuple[str, int, float]]:
    with session_scope(engine) as s:
        run_id = s.execute(select(Run.id).where(Run.name == name)).scalar_one()
        rows = s.execute(
            select(RunEntry.doc_external_id, RunEntry.rank, RunEntry.score)
            .where(RunEntry.run_id == run_id)
            .order_by(RunEntry.query_id, RunEntry.rank)
        ).all()
    return [tuple(r) for r in rows]


def fragment_ids(engine) -> set[str]:
    with session_scope(engine) as s:
        return set(s.execute(select(Fragment.external_id)).scalars())


def test_elasticsearch_top_k_becomes_a_run_with_its_request_and_pairs(
    collection, project, store_url, engines, tmp_path, monkeypatch
):
    server = engines(elasticsearch)
    monkeypatch.setenv("QRELKIT_SEARCH_API_KEY", KEY)
    cfg = config(tmp_path, template="elasticsearch", url=f"{server.root}/passages/_search", k=3)
    code, out, err = run(["pool", "--project", "demo", "--search", str(cfg), "--db", store_url, "--format", "json"])
    assert code == 0, err
    # Each query was sent once, as Elasticsearch reads it, with the key from the environment in the header.
    assert len(server.requests) == 2
    for sent in server.requests:
        assert (sent["method"], sent["path"]) == ("POST", "/passages/_search")
        assert sent["headers"]["Authorization"] == f"ApiKey {KEY}"
        assert sent["body"]["size"] == 3 and sent["body"]["_source"] == ["text"]
    assert sorted(s["body"]["query"]["match"]["text"] for s in server.requests) == sorted(QUERIES.values())
    # The run, named after the config file, holds the top-3 in score order, and its request without the key.
    runs = stored_runs(collection)
    assert set(runs) == {"es-bm25"}
    assert runs["es-bm25"] == {
        "url": f"{server.root}/passages/_search",
        "method": "POST",
        "template": "elasticsearch",
        "params": {},
        "body": {"size": "{k}", "query": {"match": {"text": "{query}"}}, "_source": ["text"]},
        "k": 3,
        "paths": {"hits": "hits.hits", "id": "_id", "score": "_score", "text": "_source.text"},
        "auth": "apikey",
    }
    assert entries(collection, "es-bm25") == [
        ("d2", 1, 3.5),
        ("d9", 2, 2.0),
        ("d1", 3, 1.0),
        ("d3", 1, 5.0),
        ("d7", 2, 4.0),
        ("d1", 3, 0.5),
    ]
    # d9's text came with the reply: imported. d7 came without: a fragment waiting for its text, its pair
    # pooled (never served until the text comes), and said so.
    assert fragment_ids(collection) == {"d1", "d2", "d3", "d7", "d9"}
    assert pairs_of(collection, project.id) == {
        ("q1", "d2"): (["es-bm25"], 1),
        ("q1", "d9"): (["es-bm25"], 2),
        ("q1", "d1"): (["es-bm25"], 3),
        ("q2", "d3"): (["es-bm25"], 1),
        ("q2", "d7"): (["es-bm25"], 2),
        ("q2", "d1"): (["es-bm25"], 3),
    }
    report = json.loads(out)
    assert report["created"] == 6
    assert report["search"] == {
        "run": "es-bm25",
        "queries": 2,
        "hits": 6,
        "queries_without_hits": 0,
        "run_stored": "new",
        "fragments_imported": 1,
        "texts_filled": 0,
        "hits_without_text": 1,
        "requests_sent": 2,
    }
    note = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(note) == 1 and "1 hit(s) of es-bm25" in note[0] and "'_source.text'" in note[0]
    assert KEY not in out + err + json.dumps(runs)
    # Again, under another name: the same run content, the pairs now credit both sources.
    code, out, err = run(
        ["pool", "--project", "demo", "--search", str(cfg), "--name", "es2", "--db", store_url, "--format", "json"]
    )
    assert code == 0, err
    assert json.loads(out)["created"] == 0
    assert pairs_of(collection, project.id)[("q1", "d2")] == (["es-bm25", "es2"], 1)


def test_solr_select_with_basic_auth_from_the_environment(
    collection, project, store_url, engines, tmp_path, monkeypatch
):
    server = engines(solr)
    monkeypatch.setenv("QRELKIT_SEARCH_USER", "pooler")
    monkeypatch.setenv("QRELKIT_SEARCH_PASSWORD", "s3cret-pw")
    cfg = config(tmp_path, "solr", template="solr", url=f"{server.root}/solr/passages/select", k=2)
    code, _, err = run(["pool", "--project", "demo", "--search", str(cfg), "--db", store_url])
    assert code == 0, err
    assert {s["method"] for s in server.requests} == {"GET"}
    # The query travels URL-encoded and arrives as typed: '&', '?', quotes and a backslash intact.
    assert sorted(s["params"]["q"] for s in server.requests) == sorted(QUERIES.values())
    assert {s["params"]["rows"] for s in server.requests} == {"2"}
    token = base64.b64encode(b"pooler:s3cret-pw").decode()
    assert {s["headers"]["Authorization"] for s in server.requests} == {f"Basic {token}"}
    assert pairs_of(collection, project.id) == {
        ("q1", "d2"): (["solr"], 1),
        ("q1", "d9"): (["solr"], 2),
        ("q2", "d3"): (["solr"], 1),
        ("q2", "d7"): (["solr"], 2),  # no text in the reply: it waits for its text
    }
    stored = json.dumps(stored_runs(collection))
    assert "s3cret-pw" not in stored and token not in stored and "pooler" not in stored


def test_a_query_with_quotes_and_backslashes_makes_valid_json():
    query = 'he said "no" \\ then\n{k} left'
    # A body given as a JSON value: filled inside its strings, then serialised.
    body = json.loads(render_body({"size": "{k}", "query": {"match": {"text": "{query}"}}}, query, 7))
    assert body == {"size": 7, "query": {"match": {"text": 'he said "no" \\ then\n{k} left'}}}
    # A body given as one JSON text: {query} filled JSON-escaped, so the result still parses to the query.
    text = render_body('{"q": "{query}", "n": {k}}', query, 7)
    assert json.loads(text) == {"q": query, "n": 7}
    # In a URL: percent-encoded, so '&', '#' and '"' do not end the parameter.
    cfg = SearchConfig(url="http://h/s?q={query}&n={k}", hits="h", id="i", method="GET", k=5)
    url = render_url(cfg, 'a&b #c "d"')
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(url).query) == {"q": ['a&b #c "d"'], "n": ["5"]}


def test_a_trickling_engine_ends_at_the_deadline_and_nothing_is_stored(
    collection, store_url, engines, tmp_path, monkeypatch
):
    server = engines(behave=trickle)
    cfg = config(tmp_path, template="elasticsearch", url=f"{server.root}/p/_search", timeout=0.5, attempts=1)
    started = time.monotonic()
    code, _, err = run(["pool", "--project", "demo", "--search", str(cfg), "--db", store_url])
    assert time.monotonic() - started < 0.5 * 2 + 2.0  # two queries, four in flight: one deadline (+ slack)
    assert code == 2 and "timed out after 1 attempt(s)" in err and err.count("\n") == 1
    assert stored_runs(collection) == {}


def test_a_reply_over_the_cap_is_refused(engines):
    server = engines(behave=flood)
    cfg = SearchConfig(
        url=f"{server.root}/p/_search", hits="hits.hits", id="_id", body={"q": "{query}"}, max_reply_bytes=65536
    )
    client = SearchClient(cfg, env={})
    started = time.monotonic()
    with pytest.raises(SearchFailed, match=r"^query q1: .* larger than 65536 bytes"):
        client.search("q1", "anything")
    assert time.monotonic() - started < 5


def test_401_is_fatal_and_its_message_holds_no_credential(collection, store_url, engines, tmp_path, monkeypatch):
    server = engines(lambda request: (401, {"error": {"reason": f"bad api key {KEY}", "header": KEY[::-1]}}))
    monkeypatch.setenv("QRELKIT_SEARCH_API_KEY", KEY)
    cfg = config(tmp_path, template="opensearch", url=f"{server.root}/p/_search", concurrency=1)
    code, _, err = run(["pool", "--project", "demo", "--search", str(cfg), "--db", store_url])
    assert code == 2
    assert err == (
        f"qrelkit: error: {server.root}/p/_search answered HTTP 401: the credentials were refused or are missing "
        "(set QRELKIT_SEARCH_API_KEY, or QRELKIT_SEARCH_USER and QRELKIT_SEARCH_PASSWORD)\n"
    )
    assert len(server.requests) == 1  # not retried, and the other query never sent
    assert stored_runs(collection) == {}


def test_a_4xx_shows_a_short_excerpt_without_the_key(engines):
    echo = {"error": {"type": "parsing_exception", "reason": f"unknown token near {KEY} and {KEY[::-1]}" + "x" * 500}}
    server = engines(lambda request: (400, echo))
    cfg = SearchConfig(url=f"{server.root}/p/_search", hits="hits.hits", id="_id", body={"q": "{query}"}, auth="apikey")
    with pytest.raises(SearchFailed) as failed:
        SearchClient(cfg, env={"QRELKIT_SEARCH_API_KEY": KEY}).search("q7", "x")
    message = str(failed.value)
    assert message.startswith(f"query q7: {server.root}/p/_search answered HTTP 400: ")
    assert "parsing_exception" in message and KEY not in message and KEY[::-1] not in message
    assert len(message) < 250


@pytest.mark.parametrize(
    ("reply_body", "named"),
    [
        ({"hits": {"total": {"value": 0}}}, "query q1: the reply has nothing at 'hits.hits' (the 'hits' path)"),
        ({"hits": {"hits": [{"_id": "d1", "_score": 1.0}, {"id": "d2"}]}}, "query q1: hit 2 has nothing at '_id'"),
        ({"hits": {"hits": [{"_id": "d1"}]}}, "query q1: hit 1 has nothing at '_score' (the 'score' path)"),
        ({"hits": {"hits": {"_id": "d1"}}}, "query q1: 'hits.hits' in the reply is a dict, not a list"),
    ],
)
def test_a_path_missing_from_the_reply_is_named_with_the_query(
    reply_body, named, collection, store_url, engines, tmp_path
):
    server = engines(lambda request: (200, reply_body))
    cfg = config(tmp_path, template="elasticsearch", url=f"{server.root}/p/_search", concurrency=1)
    code, _, err = run(["pool", "--project", "demo", "--search", str(cfg), "--db", store_url])
    assert code == 2 and err.startswith(f"qrelkit: error: {named}")
    assert stored_runs(collection) == {}


def test_one_failing_query_stores_nothing(collection, store_url, engines, tmp_path):
    def half(request: dict) -> tuple[int, object]:
        if request["body"]["query"]["match"]["text"] == QUERIES["q2"]:
            return 400, {"error": "no such field"}
        return elasticsearch(request)

    server = engines(half)
    cfg = config(tmp_path, template="elasticsearch", url=f"{server.root}/p/_search", k=3)
    code, _, err = run(["pool", "--project", "demo", "--search", str(cfg), "--db", store_url])
    assert code == 2 and "query q2: " in err and "HTTP 400" in err
    assert stored_runs(collection) == {} and fragment_ids(collection) == set(TEXTS)


def test_an_unreachable_engine_is_one_sentence(collection, store_url, engines, tmp_path):
    server = engines(elasticsearch)
    url = f"{server.root}/p/_search"
    server.close()
    cfg = config(tmp_path, template="elasticsearch", url=url, attempts=1)
    code, _, err = run(["pool", "--project", "demo", "--search", str(cfg), "--db", store_url])
    assert (code, err) == (2, f"qrelkit: error: cannot reach {url}: connection refused\n")


def test_retries_a_503_then_succeeds(collection, project, store_url, engines, tmp_path):
    calls = []

    def flaky(request: dict) -> tuple[int, object]:
        calls.append(1)
        return (503, {"error": "busy"}) if len(calls) == 1 else elasticsearch(request)

    server = engines(flaky)
    cfg = config(tmp_path, template="elasticsearch", url=f"{server.root}/p/_search", k=1, concurrency=1)
    code, out, err = run(["pool", "--project", "demo", "--search", str(cfg), "--db", store_url, "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["search"]["requests_sent"] == 3  # two queries, one of them twice
    assert set(pairs_of(collection, project.id)) == {("q1", "d2"), ("q2", "d3")}


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"template": "elasticsearch", "url": "http://h/_search", "api_key": "x"}, "'api_key' looks like a credential"),
        ({"template": "solr", "url": "http://me:pw@h/select"}, "'url' holds a user name or password"),
        (
            {"template": "vespa", "url": "http://h/"},
            "unknown template 'vespa' (known: elasticsearch, opensearch, solr)",
        ),
        ({"url": "http://h/s", "hits": "a", "id": "b", "body": {"q": "fixed"}}, "{query} is in none of"),
        ({"template": "elasticsearch", "url": "http://h/_search", "k": 0}, "'k' must be at least 1, got 0"),
        ({"template": "elasticsearch", "url": "http://h/_search", "sise": 3}, "unknown setting(s) 'sise'"),
    ],
)
def test_a_bad_config_is_refused_in_one_sentence(settings, problem, tmp_path):
    path = config(tmp_path, "bad", **settings)
    with pytest.raises(ValueError) as refused:
        load_config(path)
    assert str(refused.value).startswith(f"{path}: ") and problem in str(refused.value)


def test_a_toml_config_reads_as_the_json_one(tmp_path):
    toml = tmp_path / "es.toml"
    toml.write_text('template = "elasticsearch"\nurl = "http://h:9200/p/_search"\nfield = "body"\nk = 50\n')
    cfg = load_config(toml)
    assert (cfg.k, cfg.text, cfg.hits, cfg.id, cfg.score) == (50, "_source.body", "hits.hits", "_id", "_score")
    assert cfg.body == {"size": "{k}", "query": {"match": {"body": "{query}"}}, "_source": ["body"]}


def test_the_documented_configs_load(tmp_path):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "store.md").read_text(encoding="utf-8")
    section = doc.split("### Pooling from a live search engine")[1].split("\n### ")[0]
    blocks = re.findall(r"```(json|toml)\n(.*?)```", section, flags=re.S)
    assert [kind for kind, _ in blocks] == ["json", "json", "toml"]
    loaded = []
    for n, (kind, text) in enumerate(blocks):
        path = tmp_path / f"doc{n}.{kind}"
        path.write_text(text, encoding="utf-8")
        loaded.append(load_config(path))
    assert (loaded[0].template, loaded[0].k, loaded[0].text) == ("elasticsearch", 100, "_source.text")
    assert (loaded[1].id, loaded[1].text, loaded[1].concurrency, loaded[1].max_reply_bytes) == (
        "doc.id",
        "doc.body",
        2,
        8388608,
    )
    assert (loaded[2].method, loaded[2].hits, loaded[2].params["qf"]) == ("GET", "response.docs", "text")


def test_pool_asks_for_depth_or_a_search_config(collection, store_url, tmp_path):
    assert run(["pool", "--project", "demo", "--db", store_url]) == (
        2,
        "",
        "qrelkit: error: pool needs --depth K (or --search CONFIG, whose k is the depth)\n",
    )
    code, _, err = run(["pool", "--project", "demo", "--db", store_url, "--depth", "5", "--name", "x"])
    assert (code, err) == (2, "qrelkit: error: --name names the run a --search pool stores; give --search CONFIG too\n")
    cfg = config(tmp_path, template="elasticsearch", url="http://127.0.0.1:9/p/_search")
    code, _, err = run(["pool", "--project", "demo", "--db", store_url, "--search", str(cfg), "--bm25", "10"])
    assert (code, err) == (
        2,
        "qrelkit: error: --search pools the engine's run alone: pool stored runs and BM25 in another call\n",
    )


def test_a_later_reply_with_the_text_fills_a_fragment_that_waited(collection, project, store_url, engines, tmp_path):
    server = engines(elasticsearch)
    url = f"{server.root}/p/_search"
    ids_only = config(tmp_path, "ids", template="elasticsearch", url=url, k=3, text=None)
    code, out, err = run(
        ["pool", "--project", "demo", "--search", str(ids_only), "--db", store_url, "--format", "json"]
    )
    assert code == 0, err
    # Without texts, d9 and d7 (the two ids the project lacks) wait for their text.
    assert (json.loads(out)["search"]["fragments_imported"], json.loads(out)["search"]["hits_without_text"]) == (0, 2)
    with_texts = config(tmp_path, "texts", template="elasticsearch", url=url, k=3)
    code, out, err = run(
        ["pool", "--project", "demo", "--search", str(with_texts), "--db", store_url, "--format", "json"]
    )
    assert code == 0, err
    found = json.loads(out)["search"]
    # The second reply carries d9's text (not d7's): d9 is filled in, d7 still waits.
    assert (found["fragments_imported"], found["texts_filled"], found["hits_without_text"]) == (0, 1, 1)
    with session_scope(collection) as s:
        rows = dict(s.execute(select(Fragment.external_id, Fragment.has_text)).all())
        text = s.execute(select(Fragment.text).where(Fragment.external_id == "d9")).scalar_one()
    assert (rows["d9"], rows["d7"], text) == (True, False, "a passage only the engine knows")

"""A live search engine as a pool source (`qrelkit pool --search CONFIG`): each query of the project is sent to
the engine's HTTP endpoint, and the top-k ids, scores and (when the reply carries it) texts of its reply are
read at the paths the config names. Ready templates speak Elasticsearch/OpenSearch `_search` and Solr `select`.

Every request is bounded as the judge's are (annotator.bounded_http: wall-clock deadline, reply cap, retries on
408/429/5xx with back-off, no redirects, key-free error excerpts), and at most `concurrency` are in flight.

Credentials come only from the environment (QRELKIT_SEARCH_API_KEY, or QRELKIT_SEARCH_USER and
QRELKIT_SEARCH_PASSWORD); they go into the Authorization header and nowhere else — a config that holds one is
refused, and what the store keeps of a config (`SearchConfig.request`) has none.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import threading
import time
import tomllib
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from annotator.bounded_http import Endpoint, Failed, Fatal, Hints

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from db.accounts.permissions import Actor
    from db.pooling import PoolReport

KEY_ENV = "QRELKIT_SEARCH_API_KEY"
USER_ENV = "QRELKIT_SEARCH_USER"
PASSWORD_ENV = "QRELKIT_SEARCH_PASSWORD"
K = 100
CONCURRENCY = 4
TIMEOUT = 30.0  # seconds: the wall-clock deadline of one attempt, connect to last byte
ATTEMPTS = 3
MAX_REPLY_BYTES = 16 * 2**20  # a top-1000 reply with each passage's text is a few MiB
AUTH_SCHEMES = {"apikey": "ApiKey", "bearer": "Bearer", "basic": "Basic", "none": ""}
HINTS = Hints(
    cap_option='"max_reply_bytes" in the config',
    url_advice='give the final URL as "url" in the config',
    auth_advice=f"the credentials were refused or are missing (set {KEY_ENV}, or {USER_ENV} and {PASSWORD_ENV})",
    budget_of="query",
)
_PLACEHOLDER = re.compile(r"\{(query|k)\}")
# Words a config key must not hold: a credential goes in the environment, never in a file that may be shared.
_SECRET_WORDS = ("key", "password", "passwd", "secret", "token", "auth_header", "authorization", "user", "headers")


def _elastic(field_name: str) -> dict[str, Any]:
    return {
        "method": "POST",
        "body": {"size": "{k}", "query": {"match": {field_name: "{query}"}}, "_source": [field_name]},
        "hits": "hits.hits",
        "id": "_id",
        "score": "_score",
        "text": f"_source.{field_name}",
        "auth": "apikey",
    }


def _solr(field_name: str) -> dict[str, Any]:
    return {
        "method": "GET",
        # edismax reads any text as words: a quote or a colon in a query is not Lucene syntax there
        "params": {
            "q": "{query}",
            "defType": "edismax",
            "qf": field_name,
            "fl": f"id,score,{field_name}",
            "rows": "{k}",
            "wt": "json",
        },
        "hits": "response.docs",
        "id": "id",
        "score": "score",
        "text": field_name,
        "auth": "basic",
    }


TEMPLATES: dict[str, Callable[[str], dict[str, Any]]] = {
    "elasticsearch": _elastic,
    "opensearch": _elastic,
    "solr": _solr,
}
KEYS = frozenset(
    {
        "template",
        "field",
        "url",
        "method",
        "body",
        "params",
        "k",
        "hits",
        "id",
        "score",
        "text",
        "auth",
        "concurrency",
        "timeout",
        "attempts",
        "max_reply_bytes",
    }
)


class SearchFailed(RuntimeError):
    """The engine could not be searched, or its reply is not what the config says: nothing was stored."""


class Hit(NamedTuple):
    """One result of one query: the engine's id for it, its score and its text when the reply carries one."""

    doc_id: str
    score: float
    text: str | None


@dataclass(frozen=True)
class SearchConfig:
    """What to send for each query and where its results are in the reply (dotted paths, list indices as
    numbers). `{query}` in `url`, `params` or `body` is the query's text (URL-encoded in the URL, JSON-escaped
    in the body); `{k}` is the depth (a body value that is exactly "{k}" becomes the number)."""

    url: str
    hits: str
    id: str
    method: str = "POST"
    body: Any = None
    params: dict[str, str] = field(default_factory=dict)
    k: int = K
    score: str | None = None
    text: str | None = None
    template: str | None = None
    auth: str = "none"
    concurrency: int = CONCURRENCY
    timeout: float = TIMEOUT
    attempts: int = ATTEMPTS
    max_reply_bytes: int = MAX_REPLY_BYTES

    @property
    def endpoint(self) -> str:
        """The URL errors name: scheme, host and path, without a query string that may hold a query."""
        parts = urllib.parse.urlsplit(self.url)
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))

    def request(self) -> dict[str, Any]:
        """What the store keeps with the run (runs.request): endpoint, template and paths, never a credential
        (the config has none, and the header's scheme is all that is said of the one the environment gave)."""
        return {
            "url": self.url,
            "method": self.method,
            "template": self.template,
            "params": dict(self.params),
            "body": self.body,
            "k": self.k,
            "paths": {"hits": self.hits, "id": self.id, "score": self.score, "text": self.text},
            "auth": self.auth,
        }


def load_config(path: str | Path) -> SearchConfig:
    """A search config from a JSON or TOML file (by its suffix: .toml is TOML, anything else JSON), a template's
    defaults under the file's own values; ValueError naming the file and the problem in one sentence."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not TOML ({exc})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a search config is an object of settings, got {type(raw).__name__}")
    return _config(path, raw)


def _config(path: Path, raw: dict[str, Any]) -> SearchConfig:
    secret = sorted(k for k in raw if any(word in k.lower() for word in _SECRET_WORDS))
    if secret:
        raise ValueError(
            f"{path}: {', '.join(map(repr, secret))} looks like a credential, and a config holds none: "
            f"set {KEY_ENV}, or {USER_ENV} and {PASSWORD_ENV}, in the environment"
        )
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise ValueError(
            f"{path}: unknown setting(s) {', '.join(map(repr, unknown))} (known: {', '.join(sorted(KEYS))})"
        )
    template = raw.get("template")
    settings: dict[str, Any] = {}
    if template is not None:
        if template not in TEMPLATES:
            raise ValueError(f"{path}: unknown template {template!r} (known: {', '.join(TEMPLATES)})")
        settings = TEMPLATES[template](str(raw.get("field", "text")))
    elif "field" in raw:
        raise ValueError(f"{path}: 'field' names the text field of a template; give 'template' too")
    settings.update({k: v for k, v in raw.items() if k != "field"})
    for need in ("url", "hits", "id"):
        if not isinstance(settings.get(need), str) or not settings[need].strip():
            raise ValueError(f"{path}: {need!r} is missing (a template gives 'hits' and 'id'; 'url' is always yours)")
    url = settings["url"]
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{path}: 'url' must start with http:// or https:// and name a host, got {url!r}")
    if "@" in parts.netloc:
        raise ValueError(
            f"{path}: 'url' holds a user name or password; credentials come from {USER_ENV} and {PASSWORD_ENV}"
        )
    method = str(settings.get("method", "POST")).upper()
    if method not in ("GET", "POST"):
        raise ValueError(f"{path}: 'method' is GET or POST, got {settings.get('method')!r}")
    body = settings.get("body")
    if body is not None and method == "GET":
        raise ValueError(f"{path}: a GET request has no 'body'; put the query in 'url' or 'params'")
    params = settings.get("params") or {}
    if not isinstance(params, dict) or not all(isinstance(v, str | int | float) for v in params.values()):
        raise ValueError(f"{path}: 'params' is an object of query-string parameters with text values")
    if "{query}" not in json.dumps([url, params, body]):
        raise ValueError(f"{path}: {{query}} is in none of 'url', 'params' and 'body': every query would be the same")
    auth = str(settings.get("auth", "none")).lower()
    if auth not in AUTH_SCHEMES:
        raise ValueError(f"{path}: 'auth' is one of {', '.join(AUTH_SCHEMES)}, got {settings.get('auth')!r}")
    numbers: dict[str, Any] = {}
    for name, kind, least in (
        ("k", int, 1),
        ("concurrency", int, 1),
        ("attempts", int, 1),
        ("max_reply_bytes", int, 1),
        ("timeout", float, 0.001),
    ):
        value = settings.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and value != int(value)):
            raise ValueError(f"{path}: {name!r} must be a number, got {value!r}")
        if value < least:
            raise ValueError(f"{path}: {name!r} must be at least {least:g}, got {value!r}")
        numbers[name] = kind(value)
    for name in ("score", "text"):
        if settings.get(name) is not None and not isinstance(settings[name], str):
            raise ValueError(f"{path}: {name!r} is a path in the reply (text) or null, got {settings[name]!r}")
    return SearchConfig(
        url=url,
        hits=settings["hits"],
        id=settings["id"],
        method=method,
        body=body,
        params={k: str(v) for k, v in params.items()},
        score=settings.get("score"),
        text=settings.get("text"),
        template=template,
        auth=auth,
        **numbers,
    )


def credentials(config: SearchConfig, env: dict[str, str] | None = None) -> tuple[dict[str, str], tuple[str, ...]]:
    """The Authorization header the environment gives (none when it gives nothing) and every secret in it, for
    redaction. The config's `auth` picks the scheme for QRELKIT_SEARCH_API_KEY (ApiKey, Bearer); user and
    password always go as Basic."""
    env = dict(os.environ) if env is None else env
    key = env.get(KEY_ENV, "").strip()
    user, password = env.get(USER_ENV, "").strip(), env.get(PASSWORD_ENV, "")
    if user and password:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return {"Authorization": f"Basic {token}"}, (token, password, f"{user}:{password}")
    if key:
        scheme = AUTH_SCHEMES[config.auth] if config.auth in ("apikey", "bearer") else "Bearer"
        return {"Authorization": f"{scheme} {key}"}, (key,)
    return {}, ()


def _substitute(text: str, query: str, k: int, quote: Callable[[str], str]) -> str:
    """`text` with {query} and {k} filled in one pass, so a query holding "{k}" stays as typed."""
    return _PLACEHOLDER.sub(lambda m: quote(query) if m.group(1) == "query" else str(k), text)


def render_body(body: Any, query: str, k: int) -> bytes:
    """The request body for `query`: a JSON value from the config with `{query}` and `{k}` filled in its strings
    (a string that is exactly "{k}" becomes the number), then serialised, so any query makes valid JSON. A body
    given as one string is a JSON text template: `{query}` is filled JSON-escaped and the result must parse."""
    if isinstance(body, str):
        text = _substitute(body, query, k, lambda q: json.dumps(q)[1:-1])
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the body template does not make JSON ({exc.msg} at character {exc.pos})") from None
        return text.encode("utf-8")

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return k if value == "{k}" else _substitute(value, query, k, lambda q: q)
        if isinstance(value, list):
            return [fill(v) for v in value]
        if isinstance(value, dict):
            return {fill(key): fill(v) for key, v in value.items()}
        return value

    return json.dumps(fill(body), ensure_ascii=False).encode("utf-8")


def render_url(config: SearchConfig, query: str) -> str:
    """The URL for `query`: `{query}` URL-encoded in the URL and the parameters, the parameters appended."""
    url = _substitute(config.url, query, config.k, lambda q: urllib.parse.quote(q, safe=""))
    if not config.params:
        return url
    params = {k: _substitute(v, query, config.k, lambda q: q) for k, v in config.params.items()}
    return url + ("&" if "?" in url else "?") + urllib.parse.urlencode(params)


def _at(value: Any, path: str) -> Any:
    """The value at a dotted path (numbers index lists); KeyError when any step is missing."""
    for step in path.split("."):
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.lstrip("-").isdigit() and -len(value) <= int(step) < len(value):
            value = value[int(step)]
        else:
            raise KeyError(step)
    return value


def _text_of(value: Any) -> str | None:
    """A text field as one string: a list of strings (Solr's multivalued fields) joined by newlines."""
    if isinstance(value, list):
        value = "\n".join(str(v) for v in value if v is not None)
    return str(value) if value is not None and str(value).strip() else None


def extract(reply: Any, config: SearchConfig, query_id: str) -> list[Hit]:
    """The first k hits of one reply, in the engine's order; SearchFailed naming the path and the query when the
    reply is not what the config says. Without a score path, scores descend with the engine's order."""
    try:
        hits = _at(reply, config.hits)
    except KeyError:
        raise SearchFailed(f"query {query_id}: the reply has nothing at {config.hits!r} (the 'hits' path)") from None
    if not isinstance(hits, list):
        raise SearchFailed(f"query {query_id}: {config.hits!r} in the reply is a {type(hits).__name__}, not a list")
    out: list[Hit] = []
    seen: set[str] = set()
    for n, hit in enumerate(hits[: config.k], start=1):
        try:
            raw_id = _at(hit, config.id)
        except KeyError:
            raise SearchFailed(f"query {query_id}: hit {n} has nothing at {config.id!r} (the 'id' path)") from None
        if not isinstance(raw_id, str | int) or isinstance(raw_id, bool) or not str(raw_id).strip():
            raise SearchFailed(f"query {query_id}: hit {n}'s id at {config.id!r} is {raw_id!r}, not an id")
        doc = str(raw_id)
        if doc in seen:
            raise SearchFailed(f"query {query_id}: the reply lists {doc!r} twice")
        seen.add(doc)
        if config.score is None:
            score = float(len(hits) - n + 1)
        else:
            try:
                value = _at(hit, config.score)
            except KeyError:
                raise SearchFailed(
                    f"query {query_id}: hit {n} has nothing at {config.score!r} (the 'score' path)"
                ) from None
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise SearchFailed(f"query {query_id}: hit {n}'s score at {config.score!r} is {value!r}, not a number")
            score = float(value)
        text = None
        if config.text is not None:
            try:
                text = _text_of(_at(hit, config.text))
            except KeyError:  # a document without that field: no text to import, like a reply that has none
                text = None
        out.append(Hit(doc, score, text))
    return out


@dataclass
class SearchClient:
    """Searches one engine for many queries within the config's bounds."""

    config: SearchConfig
    env: dict[str, str] | None = None
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def __post_init__(self) -> None:
        self.headers, secrets = credentials(self.config, self.env)
        self.headers = {"Accept": "application/json", **self.headers}
        self.endpoint = Endpoint(
            self.config.endpoint,
            HINTS,
            self.config.timeout,
            self.config.attempts,
            self.config.max_reply_bytes,
            secrets=secrets,
            sleep=self.sleep,
            rng=self.rng,
        )

    def requests_sent(self) -> int:
        """Requests sent so far, retries included."""
        return self.endpoint.sent.value

    def search(self, query_id: str, query: str) -> list[Hit]:
        """One query's top-k hits; SearchFailed in one sentence when the engine cannot answer it."""
        headers = dict(self.headers)
        body = None
        if self.config.body is not None:
            try:
                body = render_body(self.config.body, query, self.config.k)
            except ValueError as exc:
                raise SearchFailed(f"query {query_id}: {exc}") from None
            headers["Content-Type"] = "application/json"
        try:
            reply = self.endpoint.request_json(
                body, headers, method=self.config.method, url=render_url(self.config, query)
            )
        except Fatal as exc:
            raise SearchFailed(str(exc)) from None
        except Failed as exc:
            raise SearchFailed(f"query {query_id}: {exc}") from None
        return extract(reply, self.config, query_id)

    def search_all(
        self, queries: Sequence[tuple[str, str]], progress: Callable[[], None] | None = None
    ) -> dict[str, list[Hit]]:
        """Every (query id, text)'s hits, at most `concurrency` requests in flight; the first failure stops the
        rest (no new request is sent; those in flight end within their deadline) and is raised."""
        done = progress or (lambda: None)
        stop = threading.Event()

        def task(query_id: str, text: str) -> list[Hit] | None:
            if stop.is_set():
                return None
            try:
                return self.search(query_id, text)
            except BaseException:
                stop.set()  # in the worker itself, before it takes the next query
                raise

        out: dict[str, list[Hit]] = {}
        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            futures = {pool.submit(task, qid, text): qid for qid, text in queries}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    error = future.exception()
                    if error is not None:
                        for other in pending:
                            other.cancel()
                        raise error
                    found = future.result()
                    if found is not None:
                        out[futures[future]] = found
                        done()
        return {qid: out[qid] for qid, _ in queries}


def pool_from_search(
    engine: Engine,
    project: str,
    config_path: str | Path,
    name: str | None = None,
    depth: int | None = None,
    *,
    actor: Actor,
    progress: Callable[[int], Callable[[], None]] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[PoolReport, str | None]:
    """Search the engine `config_path` names for every query of the project, store the top-k as the run `name`
    (default: the config file's name without suffix) with its request, and pool its top-`depth` (default k):
    the CLI's and the Project page's one path. `progress(total)` gives the callback each answered query calls.
    Returns the report and, when some hits name fragments the project has no text for and came without one,
    the sentence that says so (else None). Nothing is stored when any query fails."""
    from db.search_pool import pool_search
    from db.store.frames import queries_frame

    config = load_config(config_path)
    frame = queries_frame(engine, project)
    queries = list(zip(frame["query_id"], frame["text"], strict=True))
    client = SearchClient(config, env=env)
    hits = client.search_all(queries, progress(len(queries)) if progress else None)
    name = name or Path(config_path).stem
    report = pool_search(
        engine, project, name, hits, config.request(), config.k if depth is None else depth, actor=actor
    )
    report.search["requests_sent"] = client.requests_sent()
    missing = report.search.get("hits_without_text")
    if not missing:
        return report, None
    where = f"at {config.text!r}" if config.text else "(the config names no 'text' path)"
    return report, (
        f"{missing} hit(s) of {name} name fragments this project has no text for and the reply carried none "
        f"{where}: they wait as fragments without a text, pooled but never served; import their texts "
        "(`qrelkit import fragments FILE`)"
    )

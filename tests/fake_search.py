"""A fake search engine on 127.0.0.1 (http.server in a thread), shared by the live-search pooling tests: each
reply is what `answer(request)` returns as (status, JSON-able body), or what `behave(handler)` writes (trickle,
flood from tests.fake_judge); every request is kept (method, path, query parameters, headers, JSON body)."""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.fake_judge import reply, start


class FakeEngine:
    """A search endpoint at `root` (http://127.0.0.1:PORT) answering every path."""

    def __init__(
        self,
        answer: Callable[[dict], tuple[int, object]] | None = None,
        behave: Callable[[BaseHTTPRequestHandler], None] | None = None,
    ) -> None:
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def handle_one(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = urllib.parse.urlsplit(self.path)
                seen = {
                    "method": method,
                    "path": parts.path,
                    "params": dict(urllib.parse.parse_qsl(parts.query)),
                    "headers": dict(self.headers),
                    "body": json.loads(raw) if raw else None,
                }
                outer.requests.append(seen)
                with contextlib.suppress(OSError):  # the client gave up (its deadline or cap): expected here
                    if behave is not None:
                        behave(self)
                    elif answer is not None:
                        status, body = answer(seen)
                        reply(self, status, json.dumps(body).encode())

            def do_POST(self) -> None:
                self.handle_one("POST")

            def do_GET(self) -> None:
                self.handle_one("GET")

            def log_message(self, *args) -> None:
                pass

        self.httpd, api = start(Handler)
        self.root = api.removesuffix("/v1")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def elasticsearch_reply(found: list[tuple[str, float, str | None]], field: str = "text") -> dict:
    """Elasticsearch's _search reply for (id, score, text or None) hits: hits.hits[] with _id, _score, _source."""
    hits = [
        {"_index": "passages", "_id": doc, "_score": score, "_source": {field: text} if text else {}}
        for doc, score, text in found
    ]
    top = max((score for _, score, _ in found), default=None)
    return {"took": 1, "timed_out": False, "hits": {"total": {"value": len(hits)}, "max_score": top, "hits": hits}}

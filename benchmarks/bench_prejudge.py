"""Benchmark `prejudge`: throughput against a local chat-completions server with a fixed answer latency, at
several concurrencies, then a second (fully cached) run — what the store path and the cache cost per pair.

    python benchmarks/bench_prejudge.py [--pairs 2000] [--latency 0.02] [--concurrency 1 4 16]

Writes only to a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def serve(latency: float) -> tuple[ThreadingHTTPServer, str]:
    """A chat-completions server that answers `Grade: 2` after `latency` seconds."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(latency)
            data = json.dumps(
                {
                    "choices": [{"message": {"role": "assistant", "content": "Grade: 2"}}],
                    "usage": {"prompt_tokens": 500, "completion_tokens": 5},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def build(url: str, pairs: int) -> None:
    """A project of `pairs` pairs (20 fragments per query) with the bundled guideline."""
    import sqlalchemy as sa

    from db.accounts.permissions import OPERATOR
    from db.projects import BUNDLED_GUIDELINE, add_guideline, create_project
    from db.store.models import Fragment, Pair, Query, utcnow
    from db.store.schema import init_db

    engine = init_db(url)
    project = create_project(engine, "bench", actor=OPERATOR)
    add_guideline(engine, "bench", BUNDLED_GUIDELINE.read_text(encoding="utf-8"), actor=OPERATOR)
    queries, now = max(1, pairs // 20), utcnow()
    with engine.begin() as conn:
        conn.execute(
            sa.insert(Query.__table__),
            [{"project_id": project.id, "external_id": f"q{q}", "text": f"query number {q}"} for q in range(queries)],
        )
        conn.execute(
            sa.insert(Fragment.__table__),
            [
                {
                    "project_id": project.id,
                    "external_id": f"f{i}",
                    "text": f"fragment {i} " * 40,
                    "content_hash": f"h{i}",
                }
                for i in range(pairs)
            ],
        )
        qid = dict(conn.execute(sa.select(Query.external_id, Query.id)).all())
        fid = dict(conn.execute(sa.select(Fragment.external_id, Fragment.id)).all())
        conn.execute(
            sa.insert(Pair.__table__),
            [
                {
                    "project_id": project.id,
                    "query_id": qid[f"q{i % queries}"],
                    "fragment_id": fid[f"f{i}"],
                    "created_at": now,
                }
                for i in range(pairs)
            ],
        )
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds the server takes per answer")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()

    from annotator.judge_client import ChatJudge
    from annotator.judge_run import prejudge
    from db.accounts.permissions import OPERATOR
    from db.projects import get_project
    from db.store.engine import get_engine
    from guidelines import JUDGE_PROMPT

    server, base = serve(args.latency)
    template = JUDGE_PROMPT.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as folder:
        for n in args.concurrency:
            url = f"sqlite:///{Path(folder) / f'bench-{n}.db'}"
            build(url, args.pairs)
            engine = get_engine(url)
            judge = ChatJudge(base, "bench-model", template, get_project(engine, "bench").labels)
            first = prejudge(engine, "bench", judge, model="bench-model", concurrency=n, actor=OPERATOR)
            again = prejudge(engine, "bench", judge, model="bench-model", concurrency=n, actor=OPERATOR)
            ideal = args.pairs * args.latency / n
            print(
                f"concurrency {n:>3}: {first.pairs} pairs in {first.seconds:6.2f} s "
                f"({first.pairs / first.seconds:7.1f} pairs/s; server latency alone {ideal:6.2f} s), "
                f"{first.prompt_tokens + first.completion_tokens} tokens; cached rerun {again.seconds:5.2f} s "
                f"with {again.called} calls"
            )
            engine.dispose()
    server.shutdown()


if __name__ == "__main__":
    main()

"""Import benchmark: a TREC-DL-2019-sized pool as the field ships it, into SQLite and PostgreSQL.

    python3 benchmarks/bench_import.py [--engines sqlite,postgresql] [--passages 9000] [--queries 43]
                                       [--depth 1000] [--qrels 9000]

Generated files in the shipped layouts: msmarco-test2019-queries.tsv (qid<TAB>text, no header), collection.tsv
(pid<TAB>passage, no header, ~330 characters a passage like MS MARCO's), a 1,000-deep TREC run (43k lines) and
NIST-style qrels (9k lines, grades 0-3) imported as the grades of annotator `nist`. Prints the seconds of each
import (median of --repeat fresh databases) and the total. Target (issue 16): seconds, not minutes.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from db.accounts.permissions import OPERATOR
from db.imports import JudgmentsSource, import_fragments, import_judgments, import_queries, import_run
from db.projects import create_project
from db.store.engine import get_engine
from db.store.schema import init_db

PG_URL = os.environ.get("QRELKIT_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
VOCABULARY = (
    "the of and to in is was for on that with as by at from his an were are which this be or has also had "
    "not first one their its after new who they two her she been other when time during there into school "
    "more may years over only year most would world city some where between later three state such then "
    "national used made known under many university united while part season team these american than film "
    "second born south became states war through being including both well"
)
WORDS = VOCABULARY.split()


def write_pool(tmp: Path, passages: int, queries: int, depth: int, qrels: int, seed: int = 0) -> dict[str, Path]:
    """The four files, seeded: every query's run holds `depth` passages; the qrels sample from those runs."""
    rng = random.Random(seed)
    pids = rng.sample(range(8_841_823), passages)
    qids = rng.sample(range(1_000_000, 1_200_000), queries)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    files = {name: tmp / name for name in ("queries.tsv", "collection.tsv", "run.trec", "qrels.txt")}
    files["queries.tsv"].write_text("".join(f"{q}\t{text(6)}\n" for q in qids), encoding="utf-8")
    files["collection.tsv"].write_text("".join(f"{p}\t{text(60)}\n" for p in pids), encoding="utf-8")
    ranked = {q: rng.sample(pids, min(depth, passages)) for q in qids}
    with files["run.trec"].open("w", encoding="utf-8") as fh:
        for q, docs in ranked.items():
            fh.writelines(f"{q} Q0 {d} {r} {30.0 - r * 0.01:.4f} bm25\n" for r, d in enumerate(docs, 1))
    per_query = qrels // queries
    with files["qrels.txt"].open("w", encoding="utf-8") as fh:
        for q, docs in ranked.items():
            fh.writelines(f"{q} 0 {d} {rng.choice((0, 0, 0, 1, 1, 2, 3))}\n" for d in docs[:per_query])
    return files


def _database(kind: str, tmp: Path) -> tuple[str, object]:
    """A fresh database URL and a function that drops it."""
    if kind == "sqlite":
        path = tmp / f"bench-{uuid.uuid4().hex[:8]}.db"
        return f"sqlite:///{path}", lambda: path.unlink(missing_ok=True)
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")

    def drop() -> None:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()

    return f"{PG_URL}?options=-csearch_path%3D{schema}", drop


def run_once(kind: str, files: dict[str, Path], tmp: Path) -> dict[str, float]:
    """Seconds of each import into a fresh database of `kind`."""
    url, drop = _database(kind, tmp)
    try:
        engine = init_db(url)
        create_project(engine, "dl19", actor=OPERATOR)
        steps = (
            ("queries", lambda: import_queries(engine, "dl19", files["queries.tsv"], actor=OPERATOR)),
            ("fragments", lambda: import_fragments(engine, "dl19", files["collection.tsv"], actor=OPERATOR)),
            ("run", lambda: import_run(engine, "dl19", files["run.trec"], actor=OPERATOR)),
            (
                "judgments",
                lambda: import_judgments(
                    engine, "dl19", files["qrels.txt"], actor=OPERATOR, source=JudgmentsSource("nist")
                ),
            ),
        )
        out = {}
        for label, call in steps:
            start = time.perf_counter()
            report = call()
            out[label] = time.perf_counter() - start
            assert report.created, (label, report)
        engine.dispose()
        get_engine.cache_clear()
        return out
    finally:
        drop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--passages", type=int, default=9000)
    parser.add_argument("--queries", type=int, default=43)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--qrels", type=int, default=9000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        files = write_pool(tmp, args.passages, args.queries, args.depth, args.qrels)
        lines = {k: sum(1 for _ in p.open(encoding="utf-8")) for k, p in files.items()}
        print(
            f"pool: {lines['queries.tsv']} queries, {lines['collection.tsv']} passages, {lines['run.trec']} run "
            f"lines, {lines['qrels.txt']} qrels"
        )
        for kind in args.engines.split(","):
            runs = [run_once(kind, files, tmp) for _ in range(args.repeat)]
            medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            total = statistics.median(sum(r.values()) for r in runs)
            print(
                f"{kind:<10} "
                + "  ".join(f"{k} {v:.2f} s" for k, v in medians.items())
                + f"  total {total:.2f} s (median of {args.repeat})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

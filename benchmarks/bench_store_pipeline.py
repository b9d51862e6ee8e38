"""Store pipeline benchmark: import 100k fragments + 1k queries + a 1M-line run and pool at depth 20 (target
< 60 s on SQLite), then a release over 1M judgments (target < 30 s). Prints each stage and the medians.

    python3 benchmarks/bench_store_pipeline.py [--db URL] [--repeats 2] [--fragments 100000] ...
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert, select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from db.accounts.permissions import OPERATOR
from db.imports import import_fragments, import_queries, import_run
from db.pooling import pool
from db.projects import create_project
from db.releases import create_release
from db.store.engine import get_engine, session_scope
from db.store.models import Fragment, Judgment, Pair, Query, User, utcnow
from db.store.schema import init_db

POOL_TARGET_S = 60.0
RELEASE_TARGET_S = 30.0


def write_inputs(folder: Path, n_frag: int, n_query: int, per_query: int, seed: int) -> dict[str, Path]:
    """Synthetic corpus, queries and a TREC run (`per_query` ranked fragments per query)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)]
    paths = {"fragments": folder / "fragments.jsonl", "queries": folder / "queries.jsonl", "run": folder / "run.trec"}
    with paths["fragments"].open("w") as fh:
        for i in range(n_frag):
            text = " ".join(rng.choices(words, k=40))
            fh.write(json.dumps({"id": f"f{i}", "doc_id": f"doc{i // 4}", "title": f"title {i}", "text": text}) + "\n")
    with paths["queries"].open("w") as fh:
        for q in range(n_query):
            fh.write(json.dumps({"id": f"q{q}", "text": " ".join(rng.choices(words, k=5))}) + "\n")
    with paths["run"].open("w") as fh:
        for q in range(n_query):
            docs = rng.sample(range(n_frag), per_query)
            fh.writelines(f"q{q} Q0 f{d} {r} {1000.0 - r / 10:.3f} bench\n" for r, d in enumerate(docs, start=1))
    return paths


def timed(label: str, func, *args, **kwargs):
    """Run one stage and print how long it took."""
    start, cpu = time.perf_counter(), time.process_time()
    out = func(*args, **kwargs)
    took = time.perf_counter() - start
    print(f"  {label:<40} {took:7.2f} s wall {time.process_time() - cpu:7.2f} s cpu", flush=True)
    return out, took


def seed_judgments(engine, project_id: int, n_judgments: int, annotators: int, seed: int) -> None:
    """Bulk-store pairs and judgments (n_judgments / annotators pairs, each graded by every annotator)."""
    rng = random.Random(seed)
    with session_scope(engine, write=True) as s:
        queries = s.execute(select(Query.id).where(Query.project_id == project_id).order_by(Query.id)).scalars().all()
        frags = (
            s.execute(select(Fragment.id).where(Fragment.project_id == project_id).order_by(Fragment.id))
            .scalars()
            .all()
        )
        existing = set(s.execute(select(Pair.query_id, Pair.fragment_id).where(Pair.project_id == project_id)).all())
        now = utcnow()
        users = []
        for a in range(annotators):
            users.append(
                s.execute(
                    insert(User.__table__).returning(User.__table__.c.id),
                    {"username": f"bench{a}", "role": "annotator", "active": True, "created_at": now},
                ).scalar_one()
            )
        n_pairs = n_judgments // annotators
        per_query = -(-n_pairs // len(queries))
        rows = []
        for qi, qid in enumerate(queries):
            start = (qi * per_query) % len(frags)
            for j in range(per_query):
                fid = frags[(start + j) % len(frags)]
                if len(rows) + len(existing) < n_pairs and (qid, fid) not in existing:
                    rows.append({"project_id": project_id, "query_id": qid, "fragment_id": fid, "created_at": now})
        s.execute(insert(Pair.__table__), rows)
        pair_ids = s.execute(select(Pair.id).where(Pair.project_id == project_id)).scalars().all()[:n_pairs]
        batch = []
        for pid in pair_ids:
            base = rng.choice((0, 0, 0, 1, 1, 2, 3))
            for uid in users:
                grade = min(3, max(0, base + rng.choice((-1, 0, 0, 0, 1))))
                batch.append(
                    {
                        "project_id": project_id,
                        "pair_id": pid,
                        "user_id": uid,
                        "grade": grade,
                        "revision": 1,
                        "created_at": now,
                        "updated_at": now,
                    }
                )
            if len(batch) >= 100_000:
                s.execute(insert(Judgment.__table__), batch)
                batch = []
        if batch:
            s.execute(insert(Judgment.__table__), batch)


def one_round(url: str, args: argparse.Namespace, inputs: dict[str, Path]) -> tuple[float, list[float]]:
    """Import + pool (timed together) and two releases over the judgments; returns (pool total, releases)."""
    engine = init_db(url)
    create_project(engine, "bench", actor=OPERATOR)
    print(f"pipeline on {engine.dialect.name}:")
    _, t1 = timed("import queries", import_queries, engine, "bench", inputs["queries"], actor=OPERATOR)
    _, t2 = timed("import fragments", import_fragments, engine, "bench", inputs["fragments"], actor=OPERATOR)
    _, t3 = timed(
        "import run (1 line per entry)", import_run, engine, "bench", inputs["run"], name="run", actor=OPERATOR
    )
    report, t4 = timed(f"pool depth {args.depth}", pool, engine, "bench", args.depth, actor=OPERATOR)
    print(f"  pairs created: {report.created}")
    total = t1 + t2 + t3 + t4
    print(f"  {'import + pool total':<40} {total:7.2f} s  (target < {POOL_TARGET_S:.0f} s)")
    bm25, _ = timed(
        f"pool + BM25 top-{args.depth} for every query",
        pool,
        engine,
        "bench",
        args.depth,
        bm25=args.depth,
        actor=OPERATOR,
    )
    print(f"  BM25 pairs created: {bm25.per_source['bm25']['created']} (not part of the target)")
    with session_scope(engine) as s:
        project_id = s.execute(select(Query.project_id).limit(1)).scalar_one()
    timed(
        f"seed {args.judgments:,} judgments (not part of the target)",
        seed_judgments,
        engine,
        project_id,
        args.judgments,
        args.annotators,
        args.seed,
    )
    releases = []
    for _ in range(2):
        info, took = timed("release (consensus, card, files, runs)", create_release, engine, "bench", actor=OPERATOR)
        print(f"    v{info.version}: {info.card['counts']}")
        releases.append(took)
    engine.dispose()
    get_engine.cache_clear()
    return total, releases


def main() -> int:
    """Run the rounds and print medians against the targets."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", help="database URL (default: a fresh SQLite file per round)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--fragments", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--run-depth", type=int, default=1_000, help="run lines per query (1k × 1k = 1M lines)")
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--judgments", type=int, default=1_000_000)
    parser.add_argument("--annotators", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inputs = write_inputs(folder, args.fragments, args.queries, args.run_depth, args.seed)
        pools, releases = [], []
        for i in range(args.repeats):
            url = args.db or f"sqlite:///{folder / f'bench{i}.db'}"
            total, rel = one_round(url, args, inputs)
            pools.append(total)
            releases.extend(rel)
    pool_median, release_median = statistics.median(pools), statistics.median(releases)
    print(
        f"median import+pool: {pool_median:.2f} s (target {POOL_TARGET_S:.0f} s, "
        f"{pool_median / POOL_TARGET_S:.2f}× of budget)"
    )
    print(
        f"median release over {args.judgments:,} judgments: {release_median:.2f} s (target "
        f"{RELEASE_TARGET_S:.0f} s, {release_median / RELEASE_TARGET_S:.2f}× of budget)"
    )
    return 0 if pool_median < POOL_TARGET_S and release_median < RELEASE_TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())

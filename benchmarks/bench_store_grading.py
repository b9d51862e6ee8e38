"""Store benchmark: next_pair / record_judgment latency with 1M judgments stored (SQLite and PostgreSQL), and the
import benchmark (100k fragments + 1k queries + a 1M-line run, then pooling at depth 20) on SQLite.

    python3 benchmarks/bench_store_grading.py [--judgments 1000000] [--engines sqlite,postgresql] [--samples 400]
                                              [--skip-imports] [--skip-judging]

Targets (issue 4): p95 < 10 ms for both operations on both engines; import + pool < 60 s on SQLite.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from db.accounts.permissions import OPERATOR
from db.grading import next_pair, record_judgment
from db.store.engine import get_engine
from db.store.schema import init_db

PG_URL = os.environ.get("QRELKIT_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
TS = "2026-01-01 00:00:00"
UNJUDGED_PER_USER = 100


def _bulk(engine: sa.Engine, table: str, columns: tuple[str, ...], rows) -> None:
    """Fast fixture loading: sqlite3 executemany or PostgreSQL COPY on the raw DBAPI connection."""
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        if engine.dialect.name == "sqlite":
            cur.execute("BEGIN")
            cur.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows
            )
        else:
            with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        raw.commit()
    finally:
        raw.close()


def build(engine: sa.Engine, n_judgments: int, n_users: int = 100, overlap: int = 2) -> None:
    """One project, 1000 queries, n_judgments/overlap pairs each assigned to `overlap` of n_users annotators,
    all judged (with a history row each) except the last UNJUDGED_PER_USER of every queue."""
    n_pairs = n_judgments // overlap + n_users * UNJUDGED_PER_USER // overlap
    n_queries, per_query = 1000, -(-n_pairs // 1000)
    true, false = (1, 0) if engine.dialect.name == "sqlite" else (True, False)
    _bulk(
        engine,
        "projects",
        ("id", "name", "scale_min", "scale_max", "overlap", "overlap_fraction", "agreement_threshold", "created_at"),
        [(1, "bench", 0, 3, 2, 1.0, 0.6, TS)],
    )
    _bulk(
        engine,
        "users",
        ("id", "username", "role", "active", "created_at"),
        [(u, f"ann{u}", "annotator", true, TS) for u in range(1, n_users + 1)],
    )
    _bulk(
        engine,
        "queries",
        ("id", "project_id", "external_id", "text"),
        [(q, 1, f"q{q}", f"query number {q}") for q in range(1, n_queries + 1)],
    )
    _bulk(
        engine,
        "fragments",
        ("id", "project_id", "external_id", "text", "content_hash"),
        ((f, 1, f"f{f}", f"fragment text {f}", f"{f:064x}") for f in range(1, n_pairs + 1)),
    )
    _bulk(
        engine,
        "pairs",
        ("id", "project_id", "query_id", "fragment_id", "created_at"),
        ((p, 1, (p - 1) // per_query + 1, p, TS) for p in range(1, n_pairs + 1)),
    )
    positions = [0] * (n_users + 1)
    queues: list[list[int]] = [[] for _ in range(n_users + 1)]

    def assignments():
        aid = 0
        for p in range(1, n_pairs + 1):
            for k in range(overlap):
                user = (p * overlap + k) % n_users + 1
                positions[user] += 1
                queues[user].append(p)
                aid += 1
                yield aid, 1, p, user, positions[user], TS

    rows = list(assignments())
    judged = {u: set(q[:-UNJUDGED_PER_USER]) for u, q in enumerate(queues) if u}
    _bulk(
        engine,
        "assignments",
        ("id", "project_id", "pair_id", "user_id", "position", "created_at", "done"),
        [(*r, true if r[2] in judged[r[3]] else false) for r in rows],
    )
    jrows = [(1, r[2], r[3], (r[2] + r[3]) % 4, 1, TS, TS) for r in rows if r[2] in judged[r[3]]]
    _bulk(
        engine,
        "judgments",
        ("project_id", "pair_id", "user_id", "grade", "revision", "created_at", "updated_at"),
        jrows,
    )
    _bulk(
        engine,
        "judgment_history",
        ("project_id", "pair_id", "user_id", "action", "new_grade", "changed_at"),
        [(1, p, u, "create", g, TS) for _, p, u, g, *_ in jrows],
    )
    with engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
        if engine.dialect.name == "postgresql":
            for table in ("projects", "users", "queries", "fragments", "pairs", "assignments", "judgments"):
                conn.exec_driver_sql(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
                )


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def measure(engine: sa.Engine, samples: int, n_users: int = 100) -> dict[str, list[float]]:
    """Annotators in random order: next_pair, then grade it (a new judgment); every other time also re-grade a
    pair judged long ago (an update through the upsert). Times in ms."""
    rng = random.Random(0)
    times: dict[str, list[float]] = {"next_pair": [], "record (new)": [], "record (update)": []}
    with engine.connect() as conn:
        old = conn.exec_driver_sql("SELECT pair_id, user_id FROM judgments WHERE mod(id, 997) = 0").all()
    for i in range(samples):
        user = f"ann{rng.randint(1, n_users)}"
        t = time.perf_counter()
        view = next_pair(engine, "bench", user)
        times["next_pair"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        record_judgment(engine, view.pair_id, user, rng.randint(0, 3), note="bench")
        times["record (new)"].append((time.perf_counter() - t) * 1000)
        if i % 2 == 0:
            pair_id, user_id = rng.choice(old)
            t = time.perf_counter()
            record_judgment(engine, pair_id, f"ann{user_id}", rng.randint(0, 3), note=f"regrade {i}")
            times["record (update)"].append((time.perf_counter() - t) * 1000)
    return times


def baseline(engine: sa.Engine, samples: int) -> dict[str, list[float]]:
    """The machine's floor: a one-row read (own transaction) and a one-row insert committed (write lock + the
    engine's durability: WAL on SQLite, fsync at commit on PostgreSQL). Our operations are judged against these."""
    from db.store.engine import session_scope

    times: dict[str, list[float]] = {"floor: read 1 row": [], "floor: insert+commit": []}
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE bench_floor (x integer)")
    for _ in range(samples):
        t = time.perf_counter()
        with session_scope(engine) as session:
            session.connection().exec_driver_sql("SELECT id FROM users WHERE id = 1").all()
        times["floor: read 1 row"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        with session_scope(engine, write=True) as session:
            session.connection().exec_driver_sql("INSERT INTO bench_floor VALUES (1)")
        times["floor: insert+commit"].append((time.perf_counter() - t) * 1000)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE bench_floor")
    return times


def plans(engine: sa.Engine) -> list[str]:
    """The next_pair query plan, to show it probes ix_assignments_todo instead of scanning."""
    from db.grading import _TODO

    stmt = _TODO.params(project="bench", username="ann1")
    sql = str(stmt.compile(engine, compile_kwargs={"literal_binds": True}))
    prefix = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN "
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(prefix + sql).all()
    return [" ".join(str(c) for c in r) for r in rows]


def judging_bench(kind: str, n_judgments: int, samples: int) -> None:
    tmp = tempfile.mkdtemp(prefix="qrelkit-bench-")
    if kind == "sqlite":
        url, cleanup = f"sqlite:///{tmp}/bench.db", None
    else:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        admin = sa.create_engine(PG_URL)
        with admin.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
        url = f"{PG_URL}?options=-csearch_path%3D{schema}"

        def cleanup() -> None:
            with admin.begin() as conn:
                conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")

    try:
        engine = init_db(url)
        t = time.perf_counter()
        build(engine, n_judgments)
        with engine.connect() as conn:
            stored = conn.exec_driver_sql("SELECT count(*) FROM judgments").scalar_one()
        print(f"[{kind}] built {stored:,} judgments in {time.perf_counter() - t:.1f} s", flush=True)
        for line in plans(engine):
            print(f"[{kind}] plan: {line}")
        times = {**baseline(engine, samples), **measure(engine, samples)}
        for op, values in times.items():
            print(
                f"[{kind}] {op:16s} n={len(values):4d}  median {statistics.median(values):6.2f} ms  "
                f"p95 {_pct(values, 95):6.2f} ms  (target p95 < 10 ms: ratio {_pct(values, 95) / 10:.2f})",
                flush=True,
            )
        engine.dispose()
        get_engine.cache_clear()
    finally:
        if cleanup:
            cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def _sqlite_floor(path: Path, n: int) -> float:
    """The machine's floor for the run import: n run_entries-shaped rows through sqlite3 executemany alone."""
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE e (id INTEGER PRIMARY KEY, run_id INT, query_id INT, doc TEXT, fragment_id INT, "
        "rank INT, score REAL)"
    )
    conn.execute("CREATE INDEX e_rank ON e (run_id, query_id, rank)")
    rows = [(1, i // 1000, f"d{i}", i, i % 1000 + 1, 1.0) for i in range(n)]
    t = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO e (run_id, query_id, doc, fragment_id, rank, score) VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.execute("COMMIT")
    conn.close()
    return time.perf_counter() - t


def import_bench(n_fragments: int = 100_000, n_queries: int = 1000, run_lines: int = 1_000_000) -> None:
    """The SQLite import benchmark: import fragments, queries and a run, then pool at depth 20 (db.pooling.pool)."""
    from db.imports import import_fragments, import_queries, import_run
    from db.projects import create_project

    tmp = Path(tempfile.mkdtemp(prefix="qrelkit-bench-"))
    rng = random.Random(1)
    with (tmp / "corpus.jsonl").open("w") as fh:
        for f in range(n_fragments):
            words = " ".join(f"w{rng.randint(0, 5000)}" for _ in range(30))
            fh.write(f'{{"_id": "d{f}", "title": "doc {f}", "text": "{words}"}}\n')
    with (tmp / "queries.jsonl").open("w") as fh:
        for q in range(n_queries):
            fh.write(f'{{"_id": "q{q}", "text": "w{rng.randint(0, 5000)} w{rng.randint(0, 5000)}"}}\n')
    per_query = run_lines // n_queries
    with (tmp / "run.trec").open("w") as fh:
        for q in range(n_queries):
            for r, d in enumerate(rng.sample(range(n_fragments), per_query), start=1):
                fh.write(f"q{q} Q0 d{d} {r} {1000 - r * 0.5:.3f} bench\n")
    engine = init_db(f"sqlite:///{tmp}/import.db")
    create_project(engine, "bench", actor=OPERATOR)
    stages = []
    t0 = time.perf_counter()
    for label, call in (
        ("fragments", lambda: import_fragments(engine, "bench", tmp / "corpus.jsonl", actor=OPERATOR)),
        ("queries", lambda: import_queries(engine, "bench", tmp / "queries.jsonl", actor=OPERATOR)),
        ("run", lambda: import_run(engine, "bench", tmp / "run.trec", actor=OPERATOR)),
    ):
        t = time.perf_counter()
        call()
        stages.append((label, time.perf_counter() - t))
    try:
        from db.pooling import pool

        t = time.perf_counter()
        report = pool(engine, "bench", 20, bm25=0, actor=OPERATOR)
        stages.append((f"pool depth 20 ({report.to_dict().get('created', '?')} pairs)", time.perf_counter() - t))
    except ImportError:
        stages.append(("pool (db.pooling not available)", 0.0))
    total = time.perf_counter() - t0
    stages.append(("floor: raw sqlite3 executemany, 1M rows", _sqlite_floor(tmp / "floor.db", run_lines)))
    engine.dispose()
    get_engine.cache_clear()
    shutil.rmtree(tmp, ignore_errors=True)
    for label, secs in stages:
        print(f"[import sqlite] {label:40s} {secs:6.1f} s")
    print(f"[import sqlite] total {total:.1f} s  (target < 60 s: ratio {total / 60:.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgments", type=int, default=1_000_000)
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--skip-imports", action="store_true")
    parser.add_argument("--skip-judging", action="store_true")
    args = parser.parse_args()
    for kind in [] if args.skip_judging else args.engines.split(","):
        judging_bench(kind.strip(), args.judgments, args.samples)
    if not args.skip_imports:
        import_bench()
    return 0


if __name__ == "__main__":
    sys.exit(main())

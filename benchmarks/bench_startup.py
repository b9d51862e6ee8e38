"""Start-up benchmark: a store command's whole process — `qrelkit user list`, `adjudicate`, `disputes` — beside
`qrelkit --help` and `python -c pass`, on the demo project in a SQLite file (and, with --engines, in a
PostgreSQL schema of its own at $QRELKIT_TEST_PG_URL, dropped afterwards); and, needing no store, `qrelkit eval`
and `qrelkit trec_eval -c -m all_trec` on the seed example (examples/seed000.*): the evaluation commands' fixed
cost (issue 26).

    python3 benchmarks/bench_startup.py [--repeat 5] [--bytecode cached|none] [--engines sqlite,postgresql]

Each command runs --repeat times as a fresh `python -m annotator …` process; prints the median wall time and the
median CPU time (user + system) of each. The CPU time is the steadier figure on a machine shared with other jobs.
--bytecode cached (default) lets the children write and reuse .pyc files under a temporary PYTHONPYCACHEPREFIX,
as an installed package has them (one warm-up run first); none compiles qrelkit's own modules in every process
(PYTHONDONTWRITEBYTECODE=1, as in some CI setups). Target (issue 27): a store command under 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotator.demo import PROJECT, build_demo
from db.adjudication import disputes
from db.store.engine import dispose_engines, get_engine
from db.store.schema import init_db

ROOT = Path(__file__).resolve().parent.parent
SEED = [str(ROOT / "examples" / "seed000.qrels"), str(ROOT / "examples" / "seed000.run")]
PG_URL = os.environ.get("QRELKIT_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def commands(url: str, query: str, fragment: str) -> dict[str, list[str]]:
    """The timed commands, each an argv for a fresh interpreter."""
    qrelkit = [sys.executable, "-m", "annotator"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "qrelkit --help": [*qrelkit, "--help"],
        "qrelkit user list": [*qrelkit, "user", "list", "--db", url],
        "qrelkit adjudicate": [
            *qrelkit,
            *("adjudicate", "--project", PROJECT, "--query", query, "--fragment", fragment),
            *("--grade", "2", "--reason", "benchmark", "--user", "lea", "--db", url),
        ],
        "qrelkit disputes": [*qrelkit, "disputes", "--project", PROJECT, "--db", url],
        "qrelkit disputes --order doubt": [*qrelkit, "disputes", "--project", PROJECT, "--order", "doubt", "--db", url],
        # no store: the fixed cost of the evaluation commands (issue 26), their exit path included
        "qrelkit eval (seed)": [*qrelkit, "eval", *SEED],
        "qrelkit trec_eval -m all_trec (seed)": [*qrelkit, "trec_eval", "-c", "-m", "all_trec", *SEED],
    }


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run; a failing command stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[1:])} failed: {done.stderr.strip()[:300]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@contextmanager
def demo_store(engine_kind: str, tmp: Path) -> Iterator[str]:
    """The URL of a store holding the demo project: a SQLite file in `tmp`, or a PostgreSQL schema of its own
    at PG_URL (dropped afterwards)."""
    if engine_kind == "sqlite":
        url = f"sqlite:///{tmp / 'demo.db'}"
        build_demo(init_db(url))
        yield url
        return
    schema = f"bench_startup_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        url = f"{PG_URL}{'&' if '?' in PG_URL else '?'}options=-csearch_path%3D{schema}"
        build_demo(init_db(url))
        yield url
    finally:
        dispose_engines()
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (default 5; the median is shown)")
    parser.add_argument("--bytecode", choices=("cached", "none"), default="cached", help="see above")
    parser.add_argument("--engines", default="sqlite", help="comma-separated: sqlite, postgresql (default sqlite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if args.bytecode == "cached":
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        python = sys.version.split()[0]
        print(f"{args.repeat} runs each, bytecode {args.bytecode}, {os.cpu_count()} CPUs, Python {python}")
        for engine_kind in args.engines.split(","):
            with demo_store(engine_kind, Path(tmp)) as url:
                first = disputes(get_engine(url), PROJECT).iloc[0]  # a disputed pair to adjudicate
                dispose_engines()
                print(f"\n{engine_kind}\n{'command':<40}{'wall median':>12}{'CPU median':>12}")
                for name, argv in commands(url, first.query_id, first.fragment_id).items():
                    if args.bytecode == "cached":
                        timed(argv, env)  # warm-up: writes the .pyc files
                    runs = [timed(argv, env) for _ in range(args.repeat)]
                    wall = statistics.median(w for w, _ in runs)
                    cpu = statistics.median(c for _, c in runs)
                    print(f"{name:<40}{wall:>11.2f}s{cpu:>11.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

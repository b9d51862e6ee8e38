"""judge-trust at scale, as a shell user waits for it: `qrelkit judge-trust HUMAN JUDGE RUN… --format json` timed
as a whole process (start-up, reading the files, two evaluations, the report), median of a few, with its peak RSS.

Data (seeded, in a temporary folder unless --dir): Q queries, each with a pool of --max-depth fragments of which
80–120 (the pooled ones) have a true grade 0–3 and the rest are not relevant and unjudged. R runs, run r ranking
each query's pool by `quality_r · grade + N(0, 1)` (quality falling with r) down to a depth drawn per run and query
in [--min-depth, --max-depth]; TREC run format, tab-separated. People's qrels: the true grades of the pooled
fragments on --human-queries of the queries (chosen at random); the judge's: every query's pooled fragments,
graded by a lenient, noisy rule (the true grade + 1 with probability 0.3, capped at 3; then ±1 with probability 0.1).

Run: `python benchmarks/bench_judge_trust.py [--runs 100] [--queries 1000] [--human-queries 300] [--repeat 3]
[--full] [--eval] [--profile] [--save-json PATH] [--dir DIR]`; --full also times people on every query (no
hybrid), --eval times `qrelkit eval` of the judge's qrels on the same runs (the floor), --profile prints
cProfile's heaviest functions of one in-process call, --save-json keeps the report (to check that a change leaves
it identical)."""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

ROOT = Path(__file__).resolve().parent.parent
POOLED = (80, 121)  # pooled (judged) fragments per query: uniform in [80, 120]
GRADE_P = (0.45, 0.25, 0.18, 0.12)  # true grades of pooled fragments


def lenient(truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The judge's grades: one up with probability 0.3 (capped at 3), then ±1 with probability 0.1 (clipped)."""
    up = truth + (rng.random(truth.size) < 0.3)
    noise = np.where(rng.random(truth.size) < 0.1, rng.choice([-1, 1], truth.size), 0)
    return np.clip(np.minimum(up, 3) + noise, 0, 3)


def _write(path: Path, columns: dict[str, pa.Array]) -> None:
    options = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    pacsv.write_csv(pa.table(columns), path, options)


def generate(
    folder: Path,
    runs: int,
    queries: int,
    human_queries: int,
    min_depth: int,
    max_depth: int,
    seed: int = 0,
) -> tuple[Path, Path, Path, list[Path]]:
    """Write people's qrels (on `human_queries` queries, and on all), the judge's qrels and the runs into
    `folder`; return their paths."""
    rng = np.random.default_rng(seed)
    qnames = np.array([f"q{i}" for i in range(queries)], dtype=object)
    dnames = np.array([f"d{j}" for j in range(max_depth)], dtype=object)
    pooled = rng.integers(*POOLED, size=queries)
    truth = np.zeros((queries, max_depth), dtype=np.int64)
    for q in range(queries):
        truth[q, : pooled[q]] = rng.choice(4, size=pooled[q], p=GRADE_P)
    judged = np.arange(max_depth)[None, :] < pooled[:, None]
    qi, di = np.nonzero(judged)
    grades = truth[qi, di]
    people = np.isin(qi, rng.choice(queries, size=human_queries, replace=False))
    zero = pa.array(np.full(len(qi), "0", dtype=object))
    human_path, full_path, judge_path = folder / "human.qrels", folder / "human-all.qrels", folder / "judge.qrels"
    q, d = pa.array(qnames[qi]), pa.array(dnames[di])
    _write(human_path, {"q": q.filter(people), "i": zero.filter(people), "d": d.filter(people), "g": grades[people]})
    _write(full_path, {"q": q, "i": zero, "d": d, "g": grades})
    _write(judge_path, {"q": q, "i": zero, "d": d, "g": lenient(grades, rng)})
    paths = []
    for r in range(runs):
        quality = 1.5 * (1.0 - r / runs) + 0.2
        score = quality * truth + rng.normal(0.0, 1.0, truth.shape)
        order = np.argsort(-score, axis=1, kind="stable")
        depth = rng.integers(min_depth, max_depth + 1, size=queries)
        keep = np.arange(max_depth)[None, :] < depth[:, None]
        rq, rank = np.nonzero(keep)
        doc = order[rq, rank]
        name = f"run{r:03d}"
        path = folder / f"{name}.run"
        _write(
            path,
            {
                "q": pa.array(qnames[rq]),
                "q0": pa.array(np.full(len(rq), "Q0", dtype=object)),
                "d": pa.array(dnames[doc]),
                "rank": rank + 1,
                "score": np.round(score[rq, doc], 4),
                "tag": pa.array(np.full(len(rq), name, dtype=object)),
            },
        )
        paths.append(path)
    return human_path, full_path, judge_path, paths


# Fresh bytecode cache (PYTHONDONTWRITEBYTECODE off) so every timed process starts as an installed qrelkit does.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {
    "PYTHONPATH": str(ROOT),
    "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "qrelkit-bench-pycache"),
}


def measure(args: list[str], out: Path | None = None) -> dict[str, float]:
    """`python -m annotator ARGS` as one child process: wall seconds, CPU seconds and its peak RSS (GNU time's %M
    when /usr/bin/time exists, else the child's ru_maxrss from wait4)."""
    gnu_time = ["/usr/bin/time", "-f", "maxrss=%M"] if Path("/usr/bin/time").exists() else []
    with tempfile.TemporaryFile() as stdout:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*gnu_time, sys.executable, "-m", "annotator", *args],
            stdout=stdout,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=ENV,
        )
        err = proc.stderr.read().decode() if proc.stderr else ""
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError(f"judge-trust failed: {err[-2000:]}")
        if out is not None:
            stdout.seek(0)
            out.write_bytes(stdout.read())
    peak = next((int(x.split("=")[1]) for x in reversed(err.splitlines()) if x.startswith("maxrss=")), usage.ru_maxrss)
    return {"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime, "peak_mib": peak / 1024}


def profile(args: list[str], top: int = 25) -> None:
    """cProfile of one in-process call; the heaviest functions by their own time and by cumulative time."""
    from annotator.cli import main

    prof = cProfile.Profile()
    with redirect_stdout(io.StringIO()):
        prof.runcall(main, args)
    for key in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats(key).print_stats(top)
        print(f"--- by {key}\n" + text.getvalue().split("\n\n", 2)[-1])


def bench(human: Path, judge: Path, runs: list[Path], args: argparse.Namespace, label: str, save: Path | None) -> None:
    """Time one case (after one untimed warm-up) and print its figures."""
    size = sum(p.stat().st_size for p in runs) / 1e6
    rows = sum(1 for p in runs for _ in p.open("rb"))
    human_queries = len({line.split(maxsplit=1)[0] for line in human.open("rb")})
    cli = ["judge-trust", str(human), str(judge), *map(str, runs), "--format", "json", "--target-width", "0.05"]
    measure(cli)  # warm: bytecode and page cache
    results = [measure(cli, save if i == 0 else None) for i in range(args.repeat)]
    wall = [r["seconds"] for r in results]
    print(
        f"{label}: {args.runs} runs × {args.queries} queries, people on {human_queries}; {rows:,} run lines "
        f"({size:.0f} MB); median of {args.repeat}: {statistics.median(wall):.2f} s wall "
        f"(all {', '.join(f'{w:.2f}' for w in wall)}), {statistics.median(r['cpu'] for r in results):.2f} s CPU, "
        f"peak RSS {max(r['peak_mib'] for r in results):.0f} MiB",
        flush=True,
    )
    if args.eval:  # the floor: one evaluation of the same runs (judge-trust reads each run once, ranks it twice)
        cli = ["eval", str(judge), *map(str, runs), "--metrics", "ndcg@10", "--format", "json"]
        results = [measure(cli) for _ in range(args.repeat)]
        print(
            f"  qrelkit eval JUDGE RUN… (ndcg@10) on the same runs: median "
            f"{statistics.median(r['seconds'] for r in results):.2f} s wall, "
            f"{statistics.median(r['cpu'] for r in results):.2f} s CPU, "
            f"peak RSS {max(r['peak_mib'] for r in results):.0f} MiB",
            flush=True,
        )
    if args.profile:
        profile(cli)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--human-queries", type=int, default=300, help="queries people judged (the rest: judge only)")
    ap.add_argument("--min-depth", type=int, default=100)
    ap.add_argument("--max-depth", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--full", action="store_true", help="also time people on every query")
    ap.add_argument("--eval", action="store_true", help="also time `qrelkit eval` of the judge on the same runs")
    ap.add_argument("--profile", action="store_true", help="print cProfile's heaviest functions")
    ap.add_argument("--save-json", type=Path, help="keep the (first) report here; with --full, a .full one too")
    ap.add_argument("--dir", type=Path, help="write the data here, or reuse it (default: a temporary folder)")
    args = ap.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        params = [args.runs, args.queries, args.human_queries, args.min_depth, args.max_depth]
        stamp = folder / "params.txt"
        if stamp.exists() and stamp.read_text() == repr(params):  # --dir holds this size already
            human, full, judge = folder / "human.qrels", folder / "human-all.qrels", folder / "judge.qrels"
            runs = sorted(folder.glob("run*.run"))
        else:
            start = time.perf_counter()
            human, full, judge, runs = generate(folder, *params)
            stamp.write_text(repr(params))
            print(f"data written in {time.perf_counter() - start:.0f} s", flush=True)
        bench(human, judge, runs, args, "hybrid", args.save_json)
        if args.full:
            bench(full, judge, runs, args, "full", args.save_json and args.save_json.with_suffix(".full.json"))


if __name__ == "__main__":
    main()

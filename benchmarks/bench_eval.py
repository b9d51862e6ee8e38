"""Benchmark `qrelkit eval` against pytrec_eval and ranx on the same seeded TREC files.

Usage: python3 benchmarks/bench_eval.py [--sizes 1kx100,10kx100,10kx1000] [--scale] [--dir bench_data]
         [--repeat 2] [--skip ranx]

Every measurement runs in its own subprocess, which reports its own peak RSS (getrusage RUSAGE_SELF):
end-to-end = parse both files + the full default metric set at k = 1,3,5,10,20,100; compute-only = the
same with parsing done before the timer starts. "Cold" is the first run on a file, "warm" the median
of the repeats after it (page cache hot). `--scale` adds 50k×1000 (≈47M lines), timed end-to-end only:
qrelkit's compute-only mode loads the whole run before the timer, which is what its block-wise
reading of big runs avoids (and would hold ≈5 GB at that size).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

KS = (1, 3, 5, 10, 20, 100)
CORPUS = 5_000_000
SIZES = {"1kx100": (1_000, 100), "10kx100": (10_000, 100), "10kx1000": (10_000, 1000), "50kx1000": (50_000, 1000)}


def generate(dir_: Path, n_queries: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    """Seeded qrels + run: ~94% of depth per query, scores with ties, unjudged docs, 1% queries missing each side."""
    dir_.mkdir(parents=True, exist_ok=True)
    qrels_path, run_path = dir_ / f"q{n_queries}x{depth}.qrels", dir_ / f"q{n_queries}x{depth}.run"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    lengths = rng.integers(int(depth * 0.88), depth + 1, n_queries)
    run_q = np.arange(n_queries)
    run_q = run_q[rng.random(n_queries) > 0.01]  # 1% of qrels queries absent from the run
    lengths = lengths[run_q]
    q = np.repeat(run_q, lengths)
    docs = rng.integers(0, CORPUS, len(q))
    score = np.round(rng.uniform(0, 30, len(q)), 3)
    order = np.lexsort((-score, q))
    q, docs, score = q[order], docs[order], score[order]
    # de-duplicate docids within a query (a run never repeats a document)
    key = q.astype(np.int64) * CORPUS + docs
    _, first = np.unique(key, return_index=True)
    keep = np.sort(first)
    q, docs, score = q[keep], docs[keep], score[keep]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(q)) + 1))
    rank = np.arange(len(q)) - np.repeat(starts, np.diff(np.append(starts, len(q)))) + 1
    extra = np.arange(n_queries, n_queries + max(1, n_queries // 100))  # run-only queries
    eq = np.repeat(extra, 10)
    run = pa.table({
        "q": pa.array(np.char.add("q", np.concatenate((q, eq)).astype(str))),
        "q0": pa.array(np.full(len(q) + len(eq), "Q0")),
        "d": pa.array(np.char.add("d", np.concatenate((docs, rng.integers(0, CORPUS, len(eq)))).astype(str))),
        "rank": np.concatenate((rank, np.tile(np.arange(1, 11), len(extra)))),
        "score": np.concatenate((score, np.tile(np.arange(10, 0, -1.0), len(extra)))),
        "tag": pa.array(np.full(len(q) + len(eq), "bench")),
    })
    opts = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(run, run_path, opts)
    # qrels: ~30 judged per query, ~2/3 drawn from the run's top 100 (so there are hits), grades 0-3
    nj = rng.poisson(30, n_queries) + 1
    qq = np.repeat(np.arange(n_queries), nj)
    from_run = rng.random(len(qq)) < 0.66
    pos = starts[np.searchsorted(run_q, np.minimum(qq, run_q[-1]))] if len(run_q) else np.zeros(len(qq), int)
    pick = np.minimum(pos + rng.integers(0, min(depth, 100), len(qq)), len(q) - 1)
    same_q = q[pick] == qq
    qd = np.where(from_run & same_q, docs[pick], rng.integers(0, CORPUS, len(qq)))
    key = qq.astype(np.int64) * CORPUS + qd
    _, first = np.unique(key, return_index=True)
    first = np.sort(first)
    qq, qd = qq[first], qd[first]
    grade = rng.choice(4, len(qq), p=[0.5, 0.25, 0.15, 0.10])
    qrels = pa.table({"q": pa.array(np.char.add("q", qq.astype(str))), "it": np.zeros(len(qq), dtype=np.int64),
                      "d": pa.array(np.char.add("d", qd.astype(str))), "g": grade})
    pacsv.write_csv(qrels, qrels_path, opts)
    return qrels_path, run_path


# Each tool is timed in a child process running one of these snippets; they print JSON timings.
CHILD = r'''
import json, sys, time
tool, qrels_path, run_path, mode = sys.argv[1:5]
KS = (1, 3, 5, 10, 20, 100)
# Imports happen before the timer starts: the figures are parse + metrics, not interpreter start-up.
if tool == "qrelkit":
    from eval_core import evaluate
    from eval_core.formats import load_qrels, load_run
elif tool == "pytrec_eval":
    import pytrec_eval
else:
    from ranx import Qrels, Run, evaluate
t0 = time.perf_counter()
if tool == "qrelkit":
    if mode == "compute":
        qrels, run = load_qrels(qrels_path), load_run(run_path)
        t0 = time.perf_counter()
    else:
        qrels, run = qrels_path, run_path
    ev = evaluate(qrels, run, k=KS)
    out = ev.mean["ndcg@10"]
elif tool == "pytrec_eval":
    def load(path, run):
        d = {}
        with open(path) as fh:
            for line in fh:
                f = line.split()
                if run:
                    d.setdefault(f[0], {})[f[2]] = float(f[4])
                else:
                    d.setdefault(f[0], {})[f[2]] = int(f[3])
        return d
    qrels, run = load(qrels_path, False), load(run_path, True)
    if mode == "compute":
        t0 = time.perf_counter()
    measures = {"P", "recall", "success", "ndcg_cut", "map_cut", "map", "recip_rank", "Rprec", "ndcg", "bpref"}
    measures = {m if m in ("map", "recip_rank", "Rprec", "ndcg", "bpref") else m + "." + ",".join(map(str, KS))
                for m in measures}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    out = sum(r["ndcg_cut_10"] for r in res.values()) / len(qrels)
else:
    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    if mode == "compute":
        t0 = time.perf_counter()
    ms = [f"{m}@{k}" for m in ("precision", "recall", "hit_rate", "f1", "ndcg", "map", "mrr") for k in KS]
    ms += ["map", "mrr", "r-precision", "ndcg", "recall", "bpref"]
    res = evaluate(qrels, run, ms, make_comparable=True)
    out = res["ndcg@10"]
import resource
secs = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": secs, "check": float(out), "peak_mib": peak}))
'''


def measure(tool: str, qrels: Path, run: Path, mode: str) -> dict:
    """Run one tool in a fresh child; return its seconds, wall time and its own peak RSS (MiB, getrusage)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, tool, str(qrels), str(run), mode],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"{tool} failed: {proc.stderr[-2000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["wall"] = wall
    return res


def main() -> None:
    """Generate data, time every tool end-to-end and compute-only, print a Markdown table with ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1kx100,10kx100,10kx1000")
    ap.add_argument("--scale", action="store_true", help="also 50k×1000 (47M lines; several GB for the anchors)")
    ap.add_argument("--dir", default="bench_data")
    ap.add_argument("--repeat", type=int, default=2, help="warm repetitions after the cold one")
    ap.add_argument("--skip", default="", help="comma-separated tools to skip (pytrec_eval, ranx)")
    ap.add_argument("--modes", default="end-to-end,compute", help="end-to-end and/or compute")
    args = ap.parse_args()
    sizes = args.sizes.split(",") + (["50kx1000"] if args.scale else [])
    tools = [t for t in ("qrelkit", "pytrec_eval", "ranx") if t not in args.skip.split(",")]
    print("| data | tool | mode | cold s | warm s (median) | peak MiB | × qrelkit time | ndcg@10 mean |")
    print("|---|---|---|---|---|---|---|---|")
    for size in sizes:
        nq, depth = SIZES[size]
        qrels, run = generate(Path(args.dir), nq, depth)
        for mode in args.modes.split(","):
            if size == "50kx1000" and mode == "compute":
                continue  # see the module docstring
            base = None
            for tool in tools:
                if tool == "qrelkit" and mode == "end-to-end":
                    measure(tool, qrels, run, "e2e")  # warm the page cache once for everyone
                runs = [measure(tool, qrels, run, "e2e" if mode == "end-to-end" else "compute")
                        for _ in range(1 + args.repeat)]
                warm = statistics.median(r["seconds"] for r in runs[1:]) if args.repeat else runs[0]["seconds"]
                peak = max(r["peak_mib"] for r in runs)
                base = warm if tool == "qrelkit" else base
                ratio = f"{warm / base:.1f}×" if base else ""
                print(f"| {size} | {tool} | {mode} | {runs[0]['seconds']:.2f} | {warm:.2f} | "
                      f"{peak:.0f} | {ratio} | {runs[0]['check']:.6f} |", flush=True)


if __name__ == "__main__":
    main()

"""Benchmark `qrelkit trec_eval -m all_trec` against pytrec_eval computing the same 34 families, same files.

Usage: python3 benchmarks/bench_trec_eval.py [--size 10kx1000] [--repeat 3] [--dir bench_data]

The run and qrels come from bench_eval.generate (seeded; scores with 2 decimals, so many ties; 1% of the
queries missing on each side, hence `-c`). Each measurement is a fresh child process, the tools taking
turns in each round; the figures are wall seconds end to end (parse + every measure; pytrec_eval's child
parses with the Python loop its users write, and its import is not timed, like qrelkit's start-up is)
and each child's own peak RSS (ru_maxrss from wait4). Prints medians and the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_eval
from bench_eval import SIZES

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time, io, contextlib
tool, qrels_path, run_path = sys.argv[1:4]
if tool == "qrelkit":
    from annotator.cli import main
    import eval_core.ranking.trec_eval.run, eval_core.ranking.trec_eval.columnar  # start-up outside the timer
else:
    import pytrec_eval
t0 = time.perf_counter()
if tool == "qrelkit":
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["trec_eval", "-c", "-m", "all_trec", qrels_path, run_path])
    assert status == 0, status
    check = next(float(line.split()[2]) for line in out.getvalue().splitlines() if line.startswith("map "))
else:
    def load(path, run):
        d = {}
        with open(path) as fh:
            for line in fh:
                f = line.split()
                d.setdefault(f[0], {})[f[2]] = float(f[4]) if run else int(f[3])
        return d
    qrels, run = load(qrels_path, False), load(run_path, True)
    res = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures).evaluate(run)
    check = sum(r["map"] for r in res.values()) / len(qrels)
secs = time.perf_counter() - t0
print(json.dumps({"seconds": secs, "check": check}))
"""


def measure(tool: str, qrels: Path, run: Path) -> dict:
    """One child running this benchmark's CHILD script: its seconds and own peak RSS (MiB), as bench_eval measures."""
    return bench_eval.measure(tool, qrels, run, CHILD)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="10kx1000", choices=sorted(SIZES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="bench_data")
    args = ap.parse_args()
    n_queries, depth = SIZES[args.size]
    made = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, 'benchmarks'); "
            "from pathlib import Path; from bench_eval import generate; "
            f"print(*generate(Path({args.dir!r}), {n_queries}, {depth}, 2))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    qrels, run = (Path(p) if Path(p).is_absolute() else ROOT / p for p in made.stdout.split())
    with open(run, "rb") as fh:
        lines = sum(1 for _ in fh)
    print(f"{args.size}: {lines:,} run lines, {args.repeat} rounds")
    results: dict[str, list[dict]] = {"qrelkit": [], "pytrec_eval": []}
    for _ in range(args.repeat):
        for tool in results:
            results[tool].append(measure(tool, qrels, run))
            print(
                f"  {tool:<12} {results[tool][-1]['seconds']:7.2f} s  {results[tool][-1]['peak_mib']:7.0f} MiB",
                flush=True,
            )
    med = {
        t: (statistics.median(r["seconds"] for r in rs), statistics.median(r["peak_mib"] for r in rs))
        for t, rs in results.items()
    }
    checks = {t: rs[0]["check"] for t, rs in results.items()}
    for tool, (secs, mib) in med.items():
        print(f"{tool:<12} median {secs:7.2f} s   peak {mib:7.0f} MiB   (check: map {checks[tool]:.4f})")
    (q_s, q_m), (p_s, p_m) = med["qrelkit"], med["pytrec_eval"]
    print(f"qrelkit trec_eval is {p_s / q_s:.1f}x faster than pytrec_eval, with {q_m / p_m:.2f}x its peak memory")


if __name__ == "__main__":
    main()

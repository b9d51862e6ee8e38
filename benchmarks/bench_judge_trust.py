"""judge-trust at scale: R runs × Q queries, people's qrels on a share of the queries and a lenient, noisy judge
on all of them (the hybrid estimate included), timed end to end from files (reading, two evaluations, the
report) and from in-memory frames.

Data: Q queries × D judged fragments (grades 0–3, seeded), R runs ranking 100 fragments per query (the judged
ones among unjudged), people on `--human-share` of the queries. Run: `python3 benchmarks/bench_judge_trust.py
[--queries 1000] [--runs 100] [--fragments 50] [--human-share 0.3] [--repeat 3] [--print]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_core.judges.trust import judge_trust


def data(queries: int, fragments: int, runs: int, share: float, seed: int = 0):
    """(people's qrels, the judge's qrels, {run: frame}) with run quality falling with its index."""
    rng = np.random.default_rng(seed)
    qids = np.repeat([f"q{i}" for i in range(queries)], fragments)
    docs = np.array([f"d{j}" for _ in range(queries) for j in range(fragments)])
    truth = rng.integers(0, 4, size=len(qids))
    judge = np.clip(truth + rng.choice([0, 0, 1, 1, -1], size=len(qids)), 0, 3)  # lenient and noisy
    judge_q = pd.DataFrame({"query_id": qids, "doc_id": docs, "grade": judge})
    people = pd.DataFrame({"query_id": qids, "doc_id": docs, "grade": truth})
    people = people[people["query_id"].str[1:].astype(int) < int(queries * share)]
    frames = {}
    depth = 100
    for r in range(runs):
        q = np.repeat([f"q{i}" for i in range(queries)], depth)
        d = np.array([f"d{j}" for _ in range(queries) for j in range(depth)])
        grade = np.zeros(len(q))
        judged = np.tile(np.arange(depth) < fragments, queries)
        grade[judged] = truth
        score = grade * (1.0 - r / (runs + 5)) + rng.normal(0, 1.0, len(q))
        frames[f"run{r:03d}"] = pd.DataFrame({"query_id": q, "doc_id": d, "score": score})
    return people, judge_q, frames


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--fragments", type=int, default=50)
    ap.add_argument("--human-share", type=float, default=0.3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--print", action="store_true", help="print the report's table")
    args = ap.parse_args()
    people, judge, frames = data(args.queries, args.fragments, args.runs, args.human_share)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        people.assign(it="0")[["query_id", "it", "doc_id", "grade"]].to_csv(
            folder / "people.qrels", sep=" ", header=False, index=False
        )
        judge.assign(it="0")[["query_id", "it", "doc_id", "grade"]].to_csv(
            folder / "judge.qrels", sep=" ", header=False, index=False
        )
        paths = {}
        for name, f in frames.items():
            path = folder / f"{name}.run"
            f.assign(q0="Q0", rank=1, tag=name)[["query_id", "q0", "doc_id", "rank", "score", "tag"]].to_csv(
                path, sep=" ", header=False, index=False
            )
            paths[name] = str(path)
        size = sum(Path(p).stat().st_size for p in paths.values()) / 1e6
        for label, runs, h, j in (
            ("files", paths, str(folder / "people.qrels"), str(folder / "judge.qrels")),
            ("frames", frames, people, judge),
        ):
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                report = judge_trust(h, j, runs, target_width=0.02)
                times.append(time.perf_counter() - t0)
            print(
                f"judge-trust {label}: {args.runs} runs × {args.queries} queries ({size:.0f} MB of runs), "
                f"best of {args.repeat}: {min(times):.2f} s (all: {', '.join(f'{t:.2f}' for t in times)})"
            )
    if args.print:
        from annotator.cli.judge_trust import format_table

        sys.stdout.write(format_table(report))


if __name__ == "__main__":
    main()

"""Robustness at project scale: the conditions and the bootstrap over annotators, against the naive bootstrap
that calls `consensus()` and `evaluate()` for every replicate.

Data: Q queries × D fragments, 3 annotators grading every pair (seeded, grades 0–3 around a per-pair truth),
R runs ranking each query's D fragments. Run: `python3 benchmarks/bench_robustness.py [--queries 50]
[--fragments 100] [--runs 10] [--replicates 200] [--naive 20] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_core.consensus import consensus
from eval_core.ranking.evaluation import evaluate
from eval_core.robustness import robustness

ANNOTATORS = ("ann", "bob", "cat")


def data(queries: int, fragments: int, runs: int, seed: int = 0) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Seeded judgments (every pair graded by every annotator) and runs over the same fragments."""
    rng = np.random.default_rng(seed)
    pairs = queries * fragments
    truth = rng.integers(0, 4, pairs)
    grades = np.clip(truth[:, None] + rng.integers(-1, 2, (pairs, len(ANNOTATORS))), 0, 3).ravel()
    qids = np.repeat([f"q{i}" for i in range(queries)], fragments)
    docs = np.tile([f"d{i}" for i in range(fragments)], queries)
    judgments = pd.DataFrame(
        {
            "query_id": np.repeat(qids, len(ANNOTATORS)),
            "fragment_id": np.repeat(docs, len(ANNOTATORS)),
            "annotator": np.tile(ANNOTATORS, pairs),
            "grade": pd.array(grades, dtype="Int64"),
        }
    )
    scores = np.tile(np.arange(fragments, 0, -1, dtype=np.float64), queries)
    out = {}
    for r in range(runs):
        noise = rng.normal(0, 1.0 + r / 2, pairs)
        order = np.lexsort((-(truth + noise), np.repeat(np.arange(queries), fragments)))
        out[f"run{r}"] = pd.DataFrame({"query_id": qids, "doc_id": docs[order], "score": scores})
    return judgments, out


def naive(judgments: pd.DataFrame, runs: dict[str, pd.DataFrame], replicates: int, seed: int) -> float:
    """Seconds for the replicates done the obvious way: redraw a judgments frame, consensus(), evaluate()."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    groups = judgments.groupby(["query_id", "fragment_id"], sort=True).indices
    for _ in range(replicates):
        rows = np.concatenate([rng.choice(ix, len(ix)) for ix in groups.values()])
        drawn = judgments.iloc[rows].assign(annotator=[f"draw{i}" for i in range(len(rows))])
        labels = consensus(drawn, "median")
        qrels = labels.rename(columns={"fragment_id": "doc_id"})[["query_id", "doc_id", "grade"]]
        evaluate(qrels, runs, metrics=["ndcg@10"])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--fragments", type=int, default=100)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--naive", type=int, default=20, help="replicates timed the naive way (then scaled)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the fastest is reported")
    args = parser.parse_args()
    judgments, runs = data(args.queries, args.fragments, args.runs)
    print(f"{args.queries * args.fragments} pairs, {len(judgments)} grades, {args.runs} runs")
    conditions, boot = [], []
    for _ in range(args.repeat):  # the fastest of a few rounds: a shared machine's load only adds time
        start = time.perf_counter()
        robustness(judgments, runs, bootstrap=0)
        conditions.append(time.perf_counter() - start)
        start = time.perf_counter()
        report = robustness(judgments, runs, bootstrap=args.replicates)
        boot.append(time.perf_counter() - start - conditions[-1])
    conditions, boot = min(conditions), min(boot)
    print(f"conditions (4 rules, 3 annotators): {conditions:.2f} s")
    print(f"bootstrap, {args.replicates} replicates: {boot:.2f} s ({1000 * boot / args.replicates:.1f} ms each)")
    if args.naive:
        slow = naive(judgments, runs, args.naive, 0) / args.naive
        print(
            f"naive consensus() + evaluate() per replicate: {1000 * slow:.1f} ms each "
            f"({slow * args.replicates / boot:.1f}× the bootstrap's time)"
        )
    print(f"pairs of runs whose order holds everywhere: {sum(p.holds for p in report.pairs)} of {len(report.pairs)}")


if __name__ == "__main__":
    main()

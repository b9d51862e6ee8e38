"""Time `reliability()` on 10 runs × 1,000 queries with 1,000 resamples (the Evaluate page's budget: seconds).

A generated golden set: 40 fragments per query with grades 0–3, ten runs of rising quality ranking them, the
qrels holding only the depth-10 pool of the runs (as a pooled release does). Prints the time per step.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from eval_core.reliability import Settings, reliability


def generate(n_queries: int, n_runs: int, seed: int = 7, docs: int = 40,
             depth: int = 10) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Qrels (the runs' depth-`depth` pool) and `n_runs` runs over `docs` fragments per query."""
    rng = np.random.default_rng(seed)
    qid = np.repeat([f"q{i}" for i in range(n_queries)], docs)
    doc = np.tile([f"d{j}" for j in range(docs)], n_queries)
    grade = rng.choice(4, size=len(qid), p=[0.7, 0.15, 0.1, 0.05])
    ease = np.repeat(rng.normal(0, 1.0, n_queries), docs)  # some queries are easy for every run
    runs = {}
    for r in range(n_runs):
        skill = 0.6 + 0.08 * r
        score = skill * grade * (1 + 0.3 * ease) + rng.normal(0, 1.2, len(qid))
        runs[f"run{r:02d}"] = pd.DataFrame({"query_id": qid, "doc_id": doc, "score": score})
    all_pairs = pd.DataFrame({"query_id": qid, "doc_id": doc, "grade": grade})
    pooled = pd.concat([f.sort_values(["query_id", "score"], ascending=[True, False]).groupby("query_id").head(depth)
                        for f in runs.values()])[["query_id", "doc_id"]].drop_duplicates()
    return all_pairs.merge(pooled, on=["query_id", "doc_id"]), runs


def main() -> None:
    """Generate, run, print the seconds."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    qrels, runs = generate(args.queries, args.runs)
    print(f"{args.runs} runs × {args.queries} queries, {len(qrels)} judged pairs, {args.resamples} resamples")
    for correction in ("tukey-hsd", "holm"):
        start = time.perf_counter()
        report = reliability(qrels, runs, ["ndcg@10"], settings=Settings(correction=correction,
                                                                         resamples=args.resamples))
        print(f"{correction:>10}: {time.perf_counter() - start:.2f} s — {report.sentence()}")


if __name__ == "__main__":
    main()

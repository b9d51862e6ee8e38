"""Time `reliability()` on 10 runs × 1,000 queries with 1,000 resamples (the Evaluate page's budget: seconds).

A generated golden set: 40 fragments per query with grades 0–3, ten runs of rising quality ranking them, the
qrels holding only the depth-10 pool of the runs (as a pooled release does). Prints the time of each
correction and the sentence; `--html` writes the ASL curve as the Evaluate page draws it (Altair HTML), `--png`
too when vl-convert is installed. Run: `python3 benchmarks/bench_reliability.py [--queries 1000] [--runs 10]`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from eval_core.reliability import ReliabilityReport, Settings, reliability


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
    parser.add_argument("--delta", type=float, default=0.02)
    parser.add_argument("--html", help="write the ASL curve here (Altair HTML)")
    parser.add_argument("--png", help="write the ASL curve here as PNG (needs vl-convert-python)")
    args = parser.parse_args()
    qrels, runs = generate(args.queries, args.runs)
    print(f"{args.runs} runs × {args.queries} queries, {len(qrels)} judged pairs, {args.resamples} resamples")
    for correction in ("tukey-hsd", "holm"):
        start = time.perf_counter()
        settings = Settings(delta=args.delta, correction=correction, resamples=args.resamples)
        report = reliability(qrels, runs, ["ndcg@10"], settings=settings)
        m = report.metrics[0]
        print(f"{correction:>10}: {time.perf_counter() - start:.2f} s — {report.sentence()}")
        tau = m.tau_summary
        print(f"{'':>12}{m.significant} of {len(m.pairs)} pairs significant; split-half τ mean {tau['mean']:.3f} "
              f"(5–95% {tau['p5']:.3f}–{tau['p95']:.3f}); variance {m.variance:.5f} ({m.variance_source})")
        if correction == "tukey-hsd":
            tukey = report
    _chart(tukey, args.html, args.png)


def _chart(report: ReliabilityReport, html: str | None, png: str | None) -> None:
    """Save the Tukey HSD ASL curve as HTML and/or PNG (PNG only when vl-convert is installed)."""
    if not html and not png:
        return
    from annotator.app.components.reliability import asl_chart

    chart = asl_chart(report.metrics[0], report.settings.alpha).properties(width=560)
    if html:
        chart.save(html)
    if png:
        try:
            chart.save(png)
        except (ImportError, ValueError) as exc:
            print(f"no PNG: {exc}")


if __name__ == "__main__":
    main()

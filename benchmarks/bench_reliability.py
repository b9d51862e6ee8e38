"""Time `reliability()` on 10 runs × 1,000 queries with 1,000 resamples (the Evaluate page's budget: seconds).

A generated golden set: 40 fragments per query with grades 0–3, ten runs of rising quality ranking them, the
qrels holding only the depth-10 pool of the runs (as a pooled release does). Prints the time of each
correction and the sentence; `--html` writes the ASL curve as the Evaluate page draws it (Altair HTML), `--png`
too when vl-convert is installed. Run: `python3 benchmarks/bench_reliability.py [--queries 1000] [--runs 10]`.

`--release` times what the reliability entry of a release card costs: `create_release` on the demo project
(`qrelkit demo`, in a temporary SQLite store; median of `--repeats`), the card's reliability alone on the same
release, and the card's reliability on the generated set (with its depth-10 pool as the runs' contributions).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_core.reliability import ReliabilityReport, Settings, reliability


def generate(
    n_queries: int, n_runs: int, seed: int = 7, docs: int = 40, depth: int = 10
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
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
    pooled = pd.concat(
        [
            f.sort_values(["query_id", "score"], ascending=[True, False]).groupby("query_id").head(depth)
            for f in runs.values()
        ]
    )[["query_id", "doc_id"]].drop_duplicates()
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
    parser.add_argument("--release", action="store_true", help="time the release card's reliability instead")
    parser.add_argument("--repeats", type=int, default=15, help="with --release (default %(default)s)")
    args = parser.parse_args()
    if args.release:
        release_cost(args.queries, args.runs, args.repeats)
        return
    qrels, runs = generate(args.queries, args.runs)
    print(f"{args.runs} runs × {args.queries} queries, {len(qrels)} judged pairs, {args.resamples} resamples")
    for correction in ("tukey-hsd", "holm"):
        start = time.perf_counter()
        settings = Settings(delta=args.delta, correction=correction, resamples=args.resamples)
        report = reliability(qrels, runs, ["ndcg@10"], settings=settings)
        m = report.metrics[0]
        print(f"{correction:>10}: {time.perf_counter() - start:.2f} s — {report.sentence()}")
        tau = m.tau_summary
        print(
            f"{'':>12}{m.significant} of {len(m.pairs)} pairs significant; split-half τ mean {tau['mean']:.3f} "
            f"(5–95% {tau['p5']:.3f}–{tau['p95']:.3f}); variance {m.variance:.5f} ({m.variance_source})"
        )
        if correction == "tukey-hsd":
            tukey = report
    _chart(tukey, args.html, args.png)


def _median_seconds(func: Callable[[], object], repeats: int) -> float:
    """The median wall time of `repeats` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def release_cost(n_queries: int, n_runs: int, repeats: int) -> None:
    """Print create_release's median time on the demo, the card's reliability alone there, and the card's
    reliability on the generated set."""
    from annotator.demo import build_demo
    from db.evaluations import load_release, qrels_of, run_frame
    from db.projects import project_row, project_scale
    from db.releases import create_release
    from db.reliability import card_settings, pool_contributions, reliability_card
    from db.store.engine import session_scope
    from db.store.models import Run
    from db.store.schema import init_db
    from eval_core.reliability.pool_bias import top_pairs

    with tempfile.TemporaryDirectory(prefix="qrelkit-bench-reliability-") as tmp:
        engine = init_db(f"sqlite:///{Path(tmp) / 'demo.db'}")
        build_demo(engine)
        release = _median_seconds(lambda: create_release(engine, "demo", actor="lea"), repeats)
        with session_scope(engine) as session:
            proj = project_row(session, "demo")
            rows = session.execute(select(Run.id, Run.name).where(Run.project_id == proj.id)).all()
            frames = {name: run_frame(session, rid) for rid, name in rows}
            assert proj.id is not None
            pooled = pool_contributions(session, proj.id, list(frames))
            qrels, scale = qrels_of(load_release(session, proj, "latest")), project_scale(proj)
        engine.dispose()
    card = _median_seconds(lambda: reliability_card(qrels, frames, pooled, scale, "demo"), repeats)
    print(
        f"demo ({qrels['query_id'].nunique()} queries, {len(frames)} runs): create_release median {release:.3f} s, "
        f"of which the card's reliability {card:.3f} s ({repeats} repeats)"
    )
    big_qrels, runs = generate(n_queries, n_runs)
    big_pool = {name: top_pairs(frame, 10) for name, frame in runs.items()}
    big = _median_seconds(lambda: reliability_card(big_qrels, runs, big_pool, (0, 3), "generated"), 3)
    print(
        f"{n_runs} runs × {n_queries} queries: the card's reliability {big:.2f} s (median of 3; "
        f"{card_settings(n_runs, n_queries).resamples} resamples, pool bias for every run)"
    )


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

"""Queue orders compared: relevant fragments found after judging 10/20/30/50% of each query's pool.

Simulation (default): 50 queries, 20 runs of varied quality ranking the same candidates (so runs overlap as
real ones do), pooled at depth 100; the simulated qrels are the truth each order is fed as it judges. With
`--qrels FILE --runs RUN1 RUN2 …` the same is done on real TREC qrels and runs (fragments of the pool with
no qrels line count as non-relevant). Prints a table and writes an Altair chart (HTML) and, with
matplotlib, a PNG. Run: `python3 benchmarks/bench_queue_order.py [--seeds 5] [--png docs/queue_order.png]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from eval_core.progress import bar as progress_bar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_core.queue_order import ORDERS, QueryPool, found_at, judging_curve, make_order

FRACTIONS = (0.1, 0.2, 0.3, 0.5)
CURVE_POINTS = np.linspace(0.01, 1.0, 100)
RUN_ORDERS = ("pool", "move-to-front", "bandit", "bandit-max-mean")  # model-uncertain needs model grades
SEEDED = {"bandit"}
LABELS = {
    "pool": "pool order",
    "move-to-front": "MoveToFront",
    "bandit": "bandit (Thompson sampling)",
    "bandit-max-mean": "bandit (max mean, MM-NS)",
}


def pool_from_runs(rankings: list[list], depth: int) -> QueryPool:
    """Depth-k pool in the store's pool order (best rank, then the first run reaching it), runs cut at k."""
    best: dict = {}
    for r, ranking in enumerate(rankings):
        for rank, doc in enumerate(ranking[:depth]):
            if doc not in best or (rank, r) < best[doc]:
                best[doc] = (rank, r)
    fragments = tuple(sorted(best, key=lambda d: best[d]))
    return QueryPool(fragments, tuple(tuple(ranking[:depth]) for ranking in rankings))


def simulate(n_queries: int, n_runs: int, depth: int, seed: int) -> tuple[list[QueryPool], list[set]]:
    """Per query: 1,000 candidates, 2–10% relevant; run s scores q_s·relevance + a shared match signal + noise,
    with q_s spread from useless to strong, so runs disagree in quality but overlap in what they retrieve."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.0, 2.5, n_runs)[rng.permutation(n_runs)]
    share = rng.uniform(0.3, 1.0, n_runs)
    pools, relevant = [], []
    for _ in range(n_queries):
        n_docs = 1000
        rel = rng.random(n_docs) < rng.uniform(0.02, 0.10)
        match = rng.normal(size=n_docs) + 0.8 * rel
        scores = quality[:, None] * rel[None, :] + share[:, None] * match[None, :] + rng.normal(size=(n_runs, n_docs))
        order = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
        docs = rng.permutation(n_docs)  # doc ids carry no information
        pools.append(pool_from_runs([[int(docs[d]) for d in row] for row in order], depth))
        relevant.append({int(docs[d]) for d in np.flatnonzero(rel)})
    return pools, relevant


def real(qrels_path: str, run_paths: list[str], depth: int, rel_level: int) -> tuple[list[QueryPool], list[set]]:
    """Pools of the given TREC runs at `depth` per query of the qrels; relevant = grade ≥ rel_level."""
    from eval_core.io.formats import read_qrels, read_run

    qrels = read_qrels(qrels_path)
    qrels = qrels[qrels.iloc[:, -1] >= rel_level]
    rel_by_q = {str(q): set(map(str, g.iloc[:, 1])) for q, g in qrels.groupby(qrels.columns[0])}
    runs = []
    for path in run_paths:
        df = read_run(path)
        q, d, s = df.columns[0], df.columns[1], df.columns[-1]
        df = df.sort_values([q, s, d], ascending=[True, False, False], kind="stable")
        runs.append({str(k): list(map(str, g[d])) for k, g in df.groupby(q)})
    pools, relevant = [], []
    for qid in sorted(rel_by_q):
        rankings = [run.get(qid, []) for run in runs]
        if any(rankings):
            pools.append(pool_from_runs(rankings, depth))
            relevant.append(rel_by_q[qid])
    return pools, relevant


def curves_for(pools: list[QueryPool], relevant: list[set], order: str, seed: int) -> list[np.ndarray]:
    """Each query's found-so-far curve under one order (bandit seeded per query from `seed`)."""
    return [
        judging_curve(make_order(order, pool, seed=seed * 100_003 + i), rel)
        for i, (pool, rel) in enumerate(zip(pools, relevant, strict=True))
    ]


def measure(pools: list[QueryPool], relevant: list[set], seeds: int) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Table at FRACTIONS and curve at CURVE_POINTS per order (bandit: mean over seeds), and seconds per order."""
    rows, curve_rows, seconds = [], [], {}
    in_pool = sum(len(rel & set(p.fragments)) for p, rel in zip(pools, relevant, strict=True))
    for order in progress_bar(RUN_ORDERS, desc="orders"):
        runs = range(seeds) if order in SEEDED else range(1)
        start = time.perf_counter()
        tables = [found_at(curves_for(pools, relevant, order, s), FRACTIONS + tuple(CURVE_POINTS)) for s in runs]
        seconds[order] = (time.perf_counter() - start) / len(runs)
        mean = np.mean(tables, axis=0)
        spread = (np.min(tables, axis=0), np.max(tables, axis=0))
        for i, frac in enumerate(FRACTIONS):
            rows.append(
                {
                    "order": order,
                    "judged": f"{frac:.0%}",
                    "found": mean[i],
                    "min": spread[0][i],
                    "max": spread[1][i],
                    "share of relevant in pool": mean[i] / in_pool,
                }
            )
        for j, frac in enumerate(CURVE_POINTS):
            curve_rows.append(
                {
                    "order": LABELS[order],
                    "judged (share of pool)": frac,
                    "relevant found (share)": mean[len(FRACTIONS) + j] / in_pool,
                }
            )
    return pd.DataFrame(rows), pd.DataFrame(curve_rows), seconds


def verdict(table: pd.DataFrame) -> list[str]:
    """Where the bandit beats pool order and MoveToFront, and by how much, at each budget."""
    wide = table.pivot(index="judged", columns="order", values="found")
    lines = []
    for bandit in ("bandit", "bandit-max-mean"):
        for judged, row in wide.iterrows():
            for rival in ("pool", "move-to-front"):
                gain = row[bandit] / row[rival] - 1
                word = "more" if gain > 0 else "FEWER"
                lines.append(f"at {judged}: {bandit} finds {gain:+.1%} ({word}) vs {rival}")
    return lines


def chart(curve: pd.DataFrame, html: Path, png: Path | None, title: str) -> None:
    """The found-vs-judged curve: Altair HTML, and a matplotlib PNG when asked."""
    import altair as alt

    base = (
        alt.Chart(curve, title=title)
        .mark_line()
        .encode(
            x=alt.X("judged (share of pool):Q", axis=alt.Axis(format="%")),
            y=alt.Y("relevant found (share):Q", axis=alt.Axis(format="%")),
            color="order:N",
        )
    )
    rules = alt.Chart(pd.DataFrame({"x": FRACTIONS})).mark_rule(strokeDash=[3, 3], color="gray").encode(x="x:Q")
    (base + rules).properties(width=560, height=360).save(str(html))
    if png is None:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for name, part in curve.groupby("order", sort=False):
        ax.plot(part["judged (share of pool)"] * 100, part["relevant found (share)"] * 100, label=name)
    for frac in FRACTIONS:
        ax.axvline(frac * 100, color="gray", linestyle=":", linewidth=0.8)
    ax.set_xlabel("judged (% of each query's pool)")
    ax.set_ylabel("relevant fragments found (% of those in the pool)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def store_latency(pools: list[QueryPool], relevant: list[set], queries: int, samples: int, url: str) -> pd.DataFrame:
    """next_pair latency per queue order in a SQLite/PostgreSQL store holding the first `queries` simulated
    queries (runs stored, pooled, assigned to one annotator), measured with each query's pool half judged, the
    order's replay then walks half the pool (the bandit draws once per replayed step)."""
    import sqlalchemy as sa

    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.assignment import assign
    from db.grading import next_pair, record_judgment
    from db.pooling import pool
    from db.projects import create_project, set_queue_order
    from db.store.models import Fragment, Query, Run, RunEntry
    from db.store.schema import init_db

    engine = init_db(url)
    create_project(engine, "bench", actor=OPERATOR)
    create_user(engine, "ann", "annotator", actor=OPERATOR)
    with engine.begin() as conn:
        ids = {}
        for i, query_pool in enumerate(pools[:queries]):
            qid = conn.execute(
                sa.insert(Query.__table__)
                .values(project_id=1, external_id=f"q{i}", text=f"query {i}")
                .returning(Query.__table__.c.id)
            ).scalar_one()
            rows = [
                {"project_id": 1, "external_id": f"q{i}-d{d}", "text": f"text {i} {d}", "content_hash": f"{i}-{d}"}
                for d in query_pool.fragments
            ]
            conn.execute(sa.insert(Fragment.__table__), rows)
            fids = dict(
                conn.execute(
                    sa.select(Fragment.__table__.c.external_id, Fragment.__table__.c.id).where(
                        Fragment.__table__.c.external_id.like(f"q{i}-%")
                    )
                ).all()
            )
            ids[i] = (qid, fids)
        for r in range(len(pools[0].runs)):
            rid = conn.execute(
                sa.insert(Run.__table__)
                .values(project_id=1, name=f"run{r:02d}", content_hash=str(r), created_at=sa.func.now())
                .returning(Run.__table__.c.id)
            ).scalar_one()
            entries = [
                {
                    "run_id": rid,
                    "query_id": ids[i][0],
                    "doc_external_id": f"q{i}-d{d}",
                    "fragment_id": ids[i][1][f"q{i}-d{d}"],
                    "rank": rank,
                    "score": 1000.0 - rank,
                }
                for i, query_pool in enumerate(pools[:queries])
                for rank, d in enumerate(query_pool.runs[r], start=1)
            ]
            conn.execute(sa.insert(RunEntry.__table__), entries)
    pool(engine, "bench", depth=len(pools[0].runs[0]), bm25=0, actor=OPERATOR)
    assign(engine, "bench", overlap=1, annotators=["ann"], actor=OPERATOR)
    with engine.connect() as conn:  # judge every other pair of each query (truth grades) in one go per query
        pairs = conn.execute(
            sa.text(
                "SELECT p.id, f.external_id FROM pairs p JOIN fragments f ON f.id = p.fragment_id "
                "ORDER BY p.query_id, p.best_rank, p.id"
            )
        ).all()
    truth = {f"q{i}-d{d}" for i, rel in enumerate(relevant[:queries]) for d in rel}
    for pid, ext in progress_bar(pairs[::2], desc="judging half the pool", leave=False):
        record_judgment(engine, pid, "ann", 2 if ext in truth else 0)
    rows = []
    for order in ORDERS:
        set_queue_order(engine, "bench", order, actor=OPERATOR)
        times, cpu = [], []
        for _ in range(samples):
            start, start_cpu = time.perf_counter(), time.process_time()
            next_pair(engine, "bench", "ann")
            times.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
        times.sort()
        cpu.sort()
        # this process's CPU time is the cost a busy machine cannot inflate (a server's own work is not in it)
        rows.append(
            {
                "order": order,
                "p50 ms": times[len(times) // 2],
                "p95 ms": times[int(len(times) * 0.95)],
                "CPU p50 ms": cpu[len(cpu) // 2],
                "CPU p95 ms": cpu[int(len(cpu) * 0.95)],
            }
        )
    set_queue_order(engine, "bench", "pool", actor=OPERATOR)
    engine.dispose()
    return pd.DataFrame(rows)


def main() -> int:
    """Parse options, simulate or load, measure, print, draw."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--runs-simulated", type=int, default=20)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0, help="simulation seed")
    parser.add_argument("--seeds", type=int, default=5, help="bandit seeds averaged (min and max shown)")
    parser.add_argument("--qrels", help="real TREC qrels (with --runs)")
    parser.add_argument("--runs", nargs="+", help="TREC run files pooled at --depth")
    parser.add_argument("--rel-level", type=int, default=1)
    parser.add_argument("--html", default="docs/queue_order.html", help="Altair chart (default %(default)s)")
    parser.add_argument("--png", help="also draw a PNG here (e.g. docs/queue_order.png)")
    parser.add_argument(
        "--store",
        metavar="URL",
        help="also time next_pair per order in this store (an empty "
        "database, e.g. sqlite:////tmp/order.db) on the first --store-queries simulated queries",
    )
    parser.add_argument("--store-queries", type=int, default=5)
    parser.add_argument("--samples", type=int, default=200, help="next_pair calls timed per order")
    args = parser.parse_args()
    if bool(args.qrels) != bool(args.runs):
        parser.error("--qrels and --runs go together")
    if args.qrels:
        pools, relevant = real(args.qrels, args.runs, args.depth, args.rel_level)
        title = f"{len(args.runs)} runs, {len(pools)} queries, depth {args.depth}"
    else:
        pools, relevant = simulate(args.queries, args.runs_simulated, args.depth, args.seed)
        title = f"Simulation: {args.runs_simulated} runs, {args.queries} queries, depth {args.depth}"
    sizes = [len(p.fragments) for p in pools]
    n_rel = sum(len(r & set(p.fragments)) for p, r in zip(pools, relevant, strict=True))
    print(f"{title}: pool {sum(sizes)} pairs ({min(sizes)}–{max(sizes)} per query), {n_rel} relevant in the pool")
    table, curve, seconds = measure(pools, relevant, args.seeds)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}" if v < 1 else f"{v:.1f}"))
    print("\n".join(verdict(table)))
    print("seconds to order the whole pool once: " + ", ".join(f"{k} {v:.2f}" for k, v in seconds.items()))
    chart(curve, Path(args.html), Path(args.png) if args.png else None, title)
    print(f"chart: {args.html}" + (f", {args.png}" if args.png else ""))
    if args.store:
        print(f"next_pair latency, {args.store_queries} queries stored, each pool half judged:")
        print(
            store_latency(pools, relevant, args.store_queries, args.samples, args.store).to_string(
                index=False, float_format=lambda v: f"{v:.1f}"
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

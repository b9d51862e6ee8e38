"""`qrelkit reliability`: is a golden set good enough to decide with? From qrels and run files, or from a
project's release and stored runs (`--project`)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from annotator.cli.common import LazyChoices, db_option, print_json, relevance_options, store_engine

if TYPE_CHECKING:
    from eval_core.reliability import MetricReliability, ReliabilityReport


def _fraction(text: str) -> float:
    """argparse type for α and power: a number strictly between 0 and 1."""
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _positive(text: str) -> float:
    """argparse type for δ: a positive number."""
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `reliability` to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "reliability",
        help="are there enough queries, and is the pool biased? (topic set size, ASL, τ, pool bias)",
        description="Per metric: each run's per-query variance; the queries a paired t-test needs to detect "
        "--delta with --power at --alpha (Sakai's topic set size, from the variance it names); the "
        "smallest difference the current queries detect; discriminative power (run pairs "
        "significantly different after the correction) and each pair's ASL; Kendall's τ between "
        "the run rankings on random halves of the queries; each pooled run's loss when the pairs "
        "only it contributed are left out, and judged@k. Either QRELS RUN … or --project.",
    )
    db_option(p)
    p.add_argument("files", nargs="*", metavar="QRELS RUN", help="a qrels file, then one or more run files")
    p.add_argument("--project", help="a project in the store: a release's qrels and the stored runs")
    p.add_argument("--release", default="latest", help="with --project: the release (default latest)")
    p.add_argument("--runs", dest="run_names", metavar="A,B,…", help="with --project: stored runs (default all)")
    p.add_argument(
        "--metric", action="append", metavar="M", help="a metric with its cutoff (repeatable; default ndcg@10)"
    )
    p.add_argument("--delta", type=_positive, default=0.02, help="the difference to detect (default 0.02)")
    p.add_argument("--alpha", type=_fraction, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--power", type=_fraction, default=0.8, help="power 1 − β (default 0.8)")
    p.add_argument(
        "--correction",
        choices=LazyChoices("eval_core.reliability.discrimination", "Correction"),
        metavar="C",
        default="tukey-hsd",
        help="multiple-comparison correction: tukey-hsd (Sakai's randomised Tukey HSD, default) or "
        "holm (Holm-adjusted paired t-tests)",
    )
    p.add_argument(
        "--resamples", type=int, default=1000, help="resamples for Tukey HSD and the split halves (default 1000)"
    )
    p.add_argument("--seed", type=int, default=0, help="resampling seed (same seed, same numbers)")
    p.add_argument(
        "--pool-depth",
        type=int,
        default=10,
        help="with files: each run pooled its top N (default 10); the store knows its pool",
    )
    p.add_argument("--judged-k", type=int, default=10, help="judged@k's k (default 10)")
    relevance_options(p)
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_reliability)


def _report(args: argparse.Namespace) -> ReliabilityReport:
    """The report from files or from the store."""
    from eval_core.reliability import Settings

    settings = Settings(args.delta, args.alpha, args.power, args.correction, args.resamples, args.seed, args.judged_k)
    metrics = args.metric or ["ndcg@10"]
    if args.project:
        from db.reliability import project_reliability

        runs = [r.strip() for r in args.run_names.split(",") if r.strip()] if args.run_names else None
        return project_reliability(
            store_engine(args), args.project, args.release, runs, metrics, settings, args.rel_level
        )
    from eval_core.reliability import reliability

    qrels, *runs = args.files
    names = [Path(r).name for r in runs]
    if len(set(names)) != len(names):
        names = list(runs)
    if len(set(names)) != len(names):
        raise ValueError("the same run file is given twice")
    return reliability(
        qrels,
        dict(zip(names, runs, strict=True)),
        metrics,
        settings=settings,
        pool_depth=args.pool_depth,
        rel_level=args.rel_level,
        scale=args.scale,
    )


def cmd_reliability(args: argparse.Namespace) -> int:
    """Print the summary per metric (or the JSON report)."""
    if bool(args.project) == bool(args.files):
        raise ValueError("give either QRELS RUN … (files) or --project (a release and the stored runs)")
    if args.project and args.scale:
        raise ValueError("--scale goes with files; a project's scale comes from the store")
    if args.files and len(args.files) < 2:
        raise ValueError("give a qrels file and at least one run file")
    if args.files and (args.run_names or args.release != "latest"):
        raise ValueError("--runs and --release go with --project")
    if args.pool_depth < 1 or args.judged_k < 1:
        raise ValueError("--pool-depth and --judged-k must be at least 1")
    report = _report(args)
    if args.format == "json":
        print_json(report.to_dict())
    else:
        sys.stdout.write(format_table(report))
    return 0


def _size(value: float) -> str:
    """A query count, or 'beyond reach'."""
    return "beyond reach" if math.isinf(value) else f"{math.ceil(value - 1e-9)}"


def _metric_block(m: MetricReliability, report: ReliabilityReport) -> list[str]:
    """One metric's numbers, readable."""
    s = report.settings
    width = max(8, *(len(r) + 2 for r in report.runs))
    lines = [
        f"{m.metric} over {m.n_queries} queries and {len(report.runs)} run(s)",
        "",
        f"{'run':<{width}}{'mean':>9}{'variance':>10}{f'judged@{s.judged_k}':>11}{'pool drop':>11}",
    ]
    drops = {b.run: b for b in m.pool_bias}
    for r in report.runs:
        drop = f"{drops[r].drop:.4f}" if r in drops else "—"
        lines.append(
            f"{r:<{width}}{m.means[r]:>9.4f}{m.query_variance[r]:>10.4f}{m.judged.get(r, math.nan):>11.3f}{drop:>11}"
        )
    lines += [
        "",
        f"variance of a per-query difference: {m.variance:.5f} ({m.variance_source})",
        f"queries to detect {s.delta:g} with power {s.power:g} at α = {s.alpha:g}: {_size(m.topic_set_size)}",
        f"smallest difference {m.n_queries} queries detect: "
        + ("—" if math.isinf(m.detectable) else f"{m.detectable:.4f}"),
    ]
    if m.pairs:
        power = m.discriminative_power or 0.0
        tau = m.tau_summary
        lines.append(
            f"discriminative power ({s.correction.label}): {m.significant} of {len(m.pairs)} pairs "
            f"({power:.0%}) have ASL < {s.alpha:g}"
        )
        lines += [
            f"  {p.a} – {p.b}: difference {p.difference:+.4f}, ASL {p.asl:.4f}"
            for p in sorted(m.pairs, key=lambda p: p.asl)
        ]
        if tau["mean"] is not None:
            lines.append(
                f"split-half Kendall τ over {s.resamples} random halves: mean {tau['mean']:.3f}, "
                f"sd {tau['sd']:.3f}, 5th–95th percentile {tau['p5']:.3f} … {tau['p95']:.3f}"
            )
    worst = m.underrating
    if worst is not None:
        lines.append(
            f"largest pool drop: {worst.run} loses {worst.drop:.4f} without its {worst.own_pairs} own judged pair(s)"
        )
    return lines


def format_table(report: ReliabilityReport) -> str:
    """The readable summary: per metric the sentence, then the numbers behind it."""
    from eval_core.reliability import sentence

    lines = [f"Reliability of {report.source}", ""]
    for m in report.metrics:
        lines += [sentence(m, report.settings), "", *_metric_block(m, report), ""]
    if not report.pooled:
        lines.append("no run contributed to the pool: pool bias is not measured")
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines).rstrip() + "\n"

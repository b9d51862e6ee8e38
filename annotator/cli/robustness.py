"""`qrelkit robustness`: does a run comparison survive the disagreement in its labels? From the store
(`--project`) or from files (a judgments file and run files), no database needed for the latter."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from annotator.cli.common import LazyChoices, db_option, print_json, scale_type, store_engine

if TYPE_CHECKING:
    from eval_core.robustness import RobustnessReport


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `robustness` to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "robustness",
        help="do run rankings hold under every consensus rule, annotator and a bootstrap?",
        description="Each run's metric under every consensus rule, each annotator's own grades, human-only vs "
        "human + model labels and a bootstrap over annotators per pair; Kendall's τ between the "
        "rankings; whether 'A beats B' holds under all of them. Either --project (stored runs) or "
        "--judgments FILE with run files.",
    )
    db_option(p)
    p.add_argument("runs", nargs="*", metavar="RUN", help="run files (with --judgments)")
    p.add_argument("--project", help="a project in the store: its judgments, adjudications and stored runs")
    p.add_argument(
        "--judgments",
        metavar="FILE",
        help="a judgments file (JSONL/CSV: query_id, fragment_id, annotator, grade); mark model judges with --model",
    )
    p.add_argument("--adjudications", metavar="FILE", help="with --judgments: lead decisions (they win)")
    p.add_argument(
        "--scale",
        type=scale_type,
        default=None,
        help="with --judgments: grading scale (default: the one the file names, else 0-3)",
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ANNOTATOR",
        help="with --judgments: count this annotator as a model judge (repeatable)",
    )
    p.add_argument("--runs", dest="run_names", metavar="A,B,…", help="with --project: stored runs (default all)")
    p.add_argument("--metric", default="ndcg@10", help="one metric with its cutoff (default ndcg@10)")
    p.add_argument(
        "--rel-level",
        type=int,
        default=None,
        help="binary metrics count grades from this one as relevant (default: the scale's second "
        "grade, 1 on 0-3; nDCG uses the grades)",
    )
    p.add_argument(
        "--rule",
        choices=LazyChoices("eval_core.consensus", "RULES"),
        metavar="RULE",
        default="median",
        help="the reference rule: it names each pair's winner and combines bootstrap draws (median)",
    )
    p.add_argument("--bootstrap", type=int, default=200, help="replicates over annotators per pair (0: none)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (same seed, same numbers)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_robustness)


def _from_files(args: argparse.Namespace, progress: Callable[[int], object]) -> RobustnessReport:
    """File mode: judgments, optional adjudications and run files; names are the files' names."""
    from eval_core.io.judgments import declared_scale, read_adjudications, read_judgments
    from eval_core.robustness import robustness

    scale = args.scale or declared_scale(args.judgments) or (0, 3)
    names = [Path(r).name for r in args.runs]
    if len(set(names)) != len(names):
        names = list(args.runs)
    if len(set(names)) != len(names):
        raise ValueError("the same run file is given twice")
    frame = read_judgments(args.judgments, scale, progress=True)
    adjudications = read_adjudications(args.adjudications, scale) if args.adjudications else None
    return robustness(
        frame,
        dict(zip(names, args.runs, strict=True)),
        metric=args.metric,
        adjudications=adjudications,
        scale=scale,
        rule=args.rule,
        bootstrap=args.bootstrap,
        seed=args.seed,
        rel_level=args.rel_level,
        models=args.model,
        progress=progress,
    )


def _from_store(args: argparse.Namespace, progress: Callable[[int], object]) -> RobustnessReport:
    """Store mode: the project's judgments (with their annotator kinds), adjudications and stored runs."""
    from db.evaluations import project_robustness

    runs = [r.strip() for r in args.run_names.split(",") if r.strip()] if args.run_names else None
    return project_robustness(
        store_engine(args),
        args.project,
        runs,
        metric=args.metric,
        rule=args.rule,
        bootstrap=args.bootstrap,
        seed=args.seed,
        rel_level=args.rel_level,
        progress=progress,
    )


def cmd_robustness(args: argparse.Namespace) -> int:
    """Print the conditions, τ and one sentence per pair of runs (or the JSON report)."""
    from eval_core.progress import bar as progress_bar

    if bool(args.project) == bool(args.judgments):
        raise ValueError("give either --project (stored runs) or --judgments FILE with run files")
    if args.project and (args.runs or args.model or args.adjudications or args.scale):
        raise ValueError(
            "run files, --model, --adjudications and --scale go with --judgments; with --project "
            "name stored runs by --runs a,b and the store supplies the rest"
        )
    if args.judgments and args.run_names:
        raise ValueError("--runs names stored runs (with --project); with --judgments give run files")
    bar = progress_bar(total=args.bootstrap, desc="bootstrap", unit=" rep", leave=False, show=bool(args.bootstrap))
    try:
        report = _from_store(args, bar.update) if args.project else _from_files(args, bar.update)
    finally:
        bar.close()
    if args.format == "json":
        print_json(report.to_dict())
    else:
        sys.stdout.write(format_table(report))
    return 0


def format_table(report: RobustnessReport) -> str:
    """Metric per condition and run, the τ matrix, the bootstrap and one sentence per pair of runs."""
    width = max(len(c.name) for c in report.conditions) + 2
    runs = report.runs
    cols = [max(8, len(r) + 2) for r in runs]
    lines = [
        f"{report.metric} per condition (reference: {report.reference})",
        "",
        f"{'condition':<{width}}{'pairs':>7}{'queries':>9}  "
        + "".join(f"{r:>{w}}" for r, w in zip(runs, cols, strict=True)),
    ]
    for c in report.conditions:
        lines.append(
            f"{c.name:<{width}}{c.n_pairs:>7}{c.n_queries:>9}  "
            + "".join(f"{c.values[r]:>{w}.4f}" for r, w in zip(runs, cols, strict=True))
        )
    lines += ["", "Kendall τ-b between the rankings each condition induces:"]
    short = [f"c{i + 1}" for i in range(len(report.conditions))]
    lines.append(f"{'':<{width + 5}}" + "".join(f"{s:>7}" for s in short))
    for s, c, row in zip(short, report.conditions, report.tau, strict=True):
        lines.append(f"{s:<5}{c.name:<{width}}" + "".join(f"{'—' if v is None else f'{v:.2f}':>7}" for v in row))
    boot = report.bootstrap
    if boot is not None:
        from eval_core.robustness import CONFIDENCE, percent

        lines += [
            "",
            f"bootstrap over annotators per pair: {boot.replicates} replicates, seed {boot.seed}, rule {boot.rule}",
        ]
        for r in runs:
            low, high = boot.interval[r]
            lines.append(
                f"  {r:<{max(len(x) for x in runs) + 2}}mean {boot.mean[r]:.4f}  "
                f"{CONFIDENCE:.0%} [{low:.4f}, {high:.4f}]"
            )
        tau = "undefined" if boot.tau_mean is None else f"mean {boot.tau_mean:.3f}, min {boot.tau_min:.3f}"
        lines.append(
            f"  τ with the reference ranking: {tau}; same ranking in {percent(boot.same_ranking)} of replicates"
        )
    lines += ["", "verdicts:"]
    lines += [f"  {'holds' if p.holds else 'FLIPS'}  {p.sentence}" for p in report.pairs]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines) + "\n"

"""`qrelkit eval`: score runs against a golden set from the shell, and gate CI on the means."""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotator.cli import RawDescriptionHelpFormatter
from annotator.cli.common import averaging_options, relevance_options
from eval_core.ranking.registry import DEFAULT_K, DEFAULT_METRICS, help_text

if TYPE_CHECKING:
    from eval_core.ranking.evaluation import Evaluation

PROGRESS_BYTES = 32 * 1024 * 1024


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `qrelkit eval` to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "eval",
        help="evaluate runs against qrels (trec_eval semantics)",
        formatter_class=RawDescriptionHelpFormatter,
        description="Evaluate one or more runs against qrels. Queries in the qrels but missing from a run\n"
        "score 0 (trec_eval -c); run-only queries are ignored; both are reported as warnings.\n\n"
        "Metrics (@k: a cutoff, expanded over --k when written bare; [@k]: optional cutoff;\n"
        "@p: persistence, default 0.8; any name takes a _condensed suffix):\n" + help_text(),
    )
    p.add_argument("qrels", help="qrels: TREC, BEIR TSV, JSONL or CSV (gzip fine)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="runs: TREC, JSONL or CSV (gzip fine)")
    p.add_argument(
        "--metrics",
        action="append",
        metavar="LIST",
        help="comma-separated metric names, e.g. P@k,ndcg@10,map,rbp@0.8,ndcg@k_condensed "
        f"(default: {' '.join(DEFAULT_METRICS)})",
    )
    p.add_argument(
        "--k",
        default=",".join(map(str, DEFAULT_K)),
        metavar="LIST",
        help="cutoffs for metrics given without one (default %(default)s)",
    )
    relevance_options(p)
    averaging_options(p)
    p.add_argument(
        "--max-grade",
        type=int,
        default=None,
        metavar="N",
        help="top grade of the scale, for ERR (default 3, or HIGH with --scale; higher grades are "
        "clipped, with a warning)",
    )
    p.add_argument(
        "--qrels-format",
        choices=("auto", "jg"),
        default="auto",
        help="jg: multi-judge qrels `qid judge docid grade` (trec_eval -R qrels_jg); every metric is "
        "computed against each judge group and averaged per query, with the spread over judges",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="threads reading several runs, or blocks of whole queries of a big TREC run, in parallel "
        "(default: every core); results are bit-identical for any N",
    )
    p.add_argument("--per-query", action="store_true", help="also print every query's values")
    p.add_argument("--categories", metavar="FILE", help="TSV/CSV/JSONL with query_id and category columns")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument(
        "--fail-below",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit 1 when a run's mean METRIC is below VALUE (repeatable)",
    )
    p.set_defaults(func=cmd_eval)


def _gates(specs: list[str]) -> list[tuple[str, float]]:
    """Parse `METRIC=VALUE` gates; a malformed one is a usage error."""
    gates = []
    for spec in specs:
        name, sep, value = spec.partition("=")
        try:
            threshold = float(value)
        except ValueError:
            threshold = math.nan
        if not sep or not name.strip() or math.isnan(threshold):
            raise ValueError(f"--fail-below expects METRIC=VALUE, got {spec!r}")
        gates.append((name.strip(), threshold))
    return gates


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate every run, print the chosen format, then apply the gates (exit 1 if any fails)."""
    from eval_core.io.formats import load_qrels, qrels_scale, read_categories
    from eval_core.io.trec_text import read_qrels_jg
    from eval_core.ranking.evaluation import evaluate, evaluate_judge_groups
    from eval_core.ranking.metrics import parse_metrics
    from eval_core.ranking.run_blocks import default_workers

    try:
        k = tuple(int(x) for x in args.k.split(",") if x.strip())
        if not k or min(k) < 1:
            raise ValueError
    except ValueError:
        raise ValueError(f"--k expects positive integers, got {args.k!r}") from None
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers expects a positive integer, got {args.workers}")
    names = [m for group in args.metrics or [",".join(DEFAULT_METRICS)] for m in group.split(",") if m.strip()]
    gates = _gates(args.fail_below)  # bad specs and unknown metrics take the CLI's one error path (exit 2)
    names += [g for g, _ in gates]  # a gate is computed even when not listed; duplicates collapse
    gate_names = {g: parse_metrics([g], k)[0].name for g, _ in gates}
    parse_metrics(names, k)
    jg = args.qrels_format == "jg"
    qrels = read_qrels_jg(args.qrels) if jg else load_qrels(args.qrels)
    if args.scale is not None and not jg:
        _check_scale(qrels.value, args.scale, args.qrels)
    scale = args.scale if jg else qrels_scale(qrels, args.scale)  # a release's JSONL/CSV names its scale
    categories = None if args.categories is None else read_categories(args.categories)
    sizes = [Path(r).stat().st_size if Path(r).is_file() else 0 for r in args.runs]
    results: list[Evaluation] = []
    bar = _byte_bar(sum(sizes))
    options = {
        "metrics": names,
        "k": k,
        "rel_level": args.rel_level,
        "categories": categories,
        "max_grade": args.max_grade,
        "scale": scale,
        "missing": args.missing,
        "trec_eval_version": int(args.trec_eval_version),
    }
    labels = _labels(args.runs)
    workers = default_workers() if args.workers is None else args.workers
    if not jg and len(args.runs) > 1 and workers > 1:
        results = _side_by_side(qrels, args.runs, labels, sizes, bar, workers, options)
    else:
        for run, label, size in zip(args.runs, labels, sizes, strict=True):
            bar.set_postfix_str(label)
            start = bar.n
            if jg:
                results.append(evaluate_judge_groups(qrels, run, name=label, **options))
            else:
                results.append(evaluate(qrels, run, name=label, progress=bar.update, workers=args.workers, **options))
            bar.update(start + size - bar.n)  # runs read whole (or gzip read ahead) report at the end
    bar.close()
    _print(results, args.format, args.per_query)
    for ev in results:
        for w in ev.warnings:
            print(f"qrelkit eval: warning: {ev.name}: {w}", file=sys.stderr)
    failed = [(ev.name, g, ev.mean[gate_names[g]], t) for ev in results for g, t in gates if ev.mean[gate_names[g]] < t]
    for name, g, value, t in failed:
        print(f"qrelkit eval: gate failed: {name}: {g} = {value:.4f} < {t:g}", file=sys.stderr)
    return 1 if failed else 0


def _side_by_side(
    qrels: Any, runs: list[str], labels: list[str], sizes: list[int], bar: Any, workers: int, options: dict[str, Any]
) -> list[Evaluation]:
    """Several runs evaluated `workers` at a time, one thread each (a run's result does not depend on the threads
    reading it, so the output is byte-identical to one run after another). Small runs are where this counts: one
    run of 200 × 1,000 lines is read and ranked in a single block, so a second core is idle unless a second run
    uses it. Results, and the first error, come in the order the runs were given; the bar advances as they do."""
    from concurrent.futures import ThreadPoolExecutor

    from eval_core.ranking.evaluation import evaluate

    def one(run: str, label: str) -> Evaluation:
        return evaluate(qrels, run, name=label, workers=1, **options)

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(one, run, label) for run, label in zip(runs, labels, strict=True)]
        results = []
        for future, label, size in zip(futures, labels, sizes, strict=True):
            bar.set_postfix_str(label)
            results.append(future.result())
            bar.update(size)
        return results
    finally:
        pool.shutdown(cancel_futures=True)


def _check_scale(grades: Any, scale: tuple[int, int], path: str) -> None:
    """Refuse qrels whose grades read as gains (the lowest at 0, none above HIGH − LOW) under a declared --scale
    whose lowest grade is above 0: a qrelkit release's TREC and BEIR qrels hold gains, and shifting them again
    would count the scale's second grade as not relevant. Other grades outside the scale are on_scale's error."""
    import numpy as np

    from eval_core.errors import InputError

    low, high = scale
    values = np.asarray(grades, dtype=np.int64)
    if low > 0 and values.size and values.min() < low and values.min() >= 0 and values.max() <= high - low:
        raise InputError(
            path,
            None,
            f"the grades run {values.min()}-{values.max()}, which contradicts --scale "
            f"{low}-{high} (grade {values.min()} is below its lowest grade {low}) and reads "
            f"as gains (grade - {low}), as qrelkit's TREC and BEIR release exports write "
            "them: evaluate this file without --scale, or export the release with "
            "--grades as-judged",
        )


def _byte_bar(total: int) -> Any:
    """A bar over the runs' bytes, drawn when they are big enough to wait for (and stderr is a terminal); else a
    quiet one, without tqdm's import (5 % of a small evaluation's start-up)."""
    from eval_core.progress import bar

    return bar(
        total=total, show=total >= PROGRESS_BYTES, desc="evaluating", unit="B", unit_scale=True, unit_divisor=1024
    )


def _labels(runs: list[str]) -> list[str]:
    """Run names: file names, or full paths when two runs share a file name."""
    names = [Path(r).name for r in runs]
    return names if len(set(names)) == len(names) else list(runs)


def _print(results: list[Evaluation], fmt: str, per_query: bool) -> None:
    if fmt == "json":
        json.dump({"runs": [ev.to_dict(per_query=per_query) for ev in results]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif fmt == "csv":
        _print_csv(results, per_query)
    else:
        _print_table(results, per_query)


def _print_csv(results: list[Evaluation], per_query: bool) -> None:
    """One row per run and query, one column per metric.

    `all` is the mean (trec_eval's convention), `all@J` judge J's."""
    from eval_core.io.spreadsheet import escape_cell

    metrics = list(results[0].mean)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["run", "query_id", *metrics])
    for ev in results:
        name = escape_cell(ev.name)
        out.writerow([name, "all", *(f"{ev.mean[m]:.6f}" for m in metrics)])
        if per_query:
            for qid, row in ev.per_query.iterrows():
                out.writerow([name, escape_cell(str(qid)), *(f"{row[m]:.6f}" for m in metrics)])
        for judge, means in ev.judge_means.items():  # multi-judge qrels: `all@judge` rows, one per judge group
            out.writerow([name, escape_cell(f"all@{judge}"), *(f"{means[m]:.6f}" for m in metrics)])


def _print_table(results: list[Evaluation], per_query: bool) -> None:
    """Metrics down, runs across; per-category and per-query blocks follow when asked for."""
    metrics = list(results[0].mean)
    width = max(len(m) for m in metrics) + 2
    cols = [ev.name for ev in results]
    colw = [max(len(c), 8) + 2 for c in cols]
    first = results[0]
    print(f"missing queries: {first.missing}; trec_eval {first.trec_eval_version} ranking")
    print("metric".ljust(width) + "".join(c.rjust(w) for c, w in zip(cols, colw, strict=True)))
    for m in metrics:
        print(m.ljust(width) + "".join(f"{ev.mean[m]:.4f}".rjust(w) for ev, w in zip(results, colw, strict=True)))
    for ev in results:
        if ev.per_judge is not None:
            print(
                f"\n{ev.name} over {len(ev.per_judge)} judge groups (mean of each query's judges; lowest and "
                "highest judge mean)"
            )
            spread = ev.judge_spread
            print("metric".ljust(width) + "mean".rjust(10) + "min".rjust(10) + "max".rjust(10))
            for m in metrics:
                print(m.ljust(width) + "".join(f"{v:.4f}".rjust(10) for v in (ev.mean[m], *spread[m])))
        if ev.by_category is not None:
            print(f"\n{ev.name} by category")
            print(ev.by_category.to_string(float_format=lambda v: f"{v:.4f}"))
        if per_query:
            print(f"\n{ev.name} per query")
            print(ev.per_query.to_string(float_format=lambda v: f"{v:.4f}"))
            for judge, frame in (ev.per_judge or {}).items():
                print(f"\n{ev.name} per query, judge {judge}")
                print(frame.to_string(float_format=lambda v: f"{v:.4f}"))

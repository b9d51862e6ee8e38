"""`qrelkit compare` (paired tests between runs) and `qrelkit diagnose` (where one run loses its fragments)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotator.cli.common import averaging_options, relevance_options
from eval_core.ranking.paired_tests import TEST_NAMES, TESTS
from eval_core.thresholds import Thresholds

if TYPE_CHECKING:
    from eval_core.ranking.report import Diagnosis
    from eval_core.ranking.significance import Comparison

MAX_ROWS = 20


def _metrics(values: list[str] | None) -> list[str]:
    """--metric may repeat and may hold comma lists."""
    names = [m.strip() for v in values or ["ndcg@10"] for m in v.split(",") if m.strip()]
    return list(dict.fromkeys(names))


def _table(header: list[str], rows: list[list[Any]]) -> str:
    """Plain aligned text columns, numbers right-aligned."""
    cells = [header] + [[f"{c:.4f}" if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    numeric = [all(isinstance(row[i], int | float) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()
        for r in cells
    )


def format_comparison(result: Comparison) -> str:
    """The comparison as tables of means and pairs, then one sentence per pair."""
    out = [
        f"{TEST_NAMES[result.test]} over {result.n_queries} queries, alpha = {result.alpha:g}"
        + (", Holm-corrected per metric" if result.correction == "holm" else "")
        + (f", each run against {result.baseline}" if result.baseline else "")
        + f"; missing queries: {result.missing}, trec_eval {result.trec_eval_version} ranking"
    ]
    out += [
        "",
        _table(["run", *result.metrics], [[r, *(result.means[r][m] for m in result.metrics)] for r in result.runs]),
    ]
    rows = [
        [
            p.metric,
            p.run_a,
            p.run_b,
            p.diff,
            f"[{p.ci_low:.4f}, {p.ci_high:.4f}]",
            p.p_value,
            "-" if p.p_adjusted is None else f"{p.p_adjusted:.4f}",
            p.better,
            p.worse,
            p.unchanged,
            "yes" if p.significant else "no",
        ]
        for p in result.pairs
    ]
    ci = f"{round(result.pairs[0].confidence * 100)}% CI" if result.pairs else "CI"
    if result.pairs:
        ci += f" ({result.pairs[0].ci_method})"
    out += [
        "",
        _table(["metric", "A", "B", "B-A", ci, "p", "p_holm", "better", "worse", "same", "significant"], rows),
        "",
    ]
    out += result.sentences()
    return "\n".join(out)


def format_diagnosis(d: Diagnosis, max_rows: int = MAX_ROWS) -> str:
    """The diagnosis as a short report a person reads top to bottom."""
    depth = d.depth
    out = [
        f"Diagnosis of {d.run} over {d.n_queries} queries",
        "",
        f"Two-depth diagnosis: recall@{depth.candidate_depth} = {depth.recall_candidate:.4f}, "
        f"recall@{depth.context_depth} = {depth.recall_context:.4f}, "
        f"nDCG@{depth.context_depth} = {depth.ndcg_context:.4f}",
        f"  {depth.verdict}",
        "",
        "Recall curve: " + "  ".join(f"@{k} {v:.3f}" for k, v in zip(d.curve.ks, d.curve.recall, strict=True)),
        f"  {d.curve.verdict}",
        f"  rule: {d.curve.rule}",
        "",
        d.coverage.message,
        d.judged.message,
    ]
    if d.judged.unjudged:
        shown = d.judged.unjudged[:max_rows]
        out += ["", _table(["query_id", "doc_id", "rank"], [[p["query_id"], p["doc_id"], p["rank"]] for p in shown])]
        if len(d.judged.unjudged) > max_rows:
            out.append(f"… {len(d.judged.unjudged) - max_rows} more (use --format json for all)")
    low = d.low_recall
    out += [
        "",
        f"Low-recall queries (recall@{d.low_recall_k} < {d.thresholds['low_recall']:g}): {len(low)} of {d.n_queries}",
    ]
    for q in low[:max_rows]:
        out.append(f"  {q.query_id}: recall@{q.k} = {q.recall:.3f}, {q.n_relevant} relevant")
        out += [f"    - {issue}" for issue in q.issues]
    if len(low) > max_rows:
        out.append(f"  … {len(low) - max_rows} more (use --format json for all)")
    if d.categories is not None:
        c = d.categories
        out += [
            "",
            "By category:",
            _table(
                ["category", "queries", *c.metrics],
                [[r["category"], r["queries"], *(r[m] for m in c.metrics)] for r in c.rows],
            ),
        ]
        if c.note:
            out.append(f"  {c.note}")
    return "\n".join(out)


def _warn(warnings: list[str]) -> None:
    for w in warnings:
        print(f"qrelkit: warning: {w}", file=sys.stderr)


def cmd_compare(args: argparse.Namespace) -> int:
    """Run `qrelkit compare`."""
    from eval_core.ranking.significance import compare

    if len(args.runs) < 2:
        raise ValueError("compare needs at least two runs")
    # Bad input (InputError, a ValueError) takes the CLI's one error path: `qrelkit: error: …`, exit 2.
    result = compare(
        args.qrels,
        [str(p) for p in args.runs],
        _metrics(args.metric),
        args.test,
        baseline=args.baseline,
        alpha=args.alpha,
        n_permutations=args.permutations,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        rel_level=args.rel_level,
        scale=args.scale,
        progress=True,
        missing=args.missing,
        trec_eval_version=args.trec_eval_version,
    )
    _warn(result.warnings)
    print(
        json.dumps(result.to_dict(), indent=2, ensure_ascii=False)
        if args.format == "json"
        else format_comparison(result)
    )
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Run `qrelkit diagnose`."""
    from eval_core.io.collection import fragment_texts
    from eval_core.ranking.report import diagnose

    thresholds = Thresholds(
        min_candidate_recall=args.min_candidate_recall,
        min_context_share=args.min_context_share,
        min_context_ndcg=args.min_context_ndcg,
        low_recall=args.low_recall_threshold,
        min_judged=args.min_judged,
    )
    fragments = fragment_texts(args.fragments) if args.fragments else None
    result = diagnose(
        args.qrels,
        args.run,
        fragments=fragments,
        candidate_depth=args.candidate_depth,
        context_depth=args.context_depth,
        low_recall_k=args.low_recall_k,
        rel_level=args.rel_level,
        scale=args.scale,
        categories=args.categories,
        thresholds=thresholds,
    )
    _warn(result.warnings)
    print(
        json.dumps(result.to_dict(), indent=2, ensure_ascii=False)
        if args.format == "json"
        else format_diagnosis(result)
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `compare` and `diagnose` to the `qrelkit` parser."""
    d = Thresholds()
    p = subparsers.add_parser(
        "compare",
        help="paired significance tests between runs on the same qrels",
        description="Test whether runs differ per metric: randomization (default), "
        "paired t (with its t interval) or Wilcoxon signed-rank (with the "
        "Hodges–Lehmann interval); the randomization test's interval is a "
        "bootstrap interval of the mean difference, named so; Holm-corrected "
        "per metric when there are several pairs; a query set too small to "
        "reach alpha is said.",
    )
    p.add_argument("qrels", type=Path)
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="two or more runs (RUN_A RUN_B …)")
    p.add_argument("--metric", action="append", metavar="M", help="metric name, repeatable (default ndcg@10)")
    p.add_argument("--test", choices=TESTS, default="randomization")
    p.add_argument(
        "--baseline", metavar="RUN", help="compare each run against this one (its file name) instead of all pairs"
    )
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--permutations", type=int, default=10_000)
    p.add_argument("--bootstrap", type=int, default=10_000, help="bootstrap resamples for the randomization test's CI")
    p.add_argument("--seed", type=int, default=0)
    relevance_options(p)
    averaging_options(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=cmd_compare)

    q = subparsers.add_parser(
        "diagnose",
        help="recall curve, two-depth diagnosis, low-recall queries, judged@k",
        description="Where does this run lose its relevant fragments, and can its numbers be trusted?",
    )
    q.add_argument("qrels", type=Path)
    q.add_argument("run", type=Path)
    q.add_argument(
        "--fragments", type=Path, help="the fragments file (any layout `import fragments` reads), for snippets"
    )
    q.add_argument("--categories", type=Path, help="query → category file, for the per-category breakdown")
    q.add_argument("--candidate-depth", type=int, default=100)
    q.add_argument("--context-depth", type=int, default=10)
    q.add_argument("--low-recall-k", type=int, default=5)
    q.add_argument("--low-recall-threshold", type=float, default=d.low_recall)
    q.add_argument("--min-candidate-recall", type=float, default=d.min_candidate_recall)
    q.add_argument("--min-context-share", type=float, default=d.min_context_share)
    q.add_argument("--min-context-ndcg", type=float, default=d.min_context_ndcg)
    q.add_argument("--min-judged", type=float, default=d.min_judged)
    relevance_options(q)
    q.add_argument("--format", choices=("table", "json"), default="table")
    q.set_defaults(func=cmd_diagnose)

"""`qrelkit pool|assign|release|disputes|adjudicate|export|evaluate-run|holes`: the store's golden-set workflow from the
shell.

Handlers are named cmd_<command>, import the store inside, and act as the CLI operator (release and adjudicate:
as the lead named with --lead).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotator.cli.common import (
    LazyChoices,
    db_option,
    emit,
    lead_option,
    print_json,
    report_option,
    stage_bar,
    store_engine,
)
from eval_core.thresholds import MODEL_THRESHOLD

CHANGED_LISTED = 20


def cmd_pool(args: argparse.Namespace) -> int:
    """Pool the stored runs (and BM25) into pairs to judge, or (--search) a live search engine's top-k."""
    from db.accounts.permissions import OPERATOR
    from db.pooling import POOL_STEPS, pool

    if args.search is not None:
        return _pool_search(args)
    if args.name is not None:
        raise ValueError("--name names the run a --search pool stores; give --search CONFIG too")
    if args.depth is None:
        raise ValueError("pool needs --depth K (or --search CONFIG, whose k is the depth)")
    engine = store_engine(args)
    bar, step = stage_bar(POOL_STEPS, "pool")
    with bar:
        report = pool(
            engine, args.project, args.depth, runs=args.run or None, bm25=args.bm25, progress=step, actor=OPERATOR
        )
    emit(args, report.to_dict())
    return 0


def _pool_search(args: argparse.Namespace) -> int:
    """Search the engine a config names for every query of the project, store the top-k as a run with its
    request, pool it; nothing is stored when any query fails."""
    from annotator.search_client import pool_from_search
    from db.accounts.permissions import OPERATOR
    from eval_core.progress import bar as progress_bar

    if args.run or args.bm25 is not None:
        raise ValueError("--search pools the engine's run alone: pool stored runs and BM25 in another call")
    engine = store_engine(args)
    bars = []

    def progress(total: int) -> Callable[[], None]:
        bars.append(progress_bar(total=total, desc="search", unit="query", leave=False))
        return lambda: bars[0].update(1)

    try:
        report, note = pool_from_search(
            engine, args.project, args.search, args.name, args.depth, actor=OPERATOR, progress=progress
        )
    finally:
        for bar in bars:
            bar.close()
    emit(args, report.to_dict())
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0


def cmd_assign(args: argparse.Namespace) -> int:
    """Give pairs to annotators."""
    from db.accounts.permissions import OPERATOR
    from db.assignment import assign, pairs_from_file

    names = [n.strip() for n in args.annotators.split(",") if n.strip()] if args.annotators else None
    engine = store_engine(args)
    report = assign(
        engine,
        args.project,
        overlap=args.overlap,
        fraction=args.fraction,
        annotators=names,
        seed=args.seed,
        actor=OPERATOR,
        pair_ids=None if args.pairs is None else pairs_from_file(engine, args.project, args.pairs),
    )
    emit(args, report.to_dict())
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    """Create the next release and print its card."""
    from db.accounts.permissions import OPERATOR
    from db.releases import RELEASE_STEPS, create_release

    engine = store_engine(args)
    bar, step = stage_bar(RELEASE_STEPS, "release")
    with bar:
        info = create_release(
            engine,
            args.project,
            rule=args.rule,
            min_grades=args.min_grades,
            progress=step,
            actor=args.user or OPERATOR,
            policy=args.policy,
            model_threshold=MODEL_THRESHOLD if args.model_threshold is None else args.model_threshold,
            decision=args.decision,
        )
    emit(args, info.card)
    if info.card.get("model"):
        report_doubt(info.card["model"]["doubt"])
    return 0


def report_doubt(doubt: dict) -> None:
    """A model rule's doubtful pairs on stderr: how many, then each (query, fragment, grade, top posterior)."""
    listed = doubt["listed"]
    more = doubt["pairs"] - len(listed)
    print(
        f"qrelkit: {doubt['pairs']} pair(s) with a top posterior below {doubt['threshold']:g}"
        + (f" ({more} more on the card's count than listed)" if more else "")
        + (":" if listed else ""),
        file=sys.stderr,
    )
    for item in listed:
        print(
            f"  {item['query_id']}\t{item['fragment_id']}\tgrade {item['grade']}\ttop posterior "
            f"{item['top_posterior']:.3f}",
            file=sys.stderr,
        )


def cmd_adjudicate(args: argparse.Namespace) -> int:
    """Record a lead's final grade for a pair, in the name of the lead given with --lead (checked)."""
    from db.accounts.permissions import OPERATOR
    from db.adjudication import adjudicate_pair

    info = adjudicate_pair(
        store_engine(args),
        args.project,
        args.query,
        args.fragment,
        args.grade,
        args.reason,
        actor=args.user or OPERATOR,
    )
    emit(
        args,
        {
            "project": args.project,
            "query_id": args.query,
            "fragment_id": args.fragment,
            "grade": info.grade,
            "reason": info.reason,
            "by": info.lead,
            "at": info.created_at.isoformat(),
        },
    )
    return 0


def cmd_disputes(args: argparse.Namespace) -> int:
    """Every pair whose people disagree, widest spread first or (--order doubt) least sure first (the Adjudicate
    page's queue): tab-separated lines `query_id fragment_id spread grades decided` (plus `entropy top` by
    doubt) a shell loop can feed to `qrelkit adjudicate`, or JSON."""
    from db.adjudication import dispute_list, disputes, filter_disputes

    engine = store_engine(args)
    if args.order == "spread":  # plain rows: no pandas for the default order
        found: list[Any] = dispute_list(engine, args.project, args.query, args.boundary)
        doubt = False
    else:
        frame = filter_disputes(disputes(engine, args.project, args.order), args.query, args.boundary)
        found, doubt = list(frame.itertuples(index=False)), "entropy" in frame.columns
    total, decided = len(found), sum(bool(r.adjudicated) for r in found)
    if args.open:
        found = [r for r in found if not r.adjudicated]
    if args.report == "json":  # each person's grade by name: a name may hold ", " or ": "
        print_json(
            [
                {
                    "query_id": r.query_id,
                    "fragment_id": r.fragment_id,
                    "spread": int(r.spread),
                    "low": int(r.low),
                    "high": int(r.high),
                    "grades": r.by_annotator,
                    "adjudicated": bool(r.adjudicated),
                    **({"entropy": float(r.entropy), "top_posterior": float(r.top)} if doubt else {}),
                }
                for r in found
            ]
        )
        return 0
    print("query_id\tfragment_id\tspread\tgrades\tdecided" + ("\tentropy\ttop" if doubt else ""))
    for r in found:
        tail = f"\t{float(r.entropy):.3f}\t{float(r.top):.3f}" if doubt else ""
        print(f"{r.query_id}\t{r.fragment_id}\t{int(r.spread)}\t{r.grades}\t{'yes' if r.adjudicated else 'no'}{tail}")
    print(f"{total} disputed pair(s) among people, {decided} decided, {total - decided} open", file=sys.stderr)
    return 0


# The release format an output's suffix names when --format is not given (a .json may be a card or not: say it).
RELEASE_SUFFIXES = {".qrels": "trec", ".trec": "trec", ".tsv": "beir", ".jsonl": "jsonl", ".csv": "csv"}


def cmd_export(args: argparse.Namespace) -> int:
    """Write one file of a release, or every current judgment with --judgments; warn when a released label
    now points at changed text."""
    picked = [
        flag
        for flag, on in (
            ("--judgments", args.judgments),
            ("--run", args.run is not None),
            ("--adjudications", args.adjudications),
            ("--pairs", args.pairs),
            ("--assignments", args.assignments),
        )
        if on
    ]
    if len(picked) > 1:
        raise ValueError(f"{' and '.join(picked)}: export one thing at a time")
    if args.guideline_version is not None and picked != ["--judgments"]:
        raise ValueError("--guideline-version applies to --judgments only")
    engine = store_engine(args)
    if picked:
        from db.exports import (
            ADJUDICATION_FORMATS,
            export_adjudications,
            export_assignments,
            export_judgments,
            export_pairs,
            export_run,
        )

        fmt = args.format or ("trec" if args.run is not None else "jsonl")
        allowed = ("trec",) if args.run is not None else ADJUDICATION_FORMATS
        if fmt not in allowed:
            raise ValueError(f"{picked[0]} writes {' or '.join(allowed)}, not {fmt}")
        if args.run is not None:
            count, what = export_run(engine, args.project, args.run, args.output), "run line(s)"
        elif args.adjudications:
            count, what = export_adjudications(engine, args.project, fmt, args.output), "adjudication(s)"
        elif args.pairs:
            count, what = export_pairs(engine, args.project, fmt, args.output), "pair(s)"
        elif args.assignments:
            count, what = export_assignments(engine, args.project, fmt, args.output), "assignment(s)"
        else:
            count = export_judgments(engine, args.project, fmt, args.output, args.guideline_version)
            what = "judgment(s)"
        print(f"wrote {count} {what} to {args.output}", file=sys.stderr)
        return 0
    fmt = args.format or RELEASE_SUFFIXES.get(Path(args.output).suffix.lower())
    if fmt is None:
        raise ValueError(
            f"a release export needs --format (trec, beir, jsonl, csv or card): {args.output!r} does not say which "
            f"by its suffix ({', '.join(f'{k} {v}' for k, v in RELEASE_SUFFIXES.items())})"
        )
    from db.releases import QrelsGrades, changed_texts, export

    path = export(engine, args.project, args.release, fmt, args.output, grades=QrelsGrades(args.grades))
    print(f"wrote {path}", file=sys.stderr)
    changed = changed_texts(engine, args.project, args.release)
    if changed is None:
        print(
            f"warning: release {args.release} predates text hashes; whether its texts changed is unknown",
            file=sys.stderr,
        )
    elif changed["pairs"]:
        pairs = changed["pairs"]
        print(
            f"warning: {len(pairs)} labelled pair(s) now point at changed text (re-imported since the "
            f"release); their labels may no longer hold:",
            file=sys.stderr,
        )
        for query, fragment, what in pairs[:CHANGED_LISTED]:
            print(f"warning:   {query} {fragment} ({what} text changed)", file=sys.stderr)
        if len(pairs) > CHANGED_LISTED:
            print(f"warning:   … and {len(pairs) - CHANGED_LISTED} more (card.json lists them all)", file=sys.stderr)
    return 0


def cmd_evaluate_run(args: argparse.Namespace) -> int:
    """Score a stored run against a release, store it, and print the means."""
    from db.evaluations import evaluate_stored_run

    result, _ = evaluate_stored_run(store_engine(args), args.project, args.run_name, args.release)
    if args.format == "json":
        print_json(result.to_dict())
    else:
        width = max(map(len, result.mean), default=0)
        for metric, value in result.mean.items():
            print(f"{metric:<{width}}  {value:.4f}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def cmd_holes(args: argparse.Namespace) -> int:
    """Turn a run's unjudged top-k into new pairs."""
    from db.accounts.permissions import OPERATOR
    from db.evaluations import holes_without_text, judge_holes, no_text_advice

    engine = store_engine(args)
    created = judge_holes(engine, args.project, args.run_name, k=args.k, actor=OPERATOR)
    print(f"{created} new pairs from the unjudged top-{args.k} of {args.run_name}")
    missing = holes_without_text(engine, args.project, args.run_name, k=args.k)
    if missing:
        print(f"note: {no_text_advice(missing)}", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add pool, assign, release, disputes, adjudicate, export, evaluate-run and holes to the `qrelkit` parser."""

    def command(name: str, func: Callable[[argparse.Namespace], int], text: str) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(name, help=text, description=text)
        parser.add_argument("--project", required=True, help="project name")
        db_option(parser)
        parser.set_defaults(func=func)
        return parser

    p = command(
        "pool",
        cmd_pool,
        "Pool candidate pairs: top-K of stored runs plus BM25, deduplicated; or (--search CONFIG) a live search "
        "engine's top-k, stored as a run with its request.",
    )
    p.add_argument("--depth", type=int, default=None, help="pool depth K per run and query (--search: default k)")
    p.add_argument(
        "--search",
        metavar="CONFIG",
        default=None,
        help="a JSON or TOML file naming an HTTP search endpoint (url, method, body or params with {query}, k, "
        "and the reply's hits, id, score and text paths; template elasticsearch, opensearch or solr fills them): "
        "every query is searched, the top-k stored as a run and pooled; credentials only from "
        "QRELKIT_SEARCH_API_KEY or QRELKIT_SEARCH_USER and QRELKIT_SEARCH_PASSWORD",
    )
    p.add_argument(
        "--name", default=None, help="with --search: the run's name (default: the config file's name without suffix)"
    )
    p.add_argument("--run", action="append", metavar="NAME", help="stored run to pool (repeatable; default all)")
    p.add_argument(
        "--bm25",
        type=int,
        default=None,
        metavar="K",
        help="BM25 top-K for every query (default: top-DEPTH for queries no run covers; 0 = off)",
    )
    report_option(p)

    p = command("assign", cmd_assign, "Assign pairs to annotators with overlap; re-running tops up.")
    p.add_argument("--overlap", type=int, default=None, help="annotators per pair (default: project policy)")
    p.add_argument(
        "--fraction",
        type=float,
        default=None,
        help="share of pairs that get the full overlap, the rest one annotator (default: project)",
    )
    p.add_argument("--annotators", default=None, metavar="A,B", help="usernames (default: every active annotator)")
    p.add_argument("--seed", type=int, default=0, help="seed for choosing the overlap sample")
    p.add_argument(
        "--pairs",
        metavar="FILE",
        help="assign only these pairs (JSONL/CSV with query_id, fragment_id as `export --pairs` writes, "
        "`qid fid` lines, TREC qrels or a run); default: every pooled pair (a pair only a judgments import "
        "named, e.g. a reference's qrels, is not pooled)",
    )
    report_option(p)

    p = command("release", cmd_release, "Create the next immutable release from the judgments.")
    p.add_argument(
        "--rule",
        default="median",
        metavar="RULE",
        choices=LazyChoices("eval_core.consensus", "RULES"),
        help="consensus rule: %(choices)s (default median); dawid-skene, mace and glad fit annotator models "
        "with control pairs and adjudications as known truth, write each pair's posterior and list the doubtful "
        "pairs",
    )
    p.add_argument(
        "--decision",
        default="most-probable",
        metavar="DECISION",
        choices=LazyChoices("eval_core.consensus", "DECISIONS"),
        help="how a model rule picks a grade from a posterior: %(choices)s (default most-probable; "
        "least-abs-error: the grade with the smallest expected absolute error, grades as ordered)",
    )
    p.add_argument("--min-grades", type=int, default=1, help="real grades a pair needs unless adjudicated")
    lead_option(p, "act as this lead, recorded as the release's author (checked)")
    p.add_argument(
        "--policy",
        default="humans-only",
        metavar="POLICY",
        choices=LazyChoices("eval_core.vocab", "RELEASE_POLICIES"),
        help="%(choices)s (default humans-only): model-fills-gaps gives pairs no person graded a model "
        "judge's grade, only if its quadratic κ with the human consensus clears --model-threshold",
    )
    p.add_argument(
        "--model-threshold",
        type=float,
        default=None,
        help="least quadratic-weighted κ of the model with the human consensus on the guideline "
        f"version in force (default {MODEL_THRESHOLD:g})",
    )
    report_option(p)

    p = command(
        "disputes",
        cmd_disputes,
        "List every pair whose people gave different grades, widest spread "
        "first or least sure first (--order doubt; model judges left out), with each person's grade and "
        "whether a lead decided it.",
    )
    p.add_argument("--query", default=None, metavar="QUERY_ID", help="only this query's disputes")
    p.add_argument(
        "--boundary",
        type=int,
        default=None,
        metavar="B",
        help="only pairs graded B or lower by someone and above B by someone else",
    )
    p.add_argument("--open", action="store_true", help="only the disputes no lead has decided")
    p.add_argument(
        "--order",
        default="spread",
        metavar="ORDER",
        choices=LazyChoices("db.adjudication", "DISPUTE_ORDERS"),
        help="%(choices)s (default spread); doubt: highest Dawid-Skene posterior entropy first",
    )
    report_option(p)

    p = command(
        "adjudicate",
        cmd_adjudicate,
        "Record a lead's final grade for a pair (the latest decision is in force; it wins over the consensus rule).",
    )
    p.add_argument("--query", required=True, metavar="QUERY_ID", help="the pair's query id")
    p.add_argument("--fragment", required=True, metavar="FRAGMENT_ID", help="the pair's fragment id")
    p.add_argument("--grade", type=int, required=True, help="the final grade, on the project's scale")
    p.add_argument("--reason", required=True, help="why (shown with the decision; required)")
    lead_option(
        p,
        "the active lead recorded as the adjudicator (checked): a decision names who made it, so the anonymous "
        "CLI operator is refused without --lead",
    )
    report_option(p)

    p = command(
        "export",
        cmd_export,
        "Write a release's qrels or judgments file, or (--judgments) every current judgment before any release.",
    )
    p.add_argument("--release", default="latest", help="release number or 'latest'")
    p.add_argument(
        "--judgments",
        action="store_true",
        help="every current judgment (annotator, grade or can't judge with its reason, note, guideline "
        "version, time, and who judged: annotator kind, a model judge's model and prompt version) "
        "as jsonl or csv: what agreement, consensus and `import judgments` read",
    )
    p.add_argument("--guideline-version", type=int, metavar="V", help="with --judgments: only those made under V")
    p.add_argument(
        "--run", metavar="NAME", help="a stored run as a TREC run (what `qrelkit eval` and `import run` read)"
    )
    p.add_argument(
        "--adjudications",
        action="store_true",
        help="the lead's decisions in force with their reasons, jsonl (default) or csv: what "
        "`qrelkit consensus --adjudications` applies",
    )
    p.add_argument(
        "--pairs",
        action="store_true",
        help="every pair with what a script needs to grade or check it (query and fragment ids and texts, "
        "sources, best rank, who graded it, who holds it), jsonl (default) or csv: `assign --pairs` reads it",
    )
    p.add_argument(
        "--assignments",
        action="store_true",
        help="every assignment (annotator, pair, queue position, done, sent back for re-judging, their "
        "grade), jsonl (default) or csv",
    )
    p.add_argument(
        "--format",
        default=None,
        metavar="FORMAT",
        choices=LazyChoices("db.releases", "EXPORT_FORMATS"),
        help="%(choices)s (a release, else by -o's suffix: .qrels and .trec trec, .tsv beir, .jsonl, .csv; "
        "jsonl or csv with --judgments, --adjudications, --pairs or --assignments; --run writes trec)",
    )
    p.add_argument(
        "--grades",
        default="gains",
        metavar="GRADES",
        choices=LazyChoices("eval_core.io.writers", "QrelsGrades"),
        help="%(choices)s (default gains): a release's TREC and BEIR qrels hold gains, grade minus the "
        "scale's lowest grade, so the lowest grade is 0 (not relevant) for trec_eval, pytrec_eval, "
        "ranx and ir-measures with default options; as-judged writes the project's grades (evaluate "
        "them with --scale); JSONL and CSV always hold the grades as judged and name the scale",
    )
    p.add_argument("-o", "--output", required=True, help="file to write")

    p = command("evaluate-run", cmd_evaluate_run, "Evaluate a stored run against a release and keep the result.")
    p.add_argument("run_name", metavar="RUN_NAME")
    p.add_argument("--release", default="latest", help="release number or 'latest'")
    p.add_argument("--format", default="table", choices=("table", "json"))

    p = command("holes", cmd_holes, "Turn the unjudged fragments in a run's top-k into new pairs to assign.")
    p.add_argument("run_name", metavar="RUN_NAME")
    p.add_argument("--k", type=int, default=10, help="depth of the run to inspect")

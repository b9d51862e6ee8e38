"""`qrelkit pool|assign|release|export|evaluate-run|holes`: the store's golden-set workflow from the shell."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from tqdm import tqdm

from annotator.cli.common import guarded, print_json
from db.engine import get_engine
from db.permissions import OPERATOR


def _steps(total: int, desc: str) -> tuple[tqdm, Callable[[str], None]]:
    """A stage-by-stage progress bar on stderr and the callback that advances it."""
    bar = tqdm(total=total, desc=desc, file=sys.stderr, unit="step", leave=False)

    def step(label: str) -> None:
        bar.set_postfix_str(label)
        bar.update(1)

    return bar, step


def _pool(args: argparse.Namespace) -> int:
    """Pool the stored runs (and BM25) into pairs to judge."""
    from db.pooling import POOL_STEPS, pool

    bar, step = _steps(POOL_STEPS, "pool")
    with bar:
        report = pool(get_engine(args.db), args.project, args.depth, runs=args.run or None, bm25=args.bm25,
                      progress=step, actor=OPERATOR)
    print_json(report.to_dict())
    return 0


def _assign(args: argparse.Namespace) -> int:
    """Give pairs to annotators."""
    from db.assignment import assign

    names = [n.strip() for n in args.annotators.split(",") if n.strip()] if args.annotators else None
    report = assign(get_engine(args.db), args.project, overlap=args.overlap, fraction=args.fraction,
                    annotators=names, seed=args.seed, actor=OPERATOR)
    print_json(report.to_dict())
    return 0


def _release(args: argparse.Namespace) -> int:
    """Create the next release and print its card."""
    from db.releases import RELEASE_STEPS, create_release

    bar, step = _steps(RELEASE_STEPS, "release")
    with bar:
        info = create_release(get_engine(args.db), args.project, rule=args.rule, min_grades=args.min_grades,
                              progress=step, actor=args.user or OPERATOR)
    print_json(info.card)
    return 0


def _export(args: argparse.Namespace) -> int:
    """Write one file of a release."""
    from db.releases import export

    path = export(get_engine(args.db), args.project, args.release, args.format, args.output)
    print(f"wrote {path}", file=sys.stderr)
    return 0


def _evaluate_run(args: argparse.Namespace) -> int:
    """Score a stored run against a release, store it, and print the means."""
    from db.evaluations import evaluate_stored_run

    result, _ = evaluate_stored_run(get_engine(args.db), args.project, args.run_name, args.release)
    if args.format == "json":
        print_json(result.to_dict())
    else:
        width = max(map(len, result.mean), default=0)
        for metric, value in result.mean.items():
            print(f"{metric:<{width}}  {value:.4f}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _holes(args: argparse.Namespace) -> int:
    """Turn a run's unjudged top-k into new pairs."""
    from db.evaluations import judge_holes

    created = judge_holes(get_engine(args.db), args.project, args.run_name, k=args.k, actor=OPERATOR)
    print(f"{created} new pairs from the unjudged top-{args.k} of {args.run_name}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add pool, assign, release, export, evaluate-run and holes to the `qrelkit` parser."""

    def command(name: str, func: Callable[[argparse.Namespace], int], text: str) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(name, help=text, description=text)
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--db", default=None, help="database URL (default: $QRELKIT_DB_URL or ./qrelkit.db)")
        parser.set_defaults(func=guarded(func))
        return parser

    p = command("pool", _pool, "Pool candidate pairs: top-K of stored runs plus BM25, deduplicated.")
    p.add_argument("--depth", type=int, required=True, help="pool depth K per run and query")
    p.add_argument("--run", action="append", metavar="NAME", help="stored run to pool (repeatable; default all)")
    p.add_argument("--bm25", type=int, default=None, metavar="K",
                   help="BM25 top-K for every query (default: top-DEPTH for queries no run covers; 0 = off)")

    p = command("assign", _assign, "Assign pairs to annotators with overlap; re-running tops up.")
    p.add_argument("--overlap", type=int, default=None, help="annotators per pair (default: project policy)")
    p.add_argument("--fraction", type=float, default=None,
                   help="share of pairs that get the full overlap, the rest one annotator (default: project)")
    p.add_argument("--annotators", default=None, metavar="A,B", help="usernames (default: every active annotator)")
    p.add_argument("--seed", type=int, default=0, help="seed for choosing the overlap sample")

    p = command("release", _release, "Create the next immutable release from the judgments.")
    p.add_argument("--rule", default="median", choices=("median", "majority", "mean", "min"))
    p.add_argument("--min-grades", type=int, default=1, help="real grades a pair needs unless adjudicated")
    p.add_argument("--user", default=None, help="act as this lead, recorded as the release's author (checked)")

    p = command("export", _export, "Write a release's qrels or judgments file.")
    p.add_argument("--release", default="latest", help="release number or 'latest'")
    p.add_argument("--format", required=True, choices=("trec", "beir", "jsonl", "csv"))
    p.add_argument("-o", "--output", required=True, help="file to write")

    p = command("evaluate-run", _evaluate_run, "Evaluate a stored run against a release and keep the result.")
    p.add_argument("run_name", metavar="RUN_NAME")
    p.add_argument("--release", default="latest", help="release number or 'latest'")
    p.add_argument("--format", default="table", choices=("table", "json"))

    p = command("holes", _holes, "Turn the unjudged fragments in a run's top-k into new pairs to assign.")
    p.add_argument("run_name", metavar="RUN_NAME")
    p.add_argument("--k", type=int, default=10, help="depth of the run to inspect")

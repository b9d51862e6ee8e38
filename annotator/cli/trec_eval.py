"""`qrelkit trec_eval`: trec_eval 10.0's command line, its output byte for byte, and version 9's rules on request."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from annotator.cli import RawDescriptionHelpFormatter

USAGE_EXIT = 1  # trec_eval exits 1 on a usage error or an illegal measure

DESCRIPTION = """\
trec_eval's own options and output (`%-22s\\t%s\\t%6.4f` lines, `all` summary rows), byte for byte with
trec_eval 10.0: qrels and run as trec_eval reads them, ranking by score (float64) then docid, both
descending. --trec-eval-version 9 computes what trec_eval 9 (and pytrec_eval) computes: float32
scores, iprec_at_recall/11pt_avg cutoffs truncated (R·x + 0.9) instead of rounded, queries missing
from the run skipped (with -c: averaged as 0). --diff-versions lists the values where 9 and 10 differ.

Exit status as trec_eval's: 1 usage or illegal measure, 2 unreadable input or a measure's bad
parameters, 4 a measure that cannot be calculated (also: a qrels query without results and no -c),
7 no query with both results and relevance info, 10 (version 9) -o's old output format."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `qrelkit trec_eval` to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "trec_eval",
        help="trec_eval 10.0's command line and output, byte for byte",
        description=DESCRIPTION,
        formatter_class=RawDescriptionHelpFormatter,
    )
    p.add_argument("-q", "--query_eval_wanted", action="store_true", help="also print each query's values")
    p.add_argument(
        "-m",
        "--measure",
        action="append",
        default=[],
        metavar="MEASURE[.PARAMS]",
        help="measure or nickname (official, all_trec, set, all_prefs, prefs, qrels_jg) to print, "
        "with parameters after a dot (P.5,10  ndcg.1=3,2=9  utility.2,-1,0,0); repeatable; "
        "default official",
    )
    p.add_argument(
        "-c",
        "--complete_rel_info_wanted",
        action="store_true",
        help="average over every qrels query; one missing from the run scores 0",
    )
    p.add_argument(
        "-l", "--level_for_rel", default="1", metavar="NUM", help="lowest grade that is relevant (default 1)"
    )
    p.add_argument("-n", "--nosummary", action="store_true", help="print no summary (all) rows")
    p.add_argument(
        "-J",
        "--Judged_docs_only",
        action="store_true",
        help="drop retrieved documents without a judgment before any measure (trec_eval: DO NOT USE)",
    )
    p.add_argument(
        "-N",
        "--Number_docs_in_coll",
        default="0",
        metavar="NUM",
        help="documents in the collection (utility's fourth coefficient)",
    )
    p.add_argument(
        "-M",
        "--Max_retrieved_per_topic",
        default=None,
        metavar="NUM",
        help="evaluate only the first NUM ranked documents of each query",
    )
    p.add_argument(
        "-R",
        "--Rel_info_format",
        default="qrels",
        metavar="FORMAT",
        help="qrels (default), qrels_jg, prefs or qrels_prefs",
    )
    p.add_argument(
        "-T", "--Results_format", default="trec_results", metavar="FORMAT", help="trec_results (the only one)"
    )
    p.add_argument(
        "-Z",
        "--Zscore",
        default=None,
        metavar="ZMEAN_FILE",
        help="print z-scores against `qid measure mean stddev` lines instead of raw values",
    )
    p.add_argument(
        "-D",
        "--Debug_level",
        default=None,
        metavar="NUM[.QID]",
        help="trec_eval's debug level: only 0 (its debug printout is not reproduced); 0.QID evaluates "
        "only query QID (with -c the means still divide by every qrels query)",
    )
    p.add_argument(
        "-o",
        dest="old_format",
        action="store_true",
        help="old output format: ignored as trec_eval 10.0 does (version 9: refused after the -q lines, exit 10)",
    )
    p.add_argument("--Output_old_results_format", default=None, metavar="ARG", help="the long form of -o")
    p.add_argument("-v", "--version", action="store_true", help="print the trec_eval version followed and exit")
    p.add_argument(
        "--trec-eval-version",
        choices=("9", "10"),
        default="10",
        help="whose rules: 10 (default, trec_eval 10.0) or 9 (trec_eval 9 = pytrec_eval)",
    )
    p.add_argument(
        "--diff-versions",
        action="store_true",
        help="instead of the output, list `measure qid value10 value9` where versions 10 and 9 differ",
    )
    p.add_argument("rel_info_file", nargs="?")
    p.add_argument("results_file", nargs="?", help="the run ('-' reads stdin)")
    p.error = _usage_error.__get__(p)
    p.set_defaults(func=cmd_trec_eval)


def _usage_error(self: argparse.ArgumentParser, message: str) -> NoReturn:
    """trec_eval's reaction to a bad command line: the usage on stderr, exit 1."""
    self.print_usage(sys.stderr)
    print(f"qrelkit trec_eval: {message}", file=sys.stderr)
    sys.exit(USAGE_EXIT)


def cmd_trec_eval(args: argparse.Namespace) -> int:
    """Run trec_eval; every refusal is one line on stderr and trec_eval's exit status."""
    from eval_core.ranking.trec_eval.invocation import TrecEvalError
    from eval_core.ranking.trec_eval.params import atol
    from eval_core.ranking.trec_eval.run import run

    if args.version:
        print(
            "trec_eval version 10.0 (qrelkit trec_eval; --trec-eval-version 9 for version 9's rules)", file=sys.stderr
        )
        return 0
    if args.Debug_level is not None and atol(args.Debug_level.split(".", 1)[0]) != 0:
        print(
            f"qrelkit trec_eval: -D {args.Debug_level}: trec_eval's debug printout (levels above 0) is not "
            "reproduced; -D 0.QID evaluates one query",
            file=sys.stderr,
        )
        return USAGE_EXIT
    if not args.rel_info_file or not args.results_file:
        print("qrelkit trec_eval: expected rel_info_file and results_file", file=sys.stderr)
        return USAGE_EXIT
    try:
        for chunk in run(args):
            sys.stdout.write(chunk)
    except TrecEvalError as exc:
        sys.stdout.flush()
        print(f"qrelkit trec_eval: {exc}", file=sys.stderr)
        return exc.status
    return 0

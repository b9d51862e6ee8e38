"""`qrelkit rejudge`: list the judgments made under an older guideline version, and send pairs of that queue back
to be graded under the version in force (what the Guidelines page's re-judge form does), as the lead named with
--lead (checked in the store).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from annotator.cli.common import db_option, emit, lead_option, report_option, store_engine

LISTED = ("query_id", "fragment_id", "annotator", "grade", "guideline", "current", "sent")


def read_pairs(path: str) -> list[tuple[str, str, int]]:
    """(query id, fragment id, line) of every pair a --pairs file names: one `QUERY_ID FRAGMENT_ID` a line
    (tab or spaces), blank lines and `#` comments skipped; a bad line refuses the file, naming it."""
    from eval_core.errors import InputError, Problems

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"cannot read the pairs file: {getattr(exc, 'strerror', None) or exc}") from None
    problems, pairs = Problems(path), []
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 2:
            problems.add(number, f"expected QUERY_ID FRAGMENT_ID, got {len(fields)} field(s)")
            continue
        pairs.append((fields[0], fields[1], number))
    if problems.total:
        first = problems.items[0]
        more = f" (and {problems.total - 1} more problem(s))" if problems.total > 1 else ""
        raise InputError(first.path, first.line, first.problem + more)
    if not pairs:
        raise InputError(path, None, "the file names no pair (one QUERY_ID FRAGMENT_ID a line)")
    return pairs


def _chosen(queue, args: argparse.Namespace):
    """The queue's rows picked by --query, --fragment and --pairs; a named pair outside the queue is an error
    naming it (and the file line it came from)."""
    from eval_core.errors import InputError

    rows = queue
    if args.query is not None:
        rows = rows[rows["query_id"] == args.query]
    if args.fragment is not None:
        rows = rows[rows["fragment_id"] == args.fragment]
    if args.pairs is None:
        if (args.query is not None or args.fragment is not None) and rows.empty:
            what = " ".join(
                f"{flag} {value}"
                for flag, value in (("--query", args.query), ("--fragment", args.fragment))
                if value is not None
            )
            raise LookupError(
                f"{what}: no judgment of it in project {args.project!r} was made under an older "
                f"guideline version (see `qrelkit rejudge --project {args.project} --list`)"
            )
        return rows
    listed = set(zip(rows["query_id"], rows["fragment_id"], strict=True))
    keep = []
    for query, fragment, line in read_pairs(args.pairs):
        if (query, fragment) not in listed:
            where = "" if args.query is None else f" of query {args.query}"
            raise InputError(
                args.pairs,
                line,
                f"pair {query} {fragment} is not in the re-judge queue{where} (no "
                f"judgment of it was made under an older guideline version)",
            )
        keep.append((query, fragment))
    return rows[[pair in set(keep) for pair in zip(rows["query_id"], rows["fragment_id"], strict=True)]]


def cmd_rejudge(args: argparse.Namespace) -> int:
    """List the re-judge queue (--list), or send the chosen pairs of it back for re-judging as lead --lead."""
    from db.adjudication import rejudge_queue, send_for_rejudging

    if args.list and (args.to or args.pairs):
        raise ValueError("--list shows the queue; --to and --pairs choose what to send: give one or the other")
    if not args.list and not args.user:
        raise ValueError(
            "sending pairs back for re-judging needs --lead LEAD (the lead who sends them); --list only reads the queue"
        )
    engine = store_engine(args)
    queue = rejudge_queue(engine, args.project)
    if args.list:
        rows = _chosen(queue, args) if args.query is not None or args.fragment is not None else queue
        shown = rows[list(LISTED)].astype(object)
        records = shown.where(shown.notna(), None).to_dict("records")  # a can't-judge grade is null, not NaN
        if not records and args.report == "text":
            print(f"every judgment in project {args.project} was made under the current guideline")
        else:
            emit(args, records)
        return 0
    if queue.empty:
        raise LookupError(
            f"project {args.project!r} has no judgment made under an older guideline version: nothing to re-judge"
        )
    rows = _chosen(queue, args)
    pair_ids = sorted({int(p) for p in rows["pair_id"]})
    opened = send_for_rejudging(engine, args.project, pair_ids, to=args.to or None, actor=args.user)
    emit(
        args,
        {
            "project": args.project,
            "guideline": int(queue["current"].iloc[0]),
            "pairs": len(pair_ids),
            "to": args.to or "the annotators who judged them",
            "opened": opened,
            "by": args.user,
        },
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `rejudge` to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "rejudge",
        help="list judgments made under an older guideline, or send those pairs back for re-judging",
        description="With --list: every judgment made under a guideline version older than the one in force, and "
        "whether its pair is already back in the annotator's queue. Otherwise: send pairs of that queue "
        "(all of it, the pairs of --query, one --query/--fragment pair, or those a --pairs file names) "
        "back to be graded under the version in force, to the annotators who judged them or to the "
        "people named with --to. The current grade stays until the new one replaces it; the history "
        "keeps both.",
    )
    p.add_argument("--project", required=True, help="project name")
    p.add_argument("--list", action="store_true", help="show the re-judge queue (nothing is sent)")
    p.add_argument("--query", metavar="QUERY_ID", help="only the pairs of this query")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--fragment", metavar="FRAGMENT_ID", help="only the pairs of this fragment (with --query: one pair)"
    )
    which.add_argument(
        "--pairs",
        metavar="FILE",
        help="only the pairs the file names, one QUERY_ID FRAGMENT_ID a line ('#' starts a comment)",
    )
    p.add_argument(
        "--to",
        nargs="+",
        metavar="USER",
        help="send every chosen pair to these people (active, able to log in; default: each pair to the "
        "annotators who judged it under the older version)",
    )
    lead_option(p, "the active lead who sends the pairs back (checked; required unless --list)")
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_rejudge)

"""`qrelkit control`: control pairs — settled grades served blind among each annotator's pairs — set from an
adjudicated release or by hand, listed, and each annotator measured against them; and the `--control` file
option of `qrelkit agreement`."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from annotator.cli.common import db_option, print_json, store_engine

if TYPE_CHECKING:
    from eval_core.agreement.control import ControlReport, ControlScore


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `control` (set, add, list, qualify, open, close, retake, rounds, report) to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "control",
        help="control pairs: settled grades served blind to check annotators",
        description="Control pairs are pairs with a settled grade, served to annotators "
        "like any pair at a rate (e.g. 1/20 of each annotator's pairs).",
    )
    sub = p.add_subparsers(dest="control_command", metavar="ACTION", required=True)
    s = sub.add_parser("set", help="make every adjudicated pair of a release a control pair and serve them")
    db_option(s)
    s.add_argument("--project", required=True)
    s.add_argument("--release", required=True, help="the release whose adjudicated pairs become control pairs")
    s.add_argument(
        "--rate", required=True, help="one control pair in every N of an annotator's pairs: 1/20, 0.05 or 20"
    )
    s.set_defaults(func=cmd_set)
    a = sub.add_parser("add", help="make one pair a control pair with a grade and a reason")
    db_option(a)
    a.add_argument("--project", required=True)
    a.add_argument("query", metavar="QUERY_ID")
    a.add_argument("fragment", metavar="FRAGMENT_ID")
    a.add_argument("grade", type=int, metavar="GRADE")
    a.add_argument("--reason", required=True, help="why this grade is settled (shown to leads)")
    a.add_argument("--rate", help="also set the rate (1/20, 0.05 or 20)")
    a.set_defaults(func=cmd_add)
    ls = sub.add_parser("list", help="the project's control pairs and rate")
    db_option(ls)
    ls.add_argument("--project", required=True)
    ls.add_argument("--format", choices=["table", "json"], default="table")
    ls.set_defaults(func=cmd_list)
    q = sub.add_parser(
        "qualify",
        help="new annotators first grade N control pairs, seeing each settled grade",
        description="A new annotator (no judgment in the project yet) first grades N control pairs "
        "and sees the settled grade and the lead's reason after each; their regular "
        "queue opens when their linear-weighted κ on the round reaches the threshold, or when a "
        "lead opens it (qrelkit control open). A lead may close an open queue again "
        "(qrelkit control close) and grant a retake after a failed round or a close "
        "(qrelkit control retake).",
    )
    db_option(q)
    q.add_argument("--project", required=True)
    q.add_argument("--pairs", type=int, required=True, metavar="N", help="control pairs in the round (0: no round)")
    q.add_argument(
        "--threshold",
        type=float,
        metavar="KAPPA",
        help="κ the round must reach (default: the project's agreement threshold)",
    )
    q.set_defaults(func=cmd_qualify)
    o = sub.add_parser("open", help="open an annotator's regular queue whatever their qualification round says")
    db_option(o)
    o.add_argument("--project", required=True)
    o.add_argument("--user", required=True, help="the annotator whose queue opens")
    o.add_argument("--lead", required=True, help="the lead who decides (recorded with the time)")
    o.set_defaults(func=cmd_open)
    c = sub.add_parser(
        "close",
        help="close an annotator's open regular queue again, until a lead reopens it or they pass a retake",
        description="The store refuses the annotator's regular grades from now on, whatever the "
        "round setting, until a lead reopens the queue (qrelkit control open) or grants a "
        "retake they pass (qrelkit control retake). Who, when and why are recorded.",
    )
    db_option(c)
    c.add_argument("--project", required=True)
    c.add_argument("--user", required=True, help="the annotator whose queue closes")
    c.add_argument("--lead", required=True, help="the lead who decides (recorded with the time)")
    c.add_argument("--reason", help="why (recorded; the annotator reads it)")
    c.set_defaults(func=cmd_close)
    t = sub.add_parser(
        "retake",
        help="grant an annotator whose round failed, or whose queue was closed, a new round",
        description="A new qualification round of the project's size, on control pairs the annotator "
        "has neither met in a round nor judged, starts at once; their earlier rounds are "
        "kept (qrelkit control rounds --history).",
    )
    db_option(t)
    t.add_argument("--project", required=True)
    t.add_argument("--user", required=True, help="the annotator who takes the round again")
    t.add_argument("--lead", required=True, help="the lead who grants it (recorded)")
    t.set_defaults(func=cmd_retake)
    rr = sub.add_parser(
        "rounds", help="each annotator's qualification round: status, κ, who opened or closed the queue"
    )
    db_option(rr)
    rr.add_argument("--project", required=True)
    rr.add_argument("--history", action="store_true", help="every round of each annotator, not only the one in force")
    rr.add_argument("--format", choices=["table", "json"], default="table")
    rr.set_defaults(func=cmd_rounds)
    r = sub.add_parser("report", help="each annotator's accuracy and κ against the control grades")
    db_option(r)
    r.add_argument("--project", required=True)
    r.add_argument("--bootstrap", type=int, default=1000, help="query-clustered bootstrap replicates (0: no CIs)")
    r.add_argument("--format", choices=["table", "json"], default="table")
    r.set_defaults(func=cmd_report)


def _served(served: dict[str, int]) -> str:
    """`ann1 3, ann2 3` or `no annotator` for a report's served counts."""
    return ", ".join(f"{who} {n}" for who, n in sorted(served.items())) or "no annotator"


def cmd_set(args: argparse.Namespace) -> int:
    """Make a release's adjudicated pairs control pairs and serve them."""
    from db.accounts.permissions import OPERATOR
    from db.control import controls_from_release

    report = controls_from_release(store_engine(args), args.project, args.release, args.rate, actor=OPERATOR)
    print(f"{report.added} new control pair(s); one in every {report.every} pairs; served to: {_served(report.served)}")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    """Make one pair a control pair."""
    from db.accounts.permissions import OPERATOR
    from db.control import add_control

    report = add_control(
        store_engine(args), args.project, args.query, args.fragment, args.grade, args.reason, args.rate, actor=OPERATOR
    )
    rate = f"one in every {report.every} pairs" if report.every else "no rate set yet (--rate): not served"
    print(f"{report.added} new control pair(s); {rate}; served to: {_served(report.served)}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Print the control pairs."""
    from db.control import list_controls

    every, controls = list_controls(store_engine(args), args.project)
    if args.format == "json":
        print_json({"every": every, "controls": [c.__dict__ for c in controls]})
        return 0
    print(f"{len(controls)} control pair(s); " + (f"one in every {every} pairs" if every else "not served"))
    for c in controls:
        source = f"release {c.release}" if c.release else "set by hand"
        print(f"{c.query_id}\t{c.fragment_id}\t{c.grade}\t{source}\t{c.reason}")
    return 0


def cmd_qualify(args: argparse.Namespace) -> int:
    """Switch the qualification round on (or off with --pairs 0)."""
    from db.accounts.permissions import OPERATOR
    from db.qualification import set_qualification

    settings = set_qualification(store_engine(args), args.project, args.pairs, args.threshold, actor=OPERATOR)
    print(settings.sentence())
    return 0


def cmd_open(args: argparse.Namespace) -> int:
    """A lead opens an annotator's regular queue."""
    from db.qualification import open_queue

    state = open_queue(store_engine(args), args.project, args.user, actor=args.lead)
    print(f"{state.username}: {state.sentence()}")
    return 0


def cmd_close(args: argparse.Namespace) -> int:
    """A lead closes an annotator's open regular queue again."""
    from db.qualification import close_queue

    state = close_queue(store_engine(args), args.project, args.user, args.reason, actor=args.lead)
    print(f"{state.username}: {state.sentence()}")
    return 0


def cmd_retake(args: argparse.Namespace) -> int:
    """A lead grants an annotator a new qualification round."""
    from db.qualification import grant_retake

    state = grant_retake(store_engine(args), args.project, args.user, actor=args.lead)
    print(f"{state.username}: {state.sentence()}")
    return 0


def cmd_rounds(args: argparse.Namespace) -> int:
    """Print each annotator's qualification round (every round with --history)."""
    from db.qualification import list_rounds, qualification_settings

    engine = store_engine(args)
    settings = qualification_settings(engine, args.project)
    rounds = list_rounds(engine, args.project, history=args.history)
    if args.format == "json":
        print_json({"pairs": settings.pairs, "threshold": settings.threshold, "rounds": [r.to_dict() for r in rounds]})
        return 0
    print(settings.sentence())
    for r in rounds:
        print(f"{r.username}\t{r.attempt}\t{r.status.value}\t{r.graded}/{r.pairs}\t{r.sentence()}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Print each annotator against the control grades."""
    from db.control import project_control_report

    report = project_control_report(store_engine(args), args.project, replicates=args.bootstrap)
    if args.format == "json":
        print_json(report.to_dict())
    else:
        sys.stdout.write(format_control(report))
    return 0


def read_control(path: str, judgments: object, args: argparse.Namespace) -> ControlReport:
    """`qrelkit agreement … --control FILE`: the judgments against a control qrels file (grades written as gains,
    grade − LOW, as qrelkit's TREC exports write them)."""
    import pandas as pd

    from eval_core.agreement.control import control_report
    from eval_core.io.formats import read_qrels

    qrels = read_qrels(path)
    low = args.scale[0]
    control = pd.DataFrame(
        {"query_id": qrels["query_id"], "fragment_id": qrels["doc_id"], "grade": qrels["grade"] + low}
    )
    high = args.scale[1]
    outside = control[(control["grade"] < low) | (control["grade"] > high)]
    if len(outside):
        row = outside.iloc[0]
        raise ValueError(
            f"{path}: control grade {int(row['grade']) - low} of ({row['query_id']}, "
            f"{row['fragment_id']}) is outside the scale {low}-{high} (written as grade − {low})"
        )
    assert isinstance(judgments, pd.DataFrame)
    return control_report(
        judgments, control, args.scale, replicates=args.bootstrap, seed=args.seed, threshold=args.threshold
    )


def _row(s: ControlScore) -> str:
    """One annotator (or group) line."""
    group = f" {s.group}" if s.group else ""
    return (
        f"  {s.annotator}{group}: {s.pairs} pairs over {s.queries} queries; accuracy {s.accuracy.text()}; "
        f"κ {s.kappa.text()}"
    )


def format_control(report: ControlReport, title: str = "against the control grades") -> str:
    """Each annotator against the control (or a reference's) grades, by guideline and over time, and the drift
    alerts."""
    from eval_core.agreement.coefficients import kappa_name
    from eval_core.thresholds import MIN_CI_QUERIES

    lines = [f"{title} ({kappa_name(report.weights)}, 95% CIs over queries, from {MIN_CI_QUERIES} queries up):"]
    lines += [_row(s) for s in report.per_annotator]
    if report.by_guideline:
        lines += ["by guideline version:", *(_row(s) for s in report.by_guideline)]
    if report.over_time:
        lines += ["over time:", *(_row(s) for s in report.over_time)]
    lines += [f"DRIFT: {a.sentence}" for a in report.alerts]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines) + "\n"

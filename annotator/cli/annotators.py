"""`qrelkit annotators`: each person of a project as the annotator models see them — Dawid–Skene's confusion
matrix, MACE's competence with its bootstrap CI, the spammer flag with what to do, and control-pair accuracy."""

from __future__ import annotations

import argparse
import sys

from annotator.cli.common import db_option, print_json, store_engine


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `annotators` to the `qrelkit` parser."""
    p = subparsers.add_parser(
        "annotators",
        help="each annotator's confusion matrix, competence and spammer flag (annotator models)",
        description="Fit Dawid-Skene and MACE on a project's human grades (control pairs and adjudications as "
        "known truth) and show each annotator's estimated confusion matrix (rows: the true grade, columns: the "
        "grade given), MACE's competence with a CI by a bootstrap over queries, the spammer flag and what to do, "
        "and their accuracy on control pairs.",
    )
    db_option(p)
    p.add_argument("--project", required=True)
    p.add_argument("--replicates", type=int, default=200, help="bootstrap replicates over queries (default 200)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (same seed, same CIs)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_annotators)


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def cmd_annotators(args: argparse.Namespace) -> int:
    """Print every annotator's model figures as a table (or JSON); spammers' advice goes to stderr too."""
    from db.annotator_models import project_annotator_report

    report, accuracy = project_annotator_report(store_engine(args), args.project, args.replicates, args.seed)
    for spammer in report.spammers():
        print(f"qrelkit: {spammer.advice}", file=sys.stderr)
    if args.format == "json":
        data = report.to_dict()
        for entry in data["annotators"]:
            entry["control_accuracy"] = accuracy.get(entry["annotator"])
        print_json(data)
        return 0
    grades = report.grades
    for a in report.annotators:
        ci = "—" if a.ci is None else f"[{a.ci[0]:.3f}, {a.ci[1]:.3f}]"
        print(
            f"{a.annotator}: {a.n} grades over {a.n_queries} queries; MACE competence {a.competence:.3f} {ci}; "
            f"spammer score {a.information:.3f}; control accuracy {_cell(accuracy.get(a.annotator))}; "
            f"spammer: {'yes' if a.spammer else 'no'}"
        )
        print("  true\\given " + " ".join(f"{g:>6}" for g in grades))
        for g, row in zip(grades, a.confusion, strict=True):
            print(f"  {g:>10} " + " ".join(f"{_cell(v):>6}" for v in row))
    for note in report.notes:
        print(f"note: {note}")
    return 0

"""`qrelkit guideline add | list | show`: a project's versioned grading guideline from the shell.

A new version is stamped on every judgment made after it; the CLI acts as the operator.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from annotator.cli.common import db_option, emit, report_option, store_engine
from eval_core.errors import InputError


def _report(info) -> dict:
    """What the commands print about one version (the text only with `show`)."""
    return {
        "version": info.version,
        "content_hash": info.content_hash,
        "note": info.note,
        "created_by": info.created_by,
        "created_at": info.created_at,
        "characters": len(info.text),
    }


def cmd_guideline_add(args: argparse.Namespace) -> int:
    """Publish FILE as the next version (the same text as the current one changes nothing)."""
    from db.accounts.permissions import OPERATOR
    from db.projects import add_guideline

    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(args.file, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    emit(args, _report(add_guideline(store_engine(args), args.project, text, actor=OPERATOR, note=args.note)))
    return 0


def cmd_guideline_list(args: argparse.Namespace) -> int:
    """Every version, oldest first."""
    from db.projects import list_guidelines

    emit(args, [_report(g) for g in list_guidelines(store_engine(args), args.project)])
    return 0


def cmd_guideline_show(args: argparse.Namespace) -> int:
    """Print one version's text (the current one by default), exactly as stored."""
    from db.projects import list_guidelines

    versions = list_guidelines(store_engine(args), args.project)
    if not versions:
        raise LookupError(f"project {args.project!r} has no guideline yet; add one with `qrelkit guideline add`")
    wanted = (
        versions[-1]
        if args.version == "current"
        else next((g for g in versions if str(g.version) == args.version), None)
    )
    if wanted is None:
        raise LookupError(
            f"no guideline version {args.version!r} in project {args.project!r} "
            f"(versions: {', '.join(str(g.version) for g in versions)})"
        )
    sys.stdout.write(wanted.text if wanted.text.endswith("\n") else wanted.text + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `guideline add|list|show` to the `qrelkit` parser."""
    guideline = subparsers.add_parser("guideline", help="a project's versioned grading guideline").add_subparsers(
        dest="guideline_command", metavar="ACTION", required=True
    )
    p = guideline.add_parser("add", help="publish a Markdown file as the next version")
    p.add_argument("file", metavar="FILE.md")
    p.add_argument("--note", help="what changed, shown with the version")
    report_option(p)
    p.set_defaults(func=cmd_guideline_add)
    q = guideline.add_parser("list", help="every version, oldest first")
    report_option(q)
    q.set_defaults(func=cmd_guideline_list)
    r = guideline.add_parser("show", help="print one version's text")
    r.add_argument("version", nargs="?", default="current", metavar="V", help="version number (default: current)")
    r.set_defaults(func=cmd_guideline_show)
    for parser in (p, q, r):
        parser.add_argument("--project", required=True, help="project name")
        db_option(parser)

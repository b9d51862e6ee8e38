"""`qrelkit init | db upgrade | project create | import …`: set up the store from the shell."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from sqlalchemy.engine import Engine

from annotator.cli.common import guarded, print_json
from db.engine import database_url, get_engine
from db.permissions import OPERATOR

IMPORT_KINDS = ("queries", "fragments", "run", "judgments")


def _engine(args: argparse.Namespace) -> Engine:
    """The store at --db / QRELKIT_DB_URL, which must already be at the newest schema."""
    from db.schema import current_revision, head_revision

    engine = get_engine(args.db)
    current, head = current_revision(engine), head_revision()
    if current != head:
        state = "has no qrelkit schema" if current is None else f"is at schema revision {current}"
        raise RuntimeError(f"database {database_url(args.db)} {state}; run `qrelkit init` or `qrelkit db upgrade` "
                           f"(newest: {head})")
    return engine


def _init(args: argparse.Namespace) -> int:
    """Create or upgrade the database; optionally create a first project."""
    from db.projects import create_project, list_projects
    from db.schema import upgrade
    from eval_core.judgments import parse_scale

    engine = get_engine(args.db)
    revision = upgrade(engine)
    out: dict = {"database": database_url(args.db), "revision": revision}
    if args.project:
        if args.project in {p.name for p in list_projects(engine)}:
            out["project"] = {"name": args.project, "created": False}
        else:
            info = create_project(engine, args.project, scale=parse_scale(args.scale), actor=OPERATOR)
            out["project"] = {"name": info.name, "scale": list(info.scale), "created": True}
    print_json(out)
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    from db.schema import current_revision, upgrade

    engine = get_engine(args.db)
    before = current_revision(engine)
    print_json({"database": database_url(args.db), "from": before, "to": upgrade(engine, args.revision)})
    return 0


def _project_create(args: argparse.Namespace) -> int:
    from db.projects import create_project, parse_labels
    from eval_core.judgments import parse_scale

    scale = parse_scale(args.scale)
    labels = parse_labels(args.labels, scale) if args.labels else None
    info = create_project(_engine(args), args.name, scale=scale, overlap=args.overlap,
                          overlap_fraction=args.fraction, threshold=args.threshold, labels=labels, actor=OPERATOR)
    print_json({"id": info.id, "name": info.name, "scale": list(info.scale), "labels": info.labels,
                 "overlap": info.overlap, "overlap_fraction": info.overlap_fraction, "threshold": info.threshold})
    return 0


def _project_list(args: argparse.Namespace) -> int:
    from db.projects import list_projects

    print_json([{"name": p.name, "scale": list(p.scale), "labels": p.labels, "overlap": p.overlap,
                  "overlap_fraction": p.overlap_fraction, "threshold": p.threshold}
                 for p in list_projects(_engine(args))])
    return 0


def _import(args: argparse.Namespace) -> int:
    """Validate the whole file, then write it all or nothing; the report goes to stdout."""
    from db import imports

    engine = _engine(args)
    if args.kind == "run":
        report = imports.import_run(engine, args.project, args.file, name=args.name, progress=True, actor=OPERATOR)
    else:
        func = {"queries": imports.import_queries, "fragments": imports.import_fragments,
                "judgments": imports.import_judgments}[args.kind]
        report = func(engine, args.project, args.file, progress=True, actor=OPERATOR)
    print_json(report.to_dict())
    return 0


def _rejected(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Print every rejected line (not only the first) before the CLI's one-line error."""

    def wrapper(args: argparse.Namespace) -> int:
        from db.imports import ImportRejected

        try:
            return run(args)
        except ImportRejected as exc:
            for line in exc.report.rejected[1:]:
                print(f"qrelkit: rejected: {line}", file=sys.stderr)
            raise

    return wrapper


def _db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL", default=None,
                        help="database URL (default: $QRELKIT_DB_URL, else sqlite:///./qrelkit.db)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add init, db, project and import to the `qrelkit` parser (accounts: annotator.cli.user)."""
    p = subparsers.add_parser("init", help="create or upgrade the store (schema to head), optionally a project")
    _db_option(p)
    p.add_argument("--project", help="also create this project if it does not exist")
    p.add_argument("--scale", default="0-3", help="grading scale of that project (default 0-3)")
    p.set_defaults(func=guarded(_init))

    db = subparsers.add_parser("db", help="database maintenance").add_subparsers(dest="db_command", metavar="ACTION",
                                                                                required=True)
    p = db.add_parser("upgrade", help="apply the Alembic migrations up to head (idempotent)")
    _db_option(p)
    p.add_argument("--revision", default="head", help=argparse.SUPPRESS)
    p.set_defaults(func=guarded(_db_upgrade))

    project = subparsers.add_parser("project", help="golden-set projects").add_subparsers(
        dest="project_command", metavar="ACTION", required=True)
    p = project.add_parser("create", help="create a project")
    p.add_argument("name")
    p.add_argument("--scale", default="0-3", help="grading scale low-high (default 0-3)")
    p.add_argument("--overlap", type=int, default=2, help="annotators per pair (default 2)")
    p.add_argument("--fraction", type=float, default=1.0, help="fraction of pairs that get the overlap (default 1)")
    p.add_argument("--threshold", type=float, default=0.6, help="agreement below this flags the guideline")
    p.add_argument("--labels", metavar="G=NAME,…",
                   help="grade names, e.g. \"1=Partly,2=Mostly,3=Fully\" (grades not named keep the default: the "
                        "bundled guideline's names on 0-3, else 'Grade g'; at most 60 characters each)")
    _db_option(p)
    p.set_defaults(func=guarded(_project_create))
    p = project.add_parser("list", help="list projects")
    _db_option(p)
    p.set_defaults(func=guarded(_project_list))

    p = subparsers.add_parser("import", help="import queries, fragments, a TREC run or judgments (all or nothing)")
    p.add_argument("kind", choices=IMPORT_KINDS)
    p.add_argument("file")
    p.add_argument("--project", required=True)
    p.add_argument("--name", help="run name (default: the file name without .trec/.txt/.gz)")
    _db_option(p)
    p.set_defaults(func=_rejected(guarded(_import)))

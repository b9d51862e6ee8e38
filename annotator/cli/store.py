"""`qrelkit init | db upgrade | project create|list|labels|set | import …`: set up the store from the shell.

Handlers are named cmd_<command>[_<action>], import the store inside, and act as the CLI operator.
"""

from __future__ import annotations

import argparse
import sys

from annotator.cli.common import LazyChoices, db_option, emit, report_option, store_engine
from eval_core.thresholds import AGREEMENT_THRESHOLD


def _project_report(info) -> dict:
    """What the project commands print about one project."""
    return {
        "id": info.id,
        "name": info.name,
        "scale": list(info.scale),
        "labels": info.labels,
        "overlap": info.overlap,
        "overlap_fraction": info.overlap_fraction,
        "threshold": info.threshold,
        "queue_order": info.queue_order,
    }


def _new_project(engine, name: str, args: argparse.Namespace, **policy) -> dict:
    """Create a project as the operator; it starts with a guideline (the bundled one on 0-3, else one generated
    from its grade names) unless --no-guideline."""
    from db.accounts.permissions import OPERATOR
    from db.projects import add_guideline, create_project, parse_labels, starting_guideline
    from eval_core.io.records import parse_scale

    scale = parse_scale(args.scale)
    labels = parse_labels(args.labels, scale) if getattr(args, "labels", None) else None
    info = create_project(engine, name, scale=scale, labels=labels, actor=OPERATOR, **policy)
    out = _project_report(info)
    if not args.no_guideline:
        text, note = starting_guideline(info)
        out["guideline"] = add_guideline(engine, info.name, text, actor=OPERATOR, note=note).version
    return out


def cmd_init(args: argparse.Namespace) -> int:
    """Create or upgrade the database; optionally create a first project."""
    from db.projects import list_projects
    from db.store.engine import database_url, get_engine
    from db.store.schema import upgrade

    engine = get_engine(args.db)
    out: dict = {"database": database_url(args.db), "revision": upgrade(engine)}
    if args.project:
        if args.project in {p.name for p in list_projects(engine)}:
            out["project"] = {"name": args.project, "created": False}
        else:
            made = _new_project(engine, args.project, args)
            out["project"] = {"name": made["name"], "scale": made["scale"], "created": True}
    emit(args, out)
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    """Apply the migrations up to head (the one other command that may create a database)."""
    from db.store.engine import database_url, get_engine
    from db.store.schema import current_revision, upgrade

    engine = get_engine(args.db)
    before = current_revision(engine)
    emit(args, {"database": database_url(args.db), "from": before, "to": upgrade(engine, args.revision)})
    return 0


def cmd_project_create(args: argparse.Namespace) -> int:
    """Create a project (with a first guideline unless --no-guideline) and print it."""
    emit(
        args,
        _new_project(
            store_engine(args),
            args.name,
            args,
            overlap=args.overlap,
            overlap_fraction=args.fraction,
            threshold=args.threshold,
        ),
    )
    return 0


def cmd_project_list(args: argparse.Namespace) -> int:
    """Every project and its settings."""
    from db.projects import list_projects

    emit(args, [_project_report(p) for p in list_projects(store_engine(args))])
    return 0


def cmd_project_labels(args: argparse.Namespace) -> int:
    """Rename a project's grades."""
    from db.accounts.permissions import OPERATOR
    from db.projects import get_project, parse_labels, set_grade_labels

    engine = store_engine(args)
    labels = parse_labels(args.labels, get_project(engine, args.name).scale)
    emit(args, _project_report(set_grade_labels(engine, args.name, labels, actor=OPERATOR)))
    return 0


def cmd_project_set(args: argparse.Namespace) -> int:
    """Change a project setting (the order annotators are served their pairs in)."""
    from db.accounts.permissions import OPERATOR
    from db.projects import set_queue_order

    emit(args, _project_report(set_queue_order(store_engine(args), args.name, args.queue_order, actor=OPERATOR)))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """Validate the whole file, then write it all or nothing; the report goes to stdout."""
    from db.accounts.permissions import OPERATOR
    from db.imports import IMPORT_KINDS, Judges, JudgmentsSource
    from eval_core.io.writers import QrelsGrades

    for kind, options in IMPORT_OPTIONS.items():
        given = [option for option in options if getattr(args, option.lstrip("-").replace("-", "_")) is not None]
        if given and args.kind not in kind.split("|"):
            raise ValueError(
                f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to `import "
                f"{kind.replace('|', '` and `import ')}` only"
            )
    engine = store_engine(args)
    extra: dict = {"name": args.name, "produced_by": args.produced_by} if args.kind == "run" else {}
    if args.kind in ("queries", "fragments"):
        from eval_core.io.collection import field_map

        extra = {"fmt": args.format, "fields": field_map(args.field, args.kind)}
    if args.kind == "queries" and args.topic_field is not None:
        extra["topic_field"] = args.topic_field
    if args.reference:
        if args.annotator_kind not in (None, "reference"):
            raise ValueError(f"--reference and --annotator-kind {args.annotator_kind}: give one")
        args.annotator_kind = "reference"
    if args.kind == "adjudications":
        if not args.lead:
            raise ValueError("import adjudications records a lead's decisions: name the lead with --lead NAME")
        extra = {"reason": args.reason}
    if args.kind == "judgments":
        extra = {
            "judges": Judges(args.annotator_kind, args.model, args.prompt_version),
            "source": JudgmentsSource(
                args.annotator,
                args.qrels_format,
                args.guideline,
                bool(args.require_texts),
                QrelsGrades(args.qrels_grades or QrelsGrades.AS_JUDGED),
            ),
        }
    actor = args.lead if args.kind == "adjudications" else OPERATOR
    report = IMPORT_KINDS[args.kind](engine, args.project, args.file, progress=True, actor=actor, **extra)
    data = report.to_dict()
    without_text = data.get("without_text")
    if without_text and args.report == "text":  # the note is told once, on stderr below; the report keeps the ids
        data["without_text"] = {key: value for key, value in without_text.items() if key != "note"}
    emit(args, data)
    if without_text:  # on the terminal even when stdout goes to a script (the JSON report keeps its note)
        print(f"note: {without_text['note']}", file=sys.stderr)
    return 0


# The import options that belong to some kinds only: kinds → options (checked before anything is read).
IMPORT_OPTIONS = {
    "queries|fragments": ("--format", "--field"),
    "queries": ("--topic-field",),
    "run": ("--name", "--produced-by"),
    "judgments": (
        "--annotator-kind",
        "--reference",
        "--model",
        "--prompt-version",
        "--annotator",
        "--qrels-format",
        "--qrels-grades",
        "--guideline",
        "--require-texts",
    ),
    "adjudications": ("--lead", "--reason"),
}


def _scale_options(parser: argparse.ArgumentParser, what: str) -> None:
    """--scale, --labels and --no-guideline, shared by `init --project` and `project create`."""
    parser.add_argument("--scale", default="0-3", help=f"grading scale low-high of {what} (default 0-3)")
    parser.add_argument(
        "--labels",
        metavar="G=NAME,…",
        help='grade names, e.g. "1=Partly,2=Mostly,3=Fully" (grades not named keep the default: '
        "the bundled guideline's names on 0-3, else 'Grade g'; at most 60 characters each)",
    )
    parser.add_argument(
        "--no-guideline",
        action="store_true",
        help="start without a guideline (default: version 1 is the bundled guideline on 0-3, else "
        "one generated from the scale's grade names; add one later with `qrelkit guideline add`)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add init, db, project and import to the `qrelkit` parser."""
    p = subparsers.add_parser("init", help="create or upgrade the store (schema to head), optionally a project")
    db_option(p)
    p.add_argument("--project", help="also create this project if it does not exist")
    _scale_options(p, "that project")
    report_option(p)
    p.set_defaults(func=cmd_init)

    db = subparsers.add_parser("db", help="database maintenance").add_subparsers(
        dest="db_command", metavar="ACTION", required=True
    )
    p = db.add_parser("upgrade", help="apply the Alembic migrations up to head (idempotent)")
    db_option(p)
    p.add_argument("--revision", default="head", help=argparse.SUPPRESS)
    report_option(p)
    p.set_defaults(func=cmd_db_upgrade)

    project = subparsers.add_parser("project", help="golden-set projects").add_subparsers(
        dest="project_command", metavar="ACTION", required=True
    )
    p = project.add_parser("create", help="create a project")
    p.add_argument("name")
    _scale_options(p, "the project")
    p.add_argument("--overlap", type=int, default=2, help="annotators per pair (default 2)")
    p.add_argument("--fraction", type=float, default=1.0, help="fraction of pairs that get the overlap (default 1)")
    p.add_argument(
        "--threshold",
        type=float,
        default=AGREEMENT_THRESHOLD,
        help="agreement below this flags the guideline (default %(default)s)",
    )
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_project_create)
    p = project.add_parser("list", help="list projects")
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_project_list)
    p = project.add_parser("labels", help="rename a project's grades")
    p.add_argument("name")
    p.add_argument("--labels", required=True, metavar="G=NAME,…", help='e.g. "0=No,1=Partly,2=Mostly,3=Fully"')
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_project_labels)
    p = project.add_parser("set", help="change a project setting")
    p.add_argument("name")
    p.add_argument(
        "--queue-order",
        required=True,
        metavar="ORDER",
        choices=LazyChoices("eval_core.vocab", "ORDER_NAMES"),
        help="the order annotators get their pairs in, within the query in progress: %(choices)s "
        "(see docs/queue_order.md)",
    )
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_project_set)

    p = subparsers.add_parser(
        "import",
        help="import queries, fragments, a TREC run, judgments or a lead's adjudications (all or nothing)",
        description="Import queries, fragments, a TREC run, judgments or a lead's adjudications: the whole file "
        "is checked, then written all or nothing. A run, judgments or qrels may name fragments whose texts were "
        "never imported: each becomes a fragment waiting for its text (the report counts them and names the "
        "first with their lines), evaluated and released but never served to an annotator or sent to a model "
        "judge; `import fragments` later fills the texts in. Adjudications: TREC qrels lines with a reason after "
        "the grade, JSONL/CSV/TSV records (query_id, fragment_id, grade, reason), or the list `qrelkit disputes` "
        "prints with a grade and a reason column added and filled in where decided.",
    )
    p.add_argument(
        "kind",
        metavar="KIND",
        choices=LazyChoices("db.imports", "IMPORT_KINDS"),
        help="what the file holds: %(choices)s",
    )
    p.add_argument("file")
    p.add_argument("--project", required=True)
    p.add_argument("--name", help="run name (default: the file name without .trec/.txt/.gz)")
    p.add_argument(
        "--produced-by",
        metavar="MODEL",
        help="run: the model it was produced with (judge-trust warns when a judge of its family grades it)",
    )
    p.add_argument(
        "--format",
        default=None,
        metavar="FORMAT",
        help="queries and fragments: the file's layout, when its content should not decide: jsonl, csv, "
        "tsv (with a header), id-text-tsv (MS MARCO: no header), trec-topics (queries)",
    )
    p.add_argument(
        "--field",
        action="append",
        metavar="NAME=FILE_FIELD",
        help="queries and fragments: read the file's field FILE_FIELD as NAME (repeatable), e.g. --field "
        "id=docid --field text=doc [--field title=…]; queries take id, text, category, description, "
        "narrative; fragments id, text, title, doc_id, position",
    )
    p.add_argument(
        "--topic-field",
        default=None,
        choices=("title", "desc"),
        help="queries from TREC topics: the field that is the query text (default title); the "
        "description and narrative are kept as the query's context",
    )
    p.add_argument(
        "--annotator",
        metavar="NAME",
        help="judgments: the file is qrels (TREC qid iter docid grade, or BEIR qrels TSV) graded by NAME (e.g. nist)",
    )
    p.add_argument(
        "--qrels-format",
        default=None,
        choices=("trec", "beir", "jg"),
        help="with --annotator: jg = multi-judge qrels (trec_eval -R qrels_jg), each judge group an "
        "annotator NAME-jg<group> (default: told by content)",
    )
    p.add_argument(
        "--qrels-grades",
        default=None,
        metavar="GRADES",
        choices=("as-judged", "gains"),
        help="with --annotator: the qrels hold grades as-judged (default) or gains from the scale's lowest grade "
        "(grade − low, as a release's TREC and BEIR qrels are written by default): a 1-5 project reads gain 0 as 1",
    )
    p.add_argument(
        "--guideline",
        type=int,
        metavar="N",
        help="judgments: the guideline version of judgments whose line names none (default: the version "
        "in force; the report says which)",
    )
    p.add_argument(
        "--annotator-kind",
        default=None,
        metavar="KIND",
        choices=LazyChoices("eval_core.vocab", "ANNOTATOR_KINDS"),
        help="judgments: the file's annotators are %(choices)s (default: as its annotator_kind column "
        "says, else human; a line that says otherwise refuses the file); model judges never count "
        "in human-human agreement (see docs/judges.md)",
    )
    p.add_argument(
        "--reference",
        action="store_const",
        const=True,
        default=None,
        help="judgments: the file's annotators are a reference (--annotator-kind reference), e.g. NIST's qrels: "
        "people are measured against it (`qrelkit agreement`: vs reference), it never fills an overlap slot "
        "or holds a queue, is never re-judged, and a release takes its grade where no person graded",
    )
    p.add_argument(
        "--require-texts",
        action="store_const",
        const=True,
        default=None,
        help="judgments: refuse a file that names a fragment whose text was never imported (default: such a "
        "fragment is kept without a text, evaluated and released but never served until `import fragments` "
        "brings it, and the report names how many with the first lines that name them)",
    )
    p.add_argument(
        "--lead",
        metavar="NAME",
        help="adjudications: the active lead whose decisions the file holds (required; recorded as theirs)",
    )
    p.add_argument(
        "--reason",
        help="adjudications: the reason of decisions whose line gives none (default: every line needs one)",
    )
    p.add_argument(
        "--model",
        help="judgments of model judges: the model's name (default: the file's model column, "
        "else each annotator's name)",
    )
    p.add_argument(
        "--prompt-version",
        help="judgments of model judges: the prompt version stamped on their grades "
        "(default: the file's prompt_version column)",
    )
    db_option(p)
    report_option(p, "--report-format")
    p.set_defaults(func=cmd_import)

"""Import queries, fragments, runs and judgments: validate the whole file, then write all of it or nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import Table, bindparam, select, tuple_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from db.accounts.permissions import Actor, require_lead
from db.accounts.users import LOOKS_LIKE, account_keys, check_username, name_key
from db.adjudication import DecisionsReport, import_adjudications, record_decisions
from db.assignment import IMPORTED
from db.projects import ProjectNotFound, project_row, project_scale
from db.store.engine import session_scope
from db.store.frames import project_adjudications
from db.store.models import (
    Assignment,
    Fragment,
    Guideline,
    Judgment,
    JudgmentHistory,
    Pair,
    Project,
    Query,
    Run,
    RunEntry,
    User,
    pk,
    table_of,
    utcnow,
)
from db.textless import EXAMPLES, IMPORT_TEXTS, create_textless, textless_report
from eval_core.errors import MAX_PROBLEMS, InputError, Problems
from eval_core.io.collection import read_fragments, read_queries
from eval_core.io.formats import detect_format, load_run
from eval_core.io.judgments import (
    ANNOTATOR_KINDS,
    QRELS_FORMATS,
    JudgmentsFile,
    judgments_file_hint,
    read_judgments_file,
    read_qrels_judgments,
)
from eval_core.io.records import MAX_NOTE_CHARS, iter_lines, tighter_limits
from eval_core.io.trec_text import SWAPPED_ADVICE
from eval_core.io.writers import QrelsGrades, ranked
from eval_core.progress import bar as progress_bar

MAX_ID_CHARS = 500
MAX_NAME_CHARS = 200
MAX_PROMPT_CHARS = 64  # users.prompt_version, judgments.prompt_version
# What `import run` says of grades given as a run, instead of eval's "were the qrels and the run swapped?"
QRELS_AS_RUN = (
    ": grades go in with `qrelkit import judgments FILE` (TREC or BEIR qrels: with --annotator NAME, "
    "whose grades they are)"
)
MAX_TEXT_CHARS = 1_000_000
# A JudgmentsSource told the qrels hold gains but not whose grades they are (the app words it for its page).
GAINS_NEED_ANNOTATOR = "--qrels-grades reads qrels as an annotator's grades: name the annotator with --annotator"
# The longest line a run or a judgments file may have in the store: a run line holds two ids of at most
# MAX_ID_CHARS characters (4 bytes each at most in UTF-8) and a rank, a score and a tag; a judgments line also
# a note and a reason (records.MAX_NOTE_CHARS each, escaped in JSON). A longer line is refused at its number as
# it is read, so a file of huge ids is not held whole before its first line is found wrong.
RUN_LINE_BYTES = 8 * 1024
JUDGMENTS_LINE_BYTES = 256 * 1024
CHUNK = 20_000
# The Core tables the bulk writers insert into and update
QUERIES, FRAGMENTS, PAIRS = table_of(Query), table_of(Fragment), table_of(Pair)
JUDGMENTS, JUDGMENT_HISTORY, ASSIGNMENTS = table_of(Judgment), table_of(JudgmentHistory), table_of(Assignment)


@dataclass
class ImportReport:
    """What an import did; on rejection nothing was written and `rejected` lists every `path:line: problem`."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: list[str] = field(default_factory=list)
    kind: str = ""
    path: str = ""
    records: int = 0
    without_text: dict = field(default_factory=dict)  # fragments this import created without a text (db.textless)
    texts_filled: int = 0  # fragments that waited for their text and got it (an import of fragments)
    format: str = ""
    guideline: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-able form for the CLI."""
        out = {
            "kind": self.kind,
            "path": self.path,
            "format": self.format,
            "records": self.records,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "rejected": self.rejected,
        }
        if self.guideline:
            out["guideline"] = self.guideline
        if self.texts_filled:
            out["texts_filled"] = self.texts_filled
        return {**out, "without_text": self.without_text} if self.without_text else out


class ImportRejected(InputError):
    """The file failed validation and the database is unchanged; `report.rejected` names every bad line."""

    def __init__(self, problems: list[InputError], total: int, report: ImportReport) -> None:
        first = problems[0]
        more = f" (and {total - 1:,} more problem(s))" if total > 1 else ""
        super().__init__(first.path, first.line, first.problem + more)
        self.report = report
        self.more = report.rejected if total > 1 else []  # every bad line (near-identical collapsed), for the CLI


class _Problems(Problems):
    """eval_core's problem collector for one import kind, which rejects the import when anything was wrong."""

    def __init__(self, path: str | Path, kind: str) -> None:
        super().__init__(path)
        self.kind = kind

    def check(self) -> None:
        """Raise ImportRejected when anything was wrong."""
        if self.total:
            report = ImportReport(rejected=self.lines(), kind=self.kind, path=self.path)
            raise ImportRejected(self.items, self.total, report)


def _project(engine: Engine, project: str, path: str | Path, actor: Actor) -> Project:
    """The target project, once the actor is known to be a lead or the operator (checked again when writing),
    or an InputError naming the file (nothing is read or written)."""
    try:
        with session_scope(engine) as session:
            require_lead(session, actor)
            return project_row(session, project)
    except ProjectNotFound as exc:
        raise InputError(str(path), None, str(exc)) from None


def _ids_by_external_id(
    session: Session, model: type[Query] | type[Fragment], project_id: int, *, readable_only: bool = False
) -> dict[str, int]:
    """The project's queries or fragments: external id → store id (with `readable_only`, fragments that have
    their text)."""
    table = table_of(model)
    stmt = select(table.c.external_id, table.c.id).where(table.c.project_id == project_id)
    if readable_only:
        stmt = stmt.where(table.c.has_text)
    return {external: id_ for external, id_ in session.execute(stmt).all()}


def content_hash(text: str) -> str:
    """sha256 of the whitespace-normalised text: pooling treats equal hashes as the same fragment."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def _progress(items: Iterable, show: bool, desc: str, total: int | None = None) -> Iterable:
    # delay: an import done in under half a second shows no bar at all, rather than a "0 rec" that never moves
    return progress_bar(items, desc=desc, total=total, unit=" rec", show=show, leave=False, delay=0.5)


def _chunks(rows: list, size: int = CHUNK) -> Iterator[list]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


# --- queries and fragments -------------------------------------------------------------------------------------


def _limited(problems: _Problems, line: int, values: dict[str, str | None], limits: dict[str, int]) -> bool:
    """False (and a problem for the line) when a field is longer than the store keeps."""
    for name, limit in limits.items():
        value = values.get(name)
        if value is not None and len(value) > limit:
            problems.add(
                line, f"{name.replace('_', ' ')} is {len(value)} characters; the store accepts at most {limit}"
            )
            return False
    return True


def _parse_queries(
    path: str | Path, show: bool, fmt: str | None, topic_field: str, fields: dict[str, str] | None = None
) -> tuple[dict[str, dict], str]:
    """The queries of a file, read by eval_core's one queries reader, within the store's sizes."""
    read = read_queries(path, fmt, topic_field, fields)
    problems = _Problems(path, "queries")
    problems.items, problems.total = list(read.problems), read.total_problems
    out: dict[str, dict] = {}
    limits = {
        "query_id": MAX_ID_CHARS,
        "text": MAX_TEXT_CHARS,
        "category": MAX_NAME_CHARS,
        "description": MAX_TEXT_CHARS,
        "narrative": MAX_TEXT_CHARS,
    }
    for rec in _progress(read.records, show, "checking queries"):
        values = {
            "query_id": rec.id,
            "text": rec.text,
            "category": rec.category,
            "description": rec.description,
            "narrative": rec.narrative,
        }
        if _limited(problems, rec.line, values, limits):
            out[rec.id] = {k: v for k, v in values.items() if k != "query_id"}
    problems.check()
    return out, read.format


def _parse_fragments(
    path: str | Path, show: bool, fmt: str | None, fields: dict[str, str] | None = None
) -> tuple[dict[str, dict], str]:
    """The fragments of a file, read by eval_core's one fragments reader, within the store's sizes."""
    read = read_fragments(path, fmt, fields)
    problems = _Problems(path, "fragments")
    problems.items, problems.total = list(read.problems), read.total_problems
    out: dict[str, dict] = {}
    limits = {"fragment_id": MAX_ID_CHARS, "doc_id": MAX_ID_CHARS, "text": MAX_TEXT_CHARS, "title": MAX_TEXT_CHARS}
    for rec in _progress(read.records, show, "checking fragments"):
        if _limited(
            problems,
            rec.line,
            {"fragment_id": rec.id, "doc_id": rec.doc_id, "text": rec.text, "title": rec.title},
            limits,
        ):
            out[rec.id] = {
                "text": rec.text,
                "title": rec.title,
                "doc_id": rec.doc_id,
                "position": rec.position,
                "meta": rec.meta,
                "content_hash": content_hash(rec.text),
                "has_text": True,
            }
    problems.check()
    return out, read.format


def _upsert_by_external_id(
    session: Session, table: Table, project_id: int, parsed: dict[str, dict], report: ImportReport, show: bool
) -> None:
    """Insert new external ids, update changed ones, count the unchanged — in the caller's transaction."""
    columns = list(next(iter(parsed.values())).keys())
    existing = {
        row[0]: row[1:]
        for row in session.execute(
            select(table.c.external_id, table.c.id, *(table.c[c] for c in columns)).where(
                table.c.project_id == project_id
            )
        )
    }
    new, changed = [], []
    for ext, values in parsed.items():
        old = existing.get(ext)
        if old is None:
            new.append({"project_id": project_id, "external_id": ext, **values})
        elif tuple(old[1:]) != tuple(values[c] for c in columns):
            changed.append({"_id": old[0], **values})
        else:
            report.unchanged += 1
    for chunk in _progress(list(_chunks(new)), show, "writing new"):
        session.execute(table.insert(), chunk)
    if changed:
        stmt = table.update().where(table.c.id == bindparam("_id")).values({c: bindparam(c) for c in columns})
        for chunk in _progress(list(_chunks(changed)), show, "writing updates"):
            session.execute(stmt, chunk)
    report.created, report.updated = len(new), len(changed)


def import_queries(
    engine: Engine,
    project: str,
    path: str | Path,
    progress: bool = False,
    *,
    actor: Actor,
    fmt: str | None = None,
    topic_field: str = "title",
    fields: dict[str, str] | None = None,
) -> ImportReport:
    """Queries in any layout eval_core.io.collection reads (JSONL/CSV/TSV records, BEIR, headerless qid<TAB>text,
    TREC topics with `topic_field` as the text and the description and narrative kept as context); `fields`
    maps the file's field names (eval_core.io.collection.field_map)."""
    proj = _project(engine, project, path, actor)
    parsed, found = _parse_queries(path, progress, fmt, topic_field, fields)
    report = ImportReport(kind="queries", path=str(path), records=len(parsed), format=found)
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        _upsert_by_external_id(session, QUERIES, pk(proj), parsed, report, progress)
    return report


def import_fragments(
    engine: Engine,
    project: str,
    path: str | Path,
    progress: bool = False,
    *,
    actor: Actor,
    fmt: str | None = None,
    fields: dict[str, str] | None = None,
) -> ImportReport:
    """Fragments in any layout eval_core.io.collection reads (qrelkit/BEIR/Pyserini/ir_datasets records,
    headerless pid<TAB>text, gzipped or not; `fields` maps other field names, e.g. {"text": "doc"}); `doc_id`
    and a chunk position are stored, other fields → meta."""
    proj = _project(engine, project, path, actor)
    parsed, found = _parse_fragments(path, progress, fmt, fields)
    report = ImportReport(kind="fragments", path=str(path), records=len(parsed), format=found)
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        waiting = {
            ext
            for (ext,) in session.execute(
                select(FRAGMENTS.c.external_id).where(FRAGMENTS.c.project_id == pk(proj), ~FRAGMENTS.c.has_text)
            )
        }
        _upsert_by_external_id(session, FRAGMENTS, pk(proj), parsed, report, progress)
        report.texts_filled = len(waiting & parsed.keys())  # counted apart from the texts that changed
        report.updated -= report.texts_filled
        _link_run_entries(session, pk(proj))
    return report


def _link_run_entries(session: Session, project_id: int) -> None:
    """Point the entries of runs stored before their documents were fragments (before 0017 a run kept them
    with no fragment) at the fragments now imported under their ids."""
    runs, entries = table_of(Run), table_of(RunEntry)
    match = (
        select(FRAGMENTS.c.id)
        .where(FRAGMENTS.c.project_id == project_id, FRAGMENTS.c.external_id == entries.c.doc_external_id)
        .scalar_subquery()
    )
    session.execute(
        entries.update()
        .where(
            entries.c.fragment_id.is_(None),
            entries.c.run_id.in_(select(runs.c.id).where(runs.c.project_id == project_id)),
        )
        .values(fragment_id=match)
    )


# --- runs ------------------------------------------------------------------------------------------------------


def run_name_from_path(path: str | Path) -> str:
    """`runs/bm25.trec.gz` → `bm25.trec`… minus one format suffix: `bm25`."""
    name = Path(path).name
    name = name.removesuffix(".gz")
    stem, dot, suffix = name.rpartition(".")
    return stem if dot and suffix.lower() in {"trec", "txt", "run", "tsv"} else name


def _parse_run(path: str | Path, queries: dict[str, int], show: bool) -> pd.DataFrame:
    """The run as (query_id, doc, score, rank) in trec_eval order (score descending, ties by docid descending),
    read by eval_core's one run reader (TREC, or JSONL/CSV runs; its path:line errors), then checked against
    the project: every line naming a query the project lacks, or a document id longer than the store keeps,
    is a problem (found by one more pass over the file, only when there are any)."""
    try:
        with tighter_limits(
            line_bytes=RUN_LINE_BYTES, line_note=f"a run line holds ids of at most {MAX_ID_CHARS} characters"
        ):
            cols = load_run(path)
    except InputError as exc:
        if not exc.problem.endswith(SWAPPED_ADVICE):
            raise
        raise InputError(exc.path, exc.line, exc.problem.removesuffix(SWAPPED_ADVICE) + QRELS_AS_RUN) from None
    frame = cols.frame("score").rename(columns={"query_id": "qext", "doc_id": "doc"})
    frame["query_id"] = frame["qext"].map(queries)
    unknown = set(frame.loc[frame["query_id"].isna(), "qext"].unique())
    long_docs = set(frame.loc[frame["doc"].str.len() > MAX_ID_CHARS, "doc"].unique())
    if unknown or long_docs:
        _run_problems(path, unknown, long_docs, show)
    frame = frame.astype({"query_id": np.int64})[["query_id", "doc", "score"]]
    return ranked(frame.rename(columns={"doc": "doc_id"})).rename(columns={"doc_id": "doc"})


def _run_problems(path: str | Path, unknown: set[str], long_docs: set[str], show: bool) -> None:
    """Raise ImportRejected naming every line of a run with an unknown query id or an over-long document id."""
    problems = _Problems(path, "run")
    for lineno, line in _progress(iter_lines(path, blank=False), show, "locating problems"):
        fields = line.split()
        if len(fields) < 3 or fields[0].startswith("#"):
            continue
        if fields[0] in unknown:
            problems.add(lineno, f"unknown query id {fields[0]!r} (not imported into this project)")
        elif fields[2] in long_docs:
            problems.add(lineno, f"document id is {len(fields[2])} characters; at most {MAX_ID_CHARS}")
    if not problems.total:  # a JSONL/CSV run: its lines are records, not fields
        for qext in sorted(unknown)[:MAX_PROBLEMS]:
            problems.add(None, f"unknown query id {qext!r} (not imported into this project)")
        for doc in sorted(long_docs)[:MAX_PROBLEMS]:
            problems.add(None, f"document id is {len(doc)} characters; at most {MAX_ID_CHARS}")
    problems.check()


def _run_hash(frame: pd.DataFrame, qext: dict[int, str]) -> str:
    """sha256 over per-row hashes of (query external id, doc, score) in rank order: equal runs, equal hashes."""
    keyed = pd.DataFrame({"q": frame["query_id"].map(qext), "d": frame["doc"], "s": frame["score"]})
    return hashlib.sha256(pd.util.hash_pandas_object(keyed, index=False).to_numpy().tobytes()).hexdigest()


def import_run(
    engine: Engine,
    project: str,
    path: str | Path,
    name: str | None = None,
    progress: bool = False,
    *,
    actor: Actor,
    produced_by: str | None = None,
) -> ImportReport:
    """A TREC run stored under `name` (default: the file name); re-importing the same name replaces its lines.
    `produced_by`: the model the run was produced with (a judge of its family is warned about)."""
    produced_by = (produced_by or "").strip() or None
    if produced_by is not None and len(produced_by) > 200:
        raise InputError(str(path), None, f"--produced-by must be 1-200 characters, got {len(produced_by)}")
    project_id = pk(_project(engine, project, path, actor))
    name = (name or run_name_from_path(path)).strip()
    if not name or len(name) > 200:
        raise InputError(str(path), None, f"run name must be 1-200 characters, got {name!r}")
    with session_scope(engine) as session:
        queries = _ids_by_external_id(session, Query, project_id)
    frame = _parse_run(path, queries, progress)
    digest = _run_hash(frame, {v: k for k, v in queries.items()})
    report = ImportReport(kind="run", path=str(path), records=len(frame), format=detect_format(path))
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        old = session.execute(
            select(col(Run.id), col(Run.content_hash)).where(col(Run.project_id) == project_id, col(Run.name) == name)
        ).first()
        if old is not None and old.content_hash == digest:
            report.unchanged = 1
            return report
        fragments = _ids_by_external_id(session, Fragment, project_id)
        unknown = set(frame.loc[~frame["doc"].isin(fragments.keys()), "doc"].unique())
        if unknown:  # kept as fragments waiting for their text: pooled, evaluated, served once the text comes
            report.without_text = textless_report(str(path), len(unknown), _first_lines(path, unknown))
            fragments.update(create_textless(session, project_id, unknown))
        runs = table_of(Run)
        if old is None:
            run_id = session.execute(
                runs.insert()
                .values(
                    project_id=project_id,
                    name=name,
                    content_hash=digest,
                    n_lines=len(frame),
                    created_at=utcnow(),
                    produced_by=produced_by,
                )
                .returning(runs.c.id)
            ).scalar_one()
            report.created = 1
        else:
            run_id = old.id
            entries = table_of(RunEntry)
            session.execute(entries.delete().where(entries.c.run_id == run_id))
            session.execute(
                runs.update()
                .where(runs.c.id == run_id)
                .values(content_hash=digest, n_lines=len(frame), created_at=utcnow(), produced_by=produced_by)
            )
            report.updated = 1
        _insert_run_entries(session, run_id, frame, fragments, progress)
    return report


def _first_lines(path: str | Path, unknown: set[str]) -> dict[str, int | None]:
    """The first EXAMPLES documents of a TREC run that the project lacked, with the line that first names each
    (one more pass over the file, only when there are any); a JSONL/CSV run's are named without a line."""
    examples: dict[str, int | None] = {}
    for lineno, line in iter_lines(path, blank=False):
        fields = line.split()
        if len(fields) == 6 and fields[2] in unknown and fields[2] not in examples:
            examples[fields[2]] = lineno
            if len(examples) == min(EXAMPLES, len(unknown)):
                return examples
    for doc in sorted(unknown - examples.keys())[: EXAMPLES - len(examples)]:
        examples[doc] = None
    return examples


def _insert_run_entries(
    session: Session, run_id: int, frame: pd.DataFrame, fragments: dict[str, int], show: bool
) -> None:
    """Bulk insert on the driver (SQLite executemany of tuples, PostgreSQL COPY) in the caller's transaction;
    every document has a fragment (one without a text was created for a document the corpus lacked)."""
    fids = frame["doc"].map(fragments).astype("Int64").astype(object)
    fids = fids.where(fids.notna(), None)
    rows = list(
        zip(
            [run_id] * len(frame),
            frame["query_id"].tolist(),
            frame["doc"].tolist(),
            fids.tolist(),
            frame["rank"].tolist(),
            frame["score"].tolist(),
            strict=True,
        )
    )
    columns = "run_id, query_id, doc_external_id, fragment_id, rank, score"
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        driver = conn.connection.driver_connection  # psycopg's connection: COPY is not in the DBAPI
        assert driver is not None, "a live connection has its driver's"
        cursor = driver.cursor()
        with cursor.copy(f"COPY run_entries ({columns}) FROM STDIN") as copy:
            for row in _progress(rows, show, "writing run"):
                copy.write_row(row)
        return
    sql = f"INSERT INTO run_entries ({columns}) VALUES (?, ?, ?, ?, ?, ?)"
    for chunk in _progress(list(_chunks(rows, 100_000)), show, "writing run"):
        conn.exec_driver_sql(sql, chunk)


# --- judgments -------------------------------------------------------------------------------------------------


def _read_judgments(path: str | Path, proj: Project, show: bool, source: JudgmentsSource) -> JudgmentsFile:
    """The file through eval_core's readers: qrels as `source.annotator`'s grades, else a judgments file (a
    qrels file or a run given without --annotator is refused with what it is)."""
    if source.annotator is not None:
        return read_qrels_judgments(
            path, source.annotator, project_scale(proj), source.qrels_format, source.qrels_grades
        )
    if source.qrels_format is not None:
        raise InputError(
            str(path),
            None,
            "--qrels-format reads qrels as an annotator's grades: name the annotator with --annotator NAME",
        )
    refused = judgments_file_hint(path)
    if refused is not None:
        raise refused
    return read_judgments_file(path, project_scale(proj), progress=show)


def _stamp_guideline(
    path: str | Path, frame: pd.DataFrame, versions: dict[int, int], proj: Project, wanted: int | None
) -> dict:
    """Give the judgments whose line names no guideline version `wanted` (--guideline) or the version in force,
    marking which were stamped (`guideline_given`); returns what the import report says about it."""
    given = frame["guideline"].notna().to_numpy() if "guideline" in frame.columns else np.zeros(len(frame), bool)
    if wanted is not None and wanted not in versions:
        have = ", ".join(map(str, sorted(versions))) or "none yet"
        raise InputError(
            str(path), None, f"--guideline {wanted}: project {proj.name!r} has no such version (versions: {have})"
        )
    version = wanted if wanted is not None else max(versions, default=None)
    if "guideline_id" not in frame.columns:
        frame["guideline_id"] = pd.Series(None, index=frame.index, dtype=object)
    frame["guideline_id"] = frame["guideline_id"].astype(object)
    frame.loc[~given, "guideline_id"] = versions.get(version) if version is not None else None
    frame["guideline_given"] = given
    stamped = int((~given).sum())
    if not stamped:
        return {}
    said = (
        "--guideline"
        if wanted is not None
        else "the version in force"
        if version is not None
        else "none: the project has no guideline yet"
    )
    return {"version": version, "from": said, "judgments": stamped}


def _parse_judgments(
    engine: Engine,
    path: str | Path,
    proj: Project,
    queries: dict[str, int],
    fragments: dict[str, int],
    show: bool,
    judges: Judges,
    source: JudgmentsSource,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, dict], dict, dict[str, int]]:
    """The judgments and adjudications of a file (eval_core's one judgments reader) with store ids: query,
    fragment, guideline (by version), a timestamp and each grade's prompt version, plus the users-row fields
    of every annotator (see _annotators); every line naming something the project does not have is a
    problem, an annotator must keep its kind (and a model judge its model), and an adjudication must name an
    active lead. The fourth item says which guideline version the judgments without one were given; the last,
    the fragment ids the project lacks with the line that first names each (to be created without a text;
    with `source.require_texts`, each such line is a problem instead)."""
    note = f"a judgment's line holds a note and a reason of at most {MAX_NOTE_CHARS:,} characters each"
    with tighter_limits(line_bytes=JUDGMENTS_LINE_BYTES, line_note=note):
        read = _read_judgments(path, proj, show, source)
    problems = _Problems(path, "judgments")
    problems.items, problems.total = list(read.problems), read.total_problems
    frame, decided = read.judgments, read.adjudications
    with session_scope(engine) as session:
        versions: dict[int, int] = {
            version: id_
            for version, id_ in session.execute(
                select(col(Guideline.version), col(Guideline.id)).where(col(Guideline.project_id) == pk(proj))
            ).all()
        }
        leads = {
            name: (role, active)
            for name, role, active in session.execute(
                select(col(User.username), col(User.role), col(User.active)).where(
                    col(User.username).in_(decided["by"].unique().tolist())
                )
            )
        }
        known = {
            name: (kind, model)
            for name, kind, model in session.execute(
                select(col(User.username), col(User.kind), col(User.model_name)).where(
                    col(User.username).in_(frame["annotator"].unique().tolist())
                )
            )
        }
        taken = account_keys(session)
    people = _annotators(frame, judges, known, problems)
    textless: dict[str, int] = {}  # fragment id the project lacks → the line that first names it
    for table in (frame, decided):
        table["query"] = table["query_id"].map(queries)
        table["fragment"] = table["fragment_id"].map(fragments)
        unknown = table["query"].isna() | table["fragment"].isna()
        for line, qext, fext, qid in table.loc[unknown, ["line", "query_id", "fragment_id", "query"]].itertuples(
            index=False
        ):
            if pd.isna(qid):
                problems.add(line, f"unknown query id {qext!r} (not imported into this project)")
            elif source.require_texts:
                problems.add(
                    line,
                    f"fragment id {fext!r} has no text in this project (never imported) — import their texts "
                    f"first with {IMPORT_TEXTS}, or leave out --require-texts to keep them as fragments waiting "
                    "for their text",
                )
            else:
                textless[fext] = min(line, textless.get(fext, line))
    if "guideline" in frame.columns:
        frame["guideline_id"] = frame["guideline"].map(lambda v: None if v is None else _guideline_id(versions, v))
        listed = ", ".join(map(str, sorted(versions))) or "none yet"
        for line, given in frame.loc[
            frame["guideline"].notna() & frame["guideline_id"].isna(), ["line", "guideline"]
        ].itertuples(index=False):
            problems.add(
                line,
                f"guideline version {given!r} does not exist in project {proj.name!r} "
                f"(versions: {listed}); add it with `qrelkit guideline add`",
            )
    stamp = _stamp_guideline(path, frame, versions, proj, source.guideline)
    for line, annotator in frame.loc[frame["annotator"].str.len() > MAX_NAME_CHARS, ["line", "annotator"]].itertuples(
        index=False
    ):
        problems.add(line, f"annotator name is {len(annotator)} characters; at most {MAX_NAME_CHARS}")
    _new_account_names(frame, taken, problems)
    for line, lead in decided[["line", "by"]].itertuples(index=False):
        role = leads.get(lead)
        if role is None or role[0] != "lead" or not role[1]:
            why = "no such user" if role is None else ("deactivated" if not role[1] else f"role {role[0]}")
            problems.add(line, f"adjudication by {lead!r} ({why}): an adjudication must name an active lead")
    problems.check()
    return frame, decided, people, stamp, textless


def _new_account_names(frame: pd.DataFrame, taken: dict[str, str], problems: Problems) -> None:
    """The annotators an import would create as accounts are held to the rules of any new account
    (db.accounts.users): a valid name that looks like no existing account and no other new annotator of the
    file, so `lеa` (Cyrillic е) or `LEA` never becomes a second account beside `lea`. Each problem is told at
    the annotator's first line."""
    existing = set(taken.values())
    new: dict[str, tuple[str, int]] = {}
    first = frame.drop_duplicates("annotator")
    for line, name in first.loc[first["annotator"].str.len() <= MAX_NAME_CHARS, ["line", "annotator"]].itertuples(
        index=False
    ):
        if name in existing:
            continue
        try:
            check_username(name)
        except ValueError as exc:
            problems.add(line, f"annotator {name!r} cannot become an account: {exc}")
            continue
        key = name_key(name)
        if key in taken:
            problems.add(
                line,
                f"annotator {name!r} looks like the existing account {taken[key]!r} ({LOOKS_LIKE}); "
                f"write that account's exact name, or a distinct one",
            )
        elif key in new:
            other, where = new[key]
            problems.add(
                line,
                f"annotator {name!r} looks like annotator {other!r} of line {where} ({LOOKS_LIKE}); "
                f"two accounts would pass for each other: write one name",
            )
        else:
            new[key] = (name, line)


def _version(text: str) -> int | None:
    """A guideline version as written in a judgments file ("2"), None when it is not a number."""
    text = str(text).strip()
    return int(text) if text.isdigit() else None


def _guideline_id(versions: dict[int, int], text: str) -> int | None:
    """The id of the guideline version a judgments file names, None when there is no such version."""
    version = _version(text)
    return None if version is None else versions.get(version)


@dataclass(frozen=True)
class JudgmentsSource:
    """What an import is told about a judgments file beyond who judged: `annotator` makes it qrels (TREC or BEIR;
    `qrels_format` 'jg': multi-judge, one annotator per judge group) graded by that annotator, its grades as
    judged or (`qrels_grades` gains) gains from the scale's lowest grade, as a release's qrels; `guideline` is
    the version stamped on judgments whose line names none (default: the version in force); `require_texts`
    refuses a file naming a fragment whose text was never imported (default: it becomes a fragment waiting for
    its text, db.textless, and the report names how many)."""

    annotator: str | None = None
    qrels_format: str | None = None
    guideline: int | None = None
    require_texts: bool = False  # refuse a line naming a fragment without a text, instead of creating it text-less
    qrels_grades: QrelsGrades = QrelsGrades.AS_JUDGED  # qrels: grades as judged, or gains from the scale's lowest

    def __post_init__(self) -> None:
        if self.annotator is not None and not 0 < len(self.annotator.strip()) <= MAX_NAME_CHARS - 10:
            raise ValueError(f"annotator name must be 1-{MAX_NAME_CHARS - 10} characters, got {self.annotator!r}")
        if self.qrels_format is not None and self.qrels_format not in QRELS_FORMATS:
            raise ValueError(f"qrels format must be one of {', '.join(QRELS_FORMATS)}, got {self.qrels_format!r}")
        if self.qrels_grades != QrelsGrades.AS_JUDGED and self.annotator is None:
            raise ValueError(GAINS_NEED_ANNOTATOR)


@dataclass(frozen=True)
class Judges:
    """What an import is told about a judgments file's annotators: their kind (None: as the file's
    `annotator_kind` column says, else people), and for model judges the model name (default: the file's
    `model` column, else each annotator's own name) and the prompt version stamped on their grades (default:
    the file's `prompt_version` column). A line whose column says otherwise refuses the file."""

    kind: str | None = None
    model: str | None = None
    prompt_version: str | None = None

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in ANNOTATOR_KINDS:
            raise ValueError(f"annotator kind must be one of {', '.join(ANNOTATOR_KINDS)}, got {self.kind!r}")
        if self.kind != "model" and (self.model is not None or self.prompt_version is not None):
            raise ValueError("a model name and prompt version belong to model judges (annotator kind 'model')")
        for what, value, limit in (
            ("model name", self.model, MAX_NAME_CHARS),
            ("prompt version", self.prompt_version, MAX_PROMPT_CHARS),
        ):
            if value is not None and not 0 < len(value.strip()) <= limit:
                raise ValueError(f"{what} must be 1-{limit} characters, got {value!r}")


# A judgments file's columns that say who an annotator is: column, Judges field, CLI option, size limit.
ANNOTATOR_COLUMNS = (
    ("annotator_kind", "kind", "--annotator-kind", 10),
    ("model", "model", "--model", MAX_NAME_CHARS),
    ("prompt_version", "prompt_version", "--prompt-version", MAX_PROMPT_CHARS),
)


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    """An optional text column, stripped, None where absent or blank (through its few distinct values)."""
    if name not in frame.columns:
        return pd.Series(None, index=frame.index, dtype=object)
    codes, distinct = pd.factorize(frame[name])  # missing → -1, the None appended last
    cleaned = np.array([str(value).strip() or None for value in distinct] + [None], dtype=object)
    return pd.Series(cleaned[codes], index=frame.index, dtype=object)


def _check_columns(given: dict[str, pd.Series], lines: np.ndarray, judges: Judges, problems: _Problems) -> None:
    """Each who-judged cell on its own: a known kind, within the store's size, and not against the option given."""
    for column, field_name, option, limit in ANNOTATOR_COLUMNS:
        values, wanted = given[column], getattr(judges, field_name)
        present = values.notna().to_numpy()
        if not present.any():
            continue
        text = values[present]
        unknown = ~text.isin(ANNOTATOR_KINDS) if column == "annotator_kind" else text.isna()
        bad = unknown | (text.str.len() > limit) | ((text != wanted) if wanted is not None else text.isna())
        for line, value, odd in zip(
            lines[present][bad.to_numpy()].tolist(), text[bad].tolist(), unknown[bad].tolist(), strict=True
        ):
            if odd:
                problems.add(line, f"annotator_kind {value!r} must be one of {', '.join(ANNOTATOR_KINDS)}")
            elif len(value) > limit:
                problems.add(line, f"{column} is {len(value)} characters; at most {limit}")
            else:
                problems.add(
                    line,
                    f"{column} is {value!r} on this line, but the import says {option} {wanted}; "
                    f"leave out {option} or that column",
                )


def _changes(codes: np.ndarray, values: np.ndarray, rows: np.ndarray) -> tuple[dict[int, int], list[int]]:
    """Among `rows` (positions, in file order): each annotator code's first row, and the first row per annotator
    whose value differs from that first one."""
    if not len(rows):
        return {}, []
    _, at = np.unique(codes[rows], return_index=True)
    first = rows[at]
    reference = np.empty(codes.max() + 1, dtype=object)
    reference[codes[first]] = values[first]
    differ = rows[values[rows] != reference[codes[rows]]]
    _, at = np.unique(codes[differ], return_index=True)
    return dict(zip(codes[first].tolist(), first.tolist(), strict=True)), differ[at].tolist()


def _annotators(
    frame: pd.DataFrame, judges: Judges, known: dict[str, tuple[str, str | None]], problems: _Problems
) -> dict[str, dict]:
    """The users-row fields (kind, model_name, prompt_version) of every annotator in the file, from its
    annotator_kind / model / prompt_version columns and the import's options; sets `frame.prompt_version`
    (the version behind each model judge's grade, None for people). Problems: a column that contradicts an
    option, an unknown kind, a person with a model, an annotator whose kind or model changes between lines or
    differs from the store's. A new model judge's prompt version is the one of its latest grade in the file.
    Column-wise: per-line work only for the lines with a problem."""
    given = {column: _column(frame, column) for column, *_ in ANNOTATOR_COLUMNS}
    lines = frame["line"].to_numpy()
    _check_columns(given, lines, judges, problems)
    codes, names = pd.factorize(frame["annotator"])
    from_file = given["annotator_kind"].notna().to_numpy()
    kind = np.where(from_file, given["annotator_kind"].to_numpy(dtype=object), judges.kind or "human")
    is_model = kind == "model"
    has = {c: given[c].notna().to_numpy() for c in ("model", "prompt_version")}
    person_with_model = ~is_model & (has["model"] | has["prompt_version"])
    for line, code in zip(lines[person_with_model].tolist(), codes[person_with_model].tolist(), strict=True):
        problems.add(
            line,
            f"annotator {names[code]!r} is human here, but the line gives a model or prompt_version: "
            f"they belong to model judges (annotator_kind model)",
        )
    model = np.where(has["model"], given["model"].to_numpy(dtype=object), judges.model)
    none = np.array(None, dtype=object)  # what a person's line has for model and prompt version
    model = np.where(is_model, model, none)
    prompt = np.where(has["prompt_version"], given["prompt_version"].to_numpy(dtype=object), judges.prompt_version)
    prompt = np.where(is_model, prompt, none)
    first = dict(enumerate(np.unique(codes, return_index=True)[1].tolist()))  # codes run 0..k-1
    changed = _changes(codes, kind, np.arange(len(frame)))[1] if from_file.any() else []
    first_model, changed_model = _changes(codes, model, np.flatnonzero(pd.notna(model)))
    for what, values, starts, rows in (("kind", kind, first, changed), ("model", model, first_model, changed_model)):
        for row in rows:
            start = starts[int(codes[row])]
            problems.add(
                int(lines[row]),
                f"annotator {names[codes[row]]!r} is {what} {values[row]!r} here but "
                f"{values[start]!r} at line {int(lines[start])}",
            )
    latest = _latest_prompts(frame, pd.Series(prompt, index=frame.index, dtype=object))
    out = {}
    for code, row in first.items():
        name, kind_here = str(names[code]), str(kind[row])
        judge_model = model[first_model[code]] if code in first_model else None
        stored_kind, stored_model = known.get(name, (None, None))
        if stored_kind is not None and stored_kind != kind_here:
            why = (
                "annotator_kind on this line"
                if from_file[row]
                else f"--annotator-kind {kind_here}"
                if judges.kind
                else "no annotator_kind column: people by default"
            )
            problems.add(
                int(lines[row]),
                f"annotator {name!r} is a {stored_kind} annotator in the store; it cannot "
                f"be imported as {kind_here} ({why})",
            )
        elif judge_model is not None and stored_model is not None and judge_model != stored_model:
            problems.add(
                int(lines[row]), f"model judge {name!r} is model {stored_model!r} in the store, not {judge_model!r}"
            )
        is_judge = kind_here == "model"
        out[name] = {
            "kind": kind_here,
            "model_name": (judge_model or stored_model or name) if is_judge else None,
            "prompt_version": latest.get(name) if is_judge else None,
        }
    frame["prompt_version"] = pd.Series(prompt, index=frame.index, dtype=object)
    return out


def _latest_prompts(frame: pd.DataFrame, prompt: pd.Series) -> dict[str, str]:
    """annotator → the prompt version of its latest grade in the file (by time, then line)."""
    keep = prompt.notna().to_numpy()
    if not keep.any():
        return {}
    stamped = pd.DataFrame({"annotator": frame["annotator"], "prompt": prompt, "line": frame["line"]})[keep]
    times = frame["time"][keep] if "time" in frame.columns else None
    stamped["at"] = pd.NaT if times is None else pd.to_datetime(times, utc=True, format="ISO8601", errors="coerce")
    return stamped.sort_values(["at", "line"], kind="stable").groupby("annotator")["prompt"].last().to_dict()


def _ensure_users(
    session: Session, names: dict[str, str], fields: dict[str, dict] | None = None, prompt_version: str | None = None
) -> dict[str, int]:
    """Ids for usernames; unknown ones become accounts without a password (they cannot log in), of the kind,
    model and prompt version `fields` gives (people by default). `prompt_version` (the import's option) becomes
    the current prompt of the model judges that already exist."""
    fields = fields or {}
    users = table_of(User)
    have = _user_ids(session, list(names))
    missing = [n for n in names if n not in have]
    judges = [have[n] for n in have if fields.get(n, {}).get("kind") == "model"]
    if prompt_version is not None and judges:
        session.execute(users.update().where(users.c.id.in_(judges)).values(prompt_version=prompt_version))
    if missing:
        now = utcnow()
        session.execute(
            users.insert(),
            [
                {
                    "username": n,
                    "role": names[n],
                    "password_hash": None,
                    "active": True,
                    "created_at": now,
                    "kind": "human",
                    "model_name": None,
                    "prompt_version": None,
                    **fields.get(n, {}),
                }
                for n in missing
            ],
        )
        have.update(_user_ids(session, missing))
    return have


def _user_ids(session: Session, names: list[str]) -> dict[str, int]:
    """Username → user id of the accounts these names have (an unknown name is left out)."""
    found = session.execute(select(col(User.username), col(User.id)).where(col(User.username).in_(names))).all()
    return {name: id_ for name, id_ in found}


def _ensure_pairs(session: Session, project_id: int, wanted: set[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """Pair ids for (query, fragment); pairs judged elsewhere but never pooled are created with source 'import'."""
    have = {
        (q, f): i
        for i, q, f in session.execute(
            select(PAIRS.c.id, PAIRS.c.query_id, PAIRS.c.fragment_id).where(PAIRS.c.project_id == project_id)
        )
    }
    missing = sorted(wanted - have.keys())
    if missing:
        now = utcnow()
        for chunk in _chunks(missing):
            session.execute(
                PAIRS.insert(),
                [
                    {
                        "project_id": project_id,
                        "query_id": q,
                        "fragment_id": f,
                        "sources": [IMPORTED],
                        "best_rank": None,
                        "created_at": now,
                    }
                    for q, f in chunk
                ],
            )
        have = {
            (q, f): i
            for i, q, f in session.execute(
                select(PAIRS.c.id, PAIRS.c.query_id, PAIRS.c.fragment_id).where(PAIRS.c.project_id == project_id)
            )
        }
    return have


def import_judgments(
    engine: Engine,
    project: str,
    path: str | Path,
    progress: bool = False,
    *,
    actor: Actor,
    judges: Judges = Judges(),
    source: JudgmentsSource = JudgmentsSource(),
) -> ImportReport:
    """Existing judgments (flat records, a judgments export, or a release's JSONL/CSV) as each annotator's
    current judgment, with history; a release line's adjudication is kept when it names an active lead.
    `judges` says whether the file's annotators are people or model judges (e.g. an LLM assessor's output)."""
    proj = _project(engine, project, path, actor)
    project_id = pk(proj)
    with session_scope(engine) as session:
        queries = _ids_by_external_id(session, Query, project_id)
        # a text-less fragment is refused too
        fragments = _ids_by_external_id(session, Fragment, project_id, readable_only=source.require_texts)
    judged, adjudications, people, stamp, textless = _parse_judgments(
        engine, path, proj, queries, fragments, progress, judges, source
    )
    report = ImportReport(
        kind="judgments",
        path=str(path),
        records=len(judged),
        guideline=stamp,
        format="qrels" if source.annotator is not None else "judgments",
    )
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        if textless:
            _fill_textless(session, project_id, (judged, adjudications), textless)
            report.without_text = textless_report(str(path), len(textless), textless)
        names = dict.fromkeys(judged["annotator"].tolist(), "annotator")
        users = _ensure_users(session, names, people, judges.prompt_version) if names else {}
        users.update(_user_ids(session, adjudications["by"].unique().tolist()))
        wanted = set(zip(judged["query"].tolist(), judged["fragment"].tolist(), strict=True))
        wanted |= set(zip(adjudications["query"].tolist(), adjudications["fragment"].tolist(), strict=True))
        pairs = _ensure_pairs(session, project_id, {(int(q), int(f)) for q, f in wanted})
        write_judgments(session, project_id, judged, users, pairs, report, progress)
        _write_adjudications(session, project_id, adjudications, users, pairs)
    return report


def _fill_textless(session: Session, project_id: int, tables: tuple[pd.DataFrame, ...], textless: dict) -> None:
    """Create the fragments the file names but the project lacked, without a text, in the import's transaction,
    and give the tables' lines that name them their ids (one created meanwhile by another import is reused)."""
    have: dict[str, int] = {}
    for chunk in _chunks(sorted(textless), 500):
        have.update(
            session.execute(
                select(FRAGMENTS.c.external_id, FRAGMENTS.c.id).where(
                    FRAGMENTS.c.project_id == project_id, FRAGMENTS.c.external_id.in_(chunk)
                )
            ).all()
        )
    have.update(create_textless(session, project_id, set(textless) - have.keys()))
    for table in tables:
        missing = table["fragment"].isna()
        if missing.any():
            table.loc[missing, "fragment"] = table.loc[missing, "fragment_id"].map(have)


def _when(text: str | None, now: datetime) -> datetime:
    """A judgment's time from the file (ISO 8601 with offset, checked by the reader), else now."""
    return now if text is None else datetime.fromisoformat(text.strip()).astimezone(UTC)


def write_judgments(
    session: Session,
    project_id: int,
    judged: pd.DataFrame,
    users: dict[str, int],
    pairs: dict[tuple[int, int], int],
    report: ImportReport,
    show: bool,
) -> None:
    """Insert new judgments, update changed ones (revision + 1), count the unchanged; history for each change.
    The one writer of judgments that arrive in bulk: imported files and model judges' grades."""
    stmt = select(
        JUDGMENTS.c.id,
        JUDGMENTS.c.pair_id,
        JUDGMENTS.c.user_id,
        JUDGMENTS.c.grade,
        JUDGMENTS.c.note,
        JUDGMENTS.c.cant_judge_reason,
        JUDGMENTS.c.guideline_id,
        JUDGMENTS.c.prompt_version,
    ).where(
        JUDGMENTS.c.project_id == project_id,
        JUDGMENTS.c.user_id.in_(sorted({users[a] for a in judged["annotator"].unique()})),
    )
    if len(judged) <= 500:  # a model judge's batch: read only its pairs' judgments
        stmt = stmt.where(
            JUDGMENTS.c.pair_id.in_(
                sorted({pairs[(int(q), int(f))] for q, f in zip(judged["query"], judged["fragment"], strict=True)})
            )
        )
    existing = {(p, u): (i, g, n, r, gl, pv) for i, p, u, g, n, r, gl, pv in session.execute(stmt)}
    now = utcnow()
    new, changed, history = [], [], []
    columns = {
        name: (judged[name].tolist() if name in judged.columns else [None] * len(judged))
        for name in (
            "query",
            "fragment",
            "annotator",
            "grade",
            "note",
            "cant_judge_reason",
            "guideline_id",
            "time",
            "prompt_version",
        )
    }
    given = judged["guideline_given"].tolist() if "guideline_given" in judged.columns else [True] * len(judged)
    for (q, f, annotator, grade, note, reason, guideline, when, prompt), named in zip(
        zip(*columns.values(), strict=True), given, strict=True
    ):
        grade = None if grade is pd.NA else int(grade)
        guideline = None if guideline is None or pd.isna(guideline) else int(guideline)
        note, reason = note or None, reason or None
        pair_id, user_id = pairs[(int(q), int(f))], users[annotator]
        old = existing.get((pair_id, user_id))
        if old is not None and not named:  # the version was stamped, not read: an equal judgment keeps its own
            guideline = old[4] if old[1:4] + old[5:] == (grade, note, reason, prompt) else guideline
        if old is not None and old[1:] == (grade, note, reason, guideline, prompt):
            report.unchanged += 1
            continue
        at = _when(when, now)
        values = {
            "grade": grade,
            "note": note,
            "cant_judge_reason": reason,
            "guideline_id": guideline,
            "prompt_version": prompt,
            "updated_at": at,
        }
        if old is None:
            new.append(
                {
                    "project_id": project_id,
                    "pair_id": pair_id,
                    "user_id": user_id,
                    "seconds_spent": None,
                    "revision": 1,
                    "created_at": at,
                    **values,
                }
            )
        else:
            changed.append({"_id": old[0], **values})
        history.append(
            {
                "project_id": project_id,
                "pair_id": pair_id,
                "user_id": user_id,
                "action": "import",
                "old_grade": old[1] if old else None,
                "new_grade": grade,
                "old_note": old[2] if old else None,
                "new_note": note,
                "old_cant_judge_reason": old[3] if old else None,
                "new_cant_judge_reason": reason,
                "guideline_id": guideline,
                "prompt_version": prompt,
                "changed_by_id": user_id,
                "changed_at": now,
            }
        )
    for chunk in _progress(list(_chunks(new)), show, "writing judgments"):
        session.execute(JUDGMENTS.insert(), chunk)
    if changed:
        session.execute(
            JUDGMENTS.update()
            .where(JUDGMENTS.c.id == bindparam("_id"))
            .values(
                grade=bindparam("grade"),
                note=bindparam("note"),
                cant_judge_reason=bindparam("cant_judge_reason"),
                guideline_id=bindparam("guideline_id"),
                prompt_version=bindparam("prompt_version"),
                revision=JUDGMENTS.c.revision + 1,
                updated_at=bindparam("updated_at"),
            ),
            changed,
        )
    for chunk in _chunks(history):
        session.execute(JUDGMENT_HISTORY.insert(), chunk)
    done = sorted({(r["pair_id"], r["user_id"]) for r in history})
    for chunk in _chunks(done, 500):
        session.execute(
            ASSIGNMENTS.update()
            .where(tuple_(ASSIGNMENTS.c.pair_id, ASSIGNMENTS.c.user_id).in_(chunk))
            .values(done=True)
        )
    report.created, report.updated = len(new), len(changed)


def _write_adjudications(
    session: Session,
    project_id: int,
    adjudications: pd.DataFrame,
    users: dict[str, int],
    pairs: dict[tuple[int, int], int],
) -> None:
    """Append a release line's adjudication unless the one in force already says the same."""
    if adjudications.empty:
        return
    current = {
        (q, f): (g, r, b) for q, f, g, r, b in project_adjudications(session, project_id).itertuples(index=False)
    }
    now = utcnow()
    rows = []
    for qext, fext, q, f, grade, reason, lead in adjudications[
        ["query_id", "fragment_id", "query", "fragment", "grade", "reason", "by"]
    ].itertuples(index=False):
        if current.get((qext, fext)) != (int(grade), reason, lead):
            rows.append(
                {
                    "project_id": project_id,
                    "pair_id": pairs[(int(q), int(f))],
                    "grade": int(grade),
                    "reason": reason,
                    "user_id": users[lead],
                    "created_at": now,
                }
            )
    record_decisions(session, rows)


def import_decisions(
    engine: Engine, project: str, path: str | Path, progress: bool = False, *, actor: Actor, reason: str | None = None
) -> DecisionsReport:
    """A file of a lead's decisions (db.adjudication.import_adjudications), as an import kind."""
    return import_adjudications(engine, project, path, actor=actor, reason=reason)


# The import kinds, in the order the CLI and the Project page offer them: kind → importer.
IMPORT_KINDS: dict[str, Callable[..., ImportReport | DecisionsReport]] = {
    "queries": import_queries,
    "fragments": import_fragments,
    "run": import_run,
    "judgments": import_judgments,
    "adjudications": import_decisions,
}

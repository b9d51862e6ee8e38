"""Import queries, fragments, runs and judgments: validate the whole file, then write all of it or nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
from sqlalchemy import bindparam, select, tuple_
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from tqdm import tqdm

from db.engine import session_scope
from db.models import (
    Adjudication,
    Assignment,
    Fragment,
    Judgment,
    JudgmentHistory,
    Pair,
    Project,
    Query,
    Run,
    RunEntry,
    User,
    utcnow,
)
from db.permissions import Actor, require_lead
from db.projects import ProjectNotFound, project_row
from eval_core.errors import InputError
from eval_core.formats import ranked
from eval_core.judgments import parse_grade
from eval_core.records import iter_lines, iter_records, open_binary

MAX_ID_CHARS = 500
MAX_TEXT_CHARS = 1_000_000
MAX_PROBLEMS = 100
CHUNK = 20_000
Q, F, P, J, H, A = (m.__table__ for m in (Query, Fragment, Pair, Judgment, JudgmentHistory, Assignment))


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

    def to_dict(self) -> dict:
        """JSON-able form for the CLI."""
        return {"kind": self.kind, "path": self.path, "records": self.records, "created": self.created,
                "updated": self.updated, "unchanged": self.unchanged, "rejected": self.rejected}


class ImportRejected(InputError):
    """The file failed validation and the database is unchanged; `report.rejected` names every bad line."""

    def __init__(self, problems: list[InputError], total: int, report: ImportReport) -> None:
        first = problems[0]
        more = f" (and {total - 1} more problem(s))" if total > 1 else ""
        super().__init__(first.path, first.line, first.problem + more)
        self.report = report


class _Problems:
    """Collects every problem of a file (the first MAX_PROBLEMS kept) so one run reports them all."""

    def __init__(self, path: str | Path, kind: str) -> None:
        self.path, self.kind = str(path), kind
        self.items: list[InputError] = []
        self.total = 0

    def add(self, line: int | None, problem: str) -> None:
        self.total += 1
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(InputError(self.path, line, problem))

    def check(self) -> None:
        """Raise ImportRejected when anything was wrong."""
        if self.total:
            report = ImportReport(rejected=[str(e) for e in self.items], kind=self.kind, path=self.path)
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


def _text(rec: dict, names: tuple[str, ...], what: str, limit: int, required: bool = True) -> str | None:
    """The first present field of `names` as a stripped string, checked for emptiness and size."""
    for name in names:
        if name in rec and rec[name] is not None:
            value = rec[name]
            if isinstance(value, dict | list | bool):
                raise ValueError(f"{what} must be a string, got {type(value).__name__}")
            text = str(value).strip()
            if len(text) > limit:
                raise ValueError(f"{what} is {len(text)} characters; the store accepts at most {limit}")
            if text:
                return text
            break
    if required:
        raise ValueError(f"{what} is missing or empty (field {' or '.join(names)})")
    return None


def content_hash(text: str) -> str:
    """sha256 of the whitespace-normalised text: pooling treats equal hashes as the same fragment."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def _progress(items: Iterable, show: bool, desc: str, total: int | None = None) -> Iterable:
    return tqdm(items, desc=desc, total=total, unit=" rec", disable=not show, leave=False)


def _chunks(rows: list, size: int = CHUNK) -> Iterator[list]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


# --- queries and fragments -------------------------------------------------------------------------------------

def _parse_queries(path: str | Path, show: bool) -> dict[str, dict]:
    problems = _Problems(path, "queries")
    out: dict[str, dict] = {}
    first: dict[str, int] = {}
    for lineno, rec in _progress(iter_records(path), show, "reading queries"):
        try:
            ext = _text(rec, ("id", "_id", "query_id"), "query id", MAX_ID_CHARS)
            text = _text(rec, ("text", "query"), "query text", MAX_TEXT_CHARS)
            category = _text(rec, ("category",), "category", 200, required=False)
            if category is None and isinstance(rec.get("metadata"), dict):
                category = _text(rec["metadata"], ("category",), "category", 200, required=False)
        except ValueError as exc:
            problems.add(lineno, str(exc))
            continue
        if ext in first:
            problems.add(lineno, f"duplicate query id {ext!r} (first at line {first[ext]})")
            continue
        first[ext] = lineno
        out[ext] = {"text": text, "category": category}
    problems.check()
    return out


_FRAGMENT_FIELDS = {"id", "_id", "fragment_id", "text", "title", "doc_id", "metadata"}


def _parse_fragments(path: str | Path, show: bool) -> dict[str, dict]:
    problems = _Problems(path, "fragments")
    out: dict[str, dict] = {}
    first: dict[str, int] = {}
    for lineno, rec in _progress(iter_records(path), show, "reading fragments"):
        try:
            ext = _text(rec, ("id", "_id", "fragment_id"), "fragment id", MAX_ID_CHARS)
            text = _text(rec, ("text",), "fragment text", MAX_TEXT_CHARS)
            title = _text(rec, ("title",), "title", MAX_TEXT_CHARS, required=False)
            doc_id = _text(rec, ("doc_id",), "doc_id", MAX_ID_CHARS, required=False)
        except ValueError as exc:
            problems.add(lineno, str(exc))
            continue
        if ext in first:
            problems.add(lineno, f"duplicate fragment id {ext!r} (first at line {first[ext]})")
            continue
        first[ext] = lineno
        meta = dict(rec["metadata"]) if isinstance(rec.get("metadata"), dict) else {}
        meta.update({k: v for k, v in rec.items() if k not in _FRAGMENT_FIELDS and v not in (None, "")})
        out[ext] = {"text": text, "title": title, "doc_id": doc_id, "meta": meta or None,
                    "content_hash": content_hash(text)}
    problems.check()
    return out


def _upsert_by_external_id(session: Session, table, project_id: int, parsed: dict[str, dict],
                           report: ImportReport, show: bool) -> None:
    """Insert new external ids, update changed ones, count the unchanged — in the caller's transaction."""
    columns = list(next(iter(parsed.values())).keys())
    existing = {row[0]: row[1:] for row in session.execute(
        select(table.c.external_id, table.c.id, *(table.c[c] for c in columns))
        .where(table.c.project_id == project_id))}
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


def import_queries(engine: Engine, project: str, path: str | Path, progress: bool = False, *,
                   actor: Actor) -> ImportReport:
    """Queries from JSONL/CSV (`id`, `text`, optional `category`) or BEIR queries.jsonl (`_id`, `text`)."""
    proj = _project(engine, project, path, actor)
    parsed = _parse_queries(path, progress)
    report = ImportReport(kind="queries", path=str(path), records=len(parsed))
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        _upsert_by_external_id(session, Q, proj.id, parsed, report, progress)  # type: ignore[arg-type]
    return report


def import_fragments(engine: Engine, project: str, path: str | Path, progress: bool = False, *,
                     actor: Actor) -> ImportReport:
    """Fragments from JSONL/CSV (`id`, `text`, optional `doc_id`, `title`, extra fields → metadata) or BEIR
    corpus.jsonl (`_id`, `title`, `text`, `metadata`)."""
    proj = _project(engine, project, path, actor)
    parsed = _parse_fragments(path, progress)
    report = ImportReport(kind="fragments", path=str(path), records=len(parsed))
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        _upsert_by_external_id(session, F, proj.id, parsed, report, progress)  # type: ignore[arg-type]
    return report


# --- runs ------------------------------------------------------------------------------------------------------

def run_name_from_path(path: str | Path) -> str:
    """`runs/bm25.trec.gz` → `bm25.trec`… minus one format suffix: `bm25`."""
    name = Path(path).name
    name = name.removesuffix(".gz")
    stem, dot, suffix = name.rpartition(".")
    return stem if dot and suffix.lower() in {"trec", "txt", "run", "tsv"} else name


def _parse_run(path: str | Path, queries: dict[str, int], show: bool) -> pd.DataFrame:
    """The run as (query_id, doc, score, rank) in trec_eval order: score descending, ties by docid descending.

    A well-formed file goes through pyarrow's columnar CSV reader and vectorised checks; anything it does not
    accept (tabs, comments, a bad line of any kind) is re-read line by line, which names every bad line."""
    frame = _read_run_fast(path, queries)
    if frame is None:
        frame = _read_run_lines(path, queries, show)
    return ranked(frame.rename(columns={"doc": "doc_id"})).rename(columns={"doc_id": "doc"})


def _read_run_fast(path: str | Path, queries: dict[str, int]) -> pd.DataFrame | None:
    """Single-space-separated 6-field lines via pyarrow; None when anything would need a line-numbered error."""
    options = (pacsv.ReadOptions(column_names=["q", "q0", "doc", "rank", "score", "tag"], block_size=1 << 24),
               pacsv.ParseOptions(delimiter=" ", quote_char=False, ignore_empty_lines=True),
               pacsv.ConvertOptions(column_types={"q": pa.string(), "q0": pa.string(), "doc": pa.string(),
                                                  "rank": pa.string(), "score": pa.float64(), "tag": pa.string()}))
    try:
        with open_binary(path) as fh:
            table = pacsv.read_csv(fh, read_options=options[0], parse_options=options[1], convert_options=options[2])
    except (pa.ArrowInvalid, OSError, EOFError, UnicodeDecodeError):
        return None
    if table.num_rows == 0:
        return None
    frame = table.select(["q", "doc", "score"]).to_pandas()
    qids = frame["q"].map(queries)
    if (qids.isna().any() or not np.isfinite(frame["score"].to_numpy()).all()
            or (frame["doc"].str.len() > MAX_ID_CHARS).any() or frame.duplicated(["q", "doc"]).any()):
        return None
    return pd.DataFrame({"query_id": qids.to_numpy(dtype=np.int64), "doc": frame["doc"].to_numpy(dtype=object),
                         "score": frame["score"].to_numpy(dtype=np.float64)})


def _read_run_lines(path: str | Path, queries: dict[str, int], show: bool) -> pd.DataFrame:
    """TREC run lines `qid Q0 docid rank score tag` one by one; every bad line is reported."""
    problems = _Problems(path, "run")
    qids: list[int] = []
    docs: list[str] = []
    scores: list[float] = []
    lines: list[int] = []
    seen: dict[tuple[int, str], int] = {}
    for lineno, line in _progress(iter_lines(path), show, "reading run"):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 6:
            problems.add(lineno, f"expected 6 fields (qid Q0 docid rank score tag), found {len(fields)}")
            continue
        qext, _q0, doc, _rank, score_text, _tag = fields
        qid = queries.get(qext)
        if qid is None:
            problems.add(lineno, f"unknown query id {qext!r} (not imported into this project)")
            continue
        if len(doc) > MAX_ID_CHARS:
            problems.add(lineno, f"document id is {len(doc)} characters; at most {MAX_ID_CHARS}")
            continue
        try:
            score = float(score_text)
        except ValueError:
            problems.add(lineno, f"score {score_text!r} is not a number")
            continue
        if not np.isfinite(score):
            problems.add(lineno, f"score {score_text!r} is not finite")
            continue
        key = (qid, doc)
        if key in seen:
            problems.add(lineno, f"duplicate document {doc!r} for query {qext!r} (first at line {seen[key]})")
            continue
        seen[key] = lineno
        qids.append(qid)
        docs.append(doc)
        scores.append(score)
        lines.append(lineno)
    if not lines and not problems.total:
        problems.add(None, "empty file: no run lines")
    problems.check()
    return pd.DataFrame({"query_id": np.asarray(qids, dtype=np.int64), "doc": np.asarray(docs, dtype=object),
                         "score": np.asarray(scores, dtype=np.float64)})


def _run_hash(frame: pd.DataFrame, qext: dict[int, str]) -> str:
    """sha256 over per-row hashes of (query external id, doc, score) in rank order: equal runs, equal hashes."""
    keyed = pd.DataFrame({"q": frame["query_id"].map(qext), "d": frame["doc"], "s": frame["score"]})
    return hashlib.sha256(pd.util.hash_pandas_object(keyed, index=False).to_numpy().tobytes()).hexdigest()


def import_run(engine: Engine, project: str, path: str | Path, name: str | None = None,
               progress: bool = False, *, actor: Actor) -> ImportReport:
    """A TREC run stored under `name` (default: the file name); re-importing the same name replaces its lines."""
    proj = _project(engine, project, path, actor)
    name = (name or run_name_from_path(path)).strip()
    if not name or len(name) > 200:
        raise InputError(str(path), None, f"run name must be 1-200 characters, got {name!r}")
    with session_scope(engine) as session:
        queries = dict(session.execute(select(Query.external_id, Query.id).where(Query.project_id == proj.id)).all())
    frame = _parse_run(path, queries, progress)
    digest = _run_hash(frame, {v: k for k, v in queries.items()})
    report = ImportReport(kind="run", path=str(path), records=len(frame))
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        old = session.execute(select(Run.id, Run.content_hash)
                              .where(Run.project_id == proj.id, Run.name == name)).first()
        if old is not None and old.content_hash == digest:
            report.unchanged = 1
            return report
        fragments = dict(session.execute(select(Fragment.external_id, Fragment.id)
                                         .where(Fragment.project_id == proj.id)).all())
        if old is None:
            run_id = session.execute(Run.__table__.insert().values(
                project_id=proj.id, name=name, content_hash=digest, n_lines=len(frame), created_at=utcnow())
                .returning(Run.__table__.c.id)).scalar_one()
            report.created = 1
        else:
            run_id = old.id
            session.execute(RunEntry.__table__.delete().where(RunEntry.__table__.c.run_id == run_id))
            session.execute(Run.__table__.update().where(Run.__table__.c.id == run_id)
                            .values(content_hash=digest, n_lines=len(frame), created_at=utcnow()))
            report.updated = 1
        _insert_run_entries(session, run_id, frame, fragments, progress)
    return report


def _insert_run_entries(session: Session, run_id: int, frame: pd.DataFrame, fragments: dict[str, int],
                        show: bool) -> None:
    """Bulk insert on the driver (SQLite executemany of tuples, PostgreSQL COPY) in the caller's transaction;
    documents outside the corpus are kept with a NULL fragment."""
    fids = frame["doc"].map(fragments).astype("Int64").astype(object)
    fids = fids.where(fids.notna(), None)
    rows = list(zip([run_id] * len(frame), frame["query_id"].tolist(), frame["doc"].tolist(), fids.tolist(),
                    frame["rank"].tolist(), frame["score"].tolist(), strict=True))
    columns = "run_id, query_id, doc_external_id, fragment_id, rank, score"
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        cursor = conn.connection.driver_connection.cursor()
        with cursor.copy(f"COPY run_entries ({columns}) FROM STDIN") as copy:
            for row in _progress(rows, show, "writing run"):
                copy.write_row(row)
        return
    sql = f"INSERT INTO run_entries ({columns}) VALUES (?, ?, ?, ?, ?, ?)"
    for chunk in _progress(list(_chunks(rows, 100_000)), show, "writing run"):
        conn.exec_driver_sql(sql, chunk)


# --- judgments -------------------------------------------------------------------------------------------------

@dataclass
class _Judged:
    """One parsed judgment line."""

    line: int
    query: int
    fragment: int
    annotator: str
    grade: int | None
    note: str | None


def _parse_judgments(path: str | Path, scale: tuple[int, int], queries: dict[str, int], fragments: dict[str, int],
                     show: bool) -> tuple[list[_Judged], dict[tuple[int, int], tuple[int, int, str, str]]]:
    """Flat `query_id, fragment_id, annotator, grade[, note]` records or release JSONL lines (`grades` per
    annotator, optional `adjudication` {grade, reason, by}); returns judgments and adjudications by pair."""
    problems = _Problems(path, "judgments")
    out: list[_Judged] = []
    adjudications: dict[tuple[int, int], tuple[int, int, str, str]] = {}
    seen: dict[tuple[int, int, str], int] = {}
    for lineno, rec in _progress(iter_records(path), show, "reading judgments"):
        try:
            qext = _text(rec, ("query_id",), "query_id", MAX_ID_CHARS)
            fext = _text(rec, ("fragment_id", "doc_id"), "fragment_id", MAX_ID_CHARS)
            if "grades" in rec:
                if not isinstance(rec["grades"], dict):
                    raise ValueError("grades must be an object {annotator: grade}")
                items = [(_text({"a": a}, ("a",), "annotator", 200), parse_grade(g, scale), None)
                         for a, g in rec["grades"].items()]
            else:
                if "annotator" not in rec or "grade" not in rec:
                    raise ValueError("missing field(s): annotator and grade (or a release line's grades)")
                items = [(_text(rec, ("annotator",), "annotator", 200), parse_grade(rec["grade"], scale),
                          _text(rec, ("note",), "note", MAX_TEXT_CHARS, required=False))]
            adjudication = rec.get("adjudication")
            if adjudication is not None:
                if not isinstance(adjudication, dict) or adjudication.get("grade") is None:
                    raise ValueError("adjudication must be an object with grade, reason and by")
                adj_grade = parse_grade(adjudication["grade"], scale)
                reason = _text(adjudication, ("reason",), "adjudication reason", MAX_TEXT_CHARS)
                lead = _text(adjudication, ("by",), "adjudication by", 200)
        except ValueError as exc:
            problems.add(lineno, str(exc))
            continue
        qid, fid = queries.get(qext), fragments.get(fext)
        if qid is None:
            problems.add(lineno, f"unknown query id {qext!r} (not imported into this project)")
            continue
        if fid is None:
            problems.add(lineno, f"unknown fragment id {fext!r} (not imported into this project)")
            continue
        for annotator, grade, note in items:
            key = (qid, fid, annotator)
            if key in seen:
                problems.add(lineno, f"duplicate judgment of ({qext}, {fext}) by {annotator} (first at line "
                                     f"{seen[key]})")
                continue
            seen[key] = lineno
            out.append(_Judged(lineno, qid, fid, annotator, grade, note))
        if adjudication is not None:
            adjudications[(qid, fid)] = (lineno, adj_grade, reason, lead)  # type: ignore[assignment]
    problems.check()
    return out, adjudications


def _ensure_users(session: Session, names: dict[str, str]) -> dict[str, int]:
    """Ids for usernames; unknown ones become accounts without a password (they cannot log in)."""
    have = dict(session.execute(select(User.username, User.id).where(User.username.in_(list(names)))).all())
    missing = [n for n in names if n not in have]
    if missing:
        now = utcnow()
        session.execute(User.__table__.insert(), [{"username": n, "role": names[n], "password_hash": None,
                                                   "active": True, "created_at": now} for n in missing])
        have.update(session.execute(select(User.username, User.id).where(User.username.in_(missing))).all())
    return have


def _ensure_pairs(session: Session, project_id: int, wanted: set[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """Pair ids for (query, fragment); pairs judged elsewhere but never pooled are created with source 'import'."""
    have = {(q, f): i for i, q, f in session.execute(select(P.c.id, P.c.query_id, P.c.fragment_id)
                                                     .where(P.c.project_id == project_id))}
    missing = sorted(wanted - have.keys())
    if missing:
        now = utcnow()
        for chunk in _chunks(missing):
            session.execute(P.insert(), [{"project_id": project_id, "query_id": q, "fragment_id": f,
                                          "sources": ["import"], "best_rank": None, "created_at": now}
                                         for q, f in chunk])
        have = {(q, f): i for i, q, f in session.execute(select(P.c.id, P.c.query_id, P.c.fragment_id)
                                                         .where(P.c.project_id == project_id))}
    return have


def import_judgments(engine: Engine, project: str, path: str | Path, progress: bool = False, *,
                     actor: Actor) -> ImportReport:
    """Existing judgments (flat records or a release JSONL) as each annotator's current judgment, with history."""
    proj = _project(engine, project, path, actor)
    with session_scope(engine) as session:
        queries = dict(session.execute(select(Query.external_id, Query.id).where(Query.project_id == proj.id)).all())
        fragments = dict(session.execute(select(Fragment.external_id, Fragment.id)
                                         .where(Fragment.project_id == proj.id)).all())
    judged, adjudications = _parse_judgments(path, (proj.scale_min, proj.scale_max), queries, fragments, progress)
    report = ImportReport(kind="judgments", path=str(path), records=len(judged))
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        roles = {j.annotator: "annotator" for j in judged}
        roles.update({lead: "lead" for _, _, _, lead in adjudications.values() if lead not in roles})
        users = _ensure_users(session, roles) if roles else {}
        pairs = _ensure_pairs(session, proj.id, {(j.query, j.fragment) for j in judged} | set(adjudications))
        _write_judgments(session, proj.id, judged, users, pairs, report, progress)
        _write_adjudications(session, proj.id, adjudications, users, pairs)
    return report


def _write_judgments(session: Session, project_id: int, judged: list[_Judged], users: dict[str, int],
                     pairs: dict[tuple[int, int], int], report: ImportReport, show: bool) -> None:
    existing = {(p, u): (i, g, n) for i, p, u, g, n in session.execute(
        select(J.c.id, J.c.pair_id, J.c.user_id, J.c.grade, J.c.note).where(J.c.project_id == project_id))}
    now = utcnow()
    new, changed, history = [], [], []
    for j in judged:
        pair_id, user_id = pairs[(j.query, j.fragment)], users[j.annotator]
        old = existing.get((pair_id, user_id))
        if old is not None and (old[1], old[2]) == (j.grade, j.note):
            report.unchanged += 1
            continue
        if old is None:
            new.append({"project_id": project_id, "pair_id": pair_id, "user_id": user_id, "grade": j.grade,
                        "note": j.note, "cant_judge_reason": None, "guideline_id": None, "seconds_spent": None,
                        "revision": 1, "created_at": now, "updated_at": now})
        else:
            changed.append({"_id": old[0], "grade": j.grade, "note": j.note, "updated_at": now})
        history.append({"project_id": project_id, "pair_id": pair_id, "user_id": user_id, "action": "import",
                        "old_grade": old[1] if old else None, "new_grade": j.grade,
                        "old_note": old[2] if old else None, "new_note": j.note, "old_cant_judge_reason": None,
                        "new_cant_judge_reason": None, "guideline_id": None, "changed_by_id": user_id,
                        "changed_at": now})
    for chunk in _progress(list(_chunks(new)), show, "writing judgments"):
        session.execute(J.insert(), chunk)
    if changed:
        session.execute(J.update().where(J.c.id == bindparam("_id"))
                        .values(grade=bindparam("grade"), note=bindparam("note"), cant_judge_reason=None,
                                revision=J.c.revision + 1, updated_at=bindparam("updated_at")), changed)
    for chunk in _chunks(history):
        session.execute(H.insert(), chunk)
    done = sorted({(r["pair_id"], r["user_id"]) for r in history})
    for chunk in _chunks(done, 500):
        session.execute(A.update().where(tuple_(A.c.pair_id, A.c.user_id).in_(chunk)).values(done=True))
    report.created, report.updated = len(new), len(changed)


def _write_adjudications(session: Session, project_id: int, adjudications: dict, users: dict[str, int],
                         pairs: dict[tuple[int, int], int]) -> None:
    """Append a release line's adjudication unless the one in force already says the same."""
    if not adjudications:
        return
    table = Adjudication.__table__
    current: dict[int, tuple[int, str, int]] = {}
    for pair_id, grade, reason, user_id in session.execute(
            select(table.c.pair_id, table.c.grade, table.c.reason, table.c.user_id)
            .where(table.c.project_id == project_id).order_by(table.c.created_at, table.c.id)):
        current[pair_id] = (grade, reason, user_id)
    now = utcnow()
    rows = []
    for key, (_line, grade, reason, lead) in adjudications.items():
        pair_id = pairs[key]
        if current.get(pair_id) != (grade, reason, users[lead]):
            rows.append({"project_id": project_id, "pair_id": pair_id, "grade": grade, "reason": reason,
                         "user_id": users[lead], "created_at": now})
    if rows:
        session.execute(table.insert(), rows)


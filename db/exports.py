"""A project's files before any release: every current judgment (what agreement, consensus and import read), a
stored run as a TREC run (what eval and import run read), the lead's decisions (what consensus applies), the
pairs and the assignments (what a script grades or checks)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
from sqlalchemy import and_, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from sqlmodel import col

from db.projects import project_row, project_scale
from db.store.engine import session_scope
from db.store.frames import frame_of, project_adjudications, project_judgments
from db.store.models import Assignment, Fragment, Judgment, Pair, Query, Run, RunEntry, User, pk
from eval_core.io.judgments import ADJUDICATION_COLUMNS, render_judgments
from eval_core.io.spreadsheet import escape_cell
from eval_core.io.writers import write_atomically, write_run
from eval_core.vocab import AnnotatorKind

ADJUDICATION_FORMATS = ("jsonl", "csv")


def export_judgments(
    engine: Engine, project: str, fmt: str, out: str | Path, guideline_version: int | None = None
) -> int:
    """Write the project's current judgments (optionally only those made under one guideline version) to `out`
    as JSONL or CSV, all or nothing; returns how many were written. Each line says who judged: the annotator's
    kind and, for a model judge, its model and the prompt version behind the grade, so an import elsewhere
    keeps model judges apart from people; and the project's scale, so agreement and consensus read the grades
    on it and an import into a project on another scale is refused."""
    with session_scope(engine) as session:
        row = project_row(session, project)
        project_id, scale = pk(row), project_scale(row)
        frame = project_judgments(session, project_id, times=True).rename(columns={"updated_at": "time"})
        frame = _with_model_fields(session, project_id, frame)
    if guideline_version is not None:
        frame = frame[frame["guideline"] == str(guideline_version)]
    write_atomically(Path(out), render_judgments(frame, fmt, scale))
    return len(frame)


def _with_model_fields(session: Session, project_id: int, frame: pd.DataFrame) -> pd.DataFrame:
    """The judgments frame plus `model` (the judge's model name) and `prompt_version` (the one stamped on the
    grade), None on people's lines; read in the frame's transaction, column-wise (a model may grade them all)."""
    models = dict(
        session.execute(
            select(col(User.username), col(User.model_name)).where(col(User.kind) == AnnotatorKind.MODEL)
        ).all()
    )
    stamped = frame_of(
        session,
        select(col(Judgment.pair_id), col(User.username), col(Judgment.prompt_version))
        .join(User, col(User.id) == Judgment.user_id)
        .where(
            col(Judgment.project_id) == project_id,
            col(User.kind) == AnnotatorKind.MODEL,
            col(Judgment.prompt_version).is_not(None),
        ),
        ["pair_id", "annotator", "prompt_version"],
    )
    is_model = (frame["annotator_kind"] == AnnotatorKind.MODEL).to_numpy()
    model = frame["annotator"].map(models).astype(object)
    where = (
        pd.MultiIndex.from_frame(stamped[["pair_id", "annotator"]]).get_indexer(
            pd.MultiIndex.from_arrays([frame["pair_id"], frame["annotator"]])
        )
        if len(stamped)
        else None
    )
    prompt = (
        pd.Series(None, index=frame.index, dtype=object)
        if where is None
        else pd.Series(stamped["prompt_version"].to_numpy(dtype=object)[where], index=frame.index, dtype=object).where(
            where >= 0, None
        )
    )
    return frame.assign(model=model.where(is_model & model.notna(), None), prompt_version=prompt.where(is_model, None))


class RunNotFound(LookupError):
    """No stored run of that name in the project; says which runs there are."""


def export_run(engine: Engine, project: str, name: str, out: str | Path) -> int:
    """Write a stored run as a TREC run (`qid Q0 docid rank score tag`, ranked in trec_eval order, the tag its
    name with whitespace made `_`), all or nothing; returns the lines written."""
    with session_scope(engine) as session:
        project_id = pk(project_row(session, project))
        run_id = session.execute(
            select(col(Run.id)).where(col(Run.project_id) == project_id, col(Run.name) == name)
        ).scalar()
        if run_id is None:
            names = sorted(session.execute(select(col(Run.name)).where(col(Run.project_id) == project_id)).scalars())
            raise RunNotFound(f"no run named {name!r} in project {project!r} (runs: {', '.join(names) or 'none'})")
        frame = frame_of(
            session,
            select(col(Query.external_id), col(RunEntry.doc_external_id), col(RunEntry.score))
            .join(Query, col(Query.id) == RunEntry.query_id)
            .where(col(RunEntry.run_id) == run_id),
            ["query_id", "doc_id", "score"],
        )
    write_run(frame, out, tag=re.sub(r"\s+", "_", name))
    return len(frame)


def render_adjudications(frame: pd.DataFrame, fmt: str) -> Iterator[str]:
    """The decisions in force (query_id, fragment_id, grade, reason, by) as JSONL or CSV (cells escaped for
    spreadsheets): what read_adjudications, and so `qrelkit consensus --adjudications`, reads back."""
    if fmt not in ADJUDICATION_FORMATS:
        raise ValueError(f"adjudications format must be one of {', '.join(ADJUDICATION_FORMATS)}, got {fmt!r}")
    rows = frame[ADJUDICATION_COLUMNS].astype(object).itertuples(index=False)
    if fmt == "jsonl":
        for q, f, g, reason, by in rows:
            yield (
                json.dumps(
                    {"query_id": q, "fragment_id": f, "grade": int(g), "reason": reason, "by": by}, ensure_ascii=False
                )
                + "\n"
            )
        return
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(ADJUDICATION_COLUMNS)
    writer.writerows(
        [escape_cell(q), escape_cell(f), int(g), escape_cell(reason), escape_cell(by)] for q, f, g, reason, by in rows
    )
    yield buf.getvalue()


def export_adjudications(engine: Engine, project: str, fmt: str, out: str | Path) -> int:
    """Write the lead's decisions in force with their reasons, all or nothing; returns how many."""
    with session_scope(engine) as session:
        frame = project_adjudications(session, pk(project_row(session, project)))
    write_atomically(Path(out), render_adjudications(frame, fmt))
    return len(frame)


PAIR_COLUMNS = ["query_id", "fragment_id", "query", "title", "text", "sources", "best_rank", "graded_by", "assigned_to"]
ASSIGNMENT_COLUMNS = ["annotator", "query_id", "fragment_id", "position", "done", "rejudge_version", "grade"]


def render_records(rows: list[dict], columns: list[str], fmt: str) -> Iterator[str]:
    """Rows as JSONL (lists stay lists) or CSV (lists joined by `;`, text cells escaped for spreadsheets)."""
    if fmt not in ADJUDICATION_FORMATS:
        raise ValueError(f"format must be one of {', '.join(ADJUDICATION_FORMATS)}, got {fmt!r}")
    if fmt == "jsonl":
        for row in rows:
            yield json.dumps({c: row[c] for c in columns}, ensure_ascii=False) + "\n"
        return
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        cells = [row[c] for c in columns]
        writer.writerow(
            [
                escape_cell(";".join(map(str, v)))
                if isinstance(v, list)
                else escape_cell(v)
                if isinstance(v, str)
                else v
                for v in cells
            ]
        )
        if buf.tell() > 1 << 20:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


def export_pairs(engine: Engine, project: str, fmt: str, out: str | Path) -> int:
    """Write every pair of the project, what a script needs to grade or check it: query and fragment ids and
    texts (title, text; null when the text is not imported), where the pool found it (sources, best rank), the
    people and references who graded it and the people it is assigned to; returns how many. `assign --pairs`
    reads the file back."""
    with session_scope(engine) as session:
        project_id = pk(project_row(session, project))
        graded: dict[int, list[str]] = {}
        for pid, name in session.execute(
            select(col(Judgment.pair_id), col(User.username))
            .join(User, col(User.id) == Judgment.user_id)
            .where(col(Judgment.project_id) == project_id)
            .order_by(col(User.username))
        ):
            graded.setdefault(pid, []).append(name)
        assigned: dict[int, list[str]] = {}
        for pid, name in session.execute(
            select(col(Assignment.pair_id), col(User.username))
            .join(User, col(User.id) == Assignment.user_id)
            .where(col(Assignment.project_id) == project_id)
            .order_by(col(User.username))
        ):
            assigned.setdefault(pid, []).append(name)
        rows = [
            {
                "query_id": q,
                "fragment_id": f,
                "query": qt,
                "title": title,
                "text": text if has_text else None,  # a fragment waiting for its text (db.textless)
                "sources": list(sources or ()),
                "best_rank": rank,
                "graded_by": graded.get(pid, []),
                "assigned_to": assigned.get(pid, []),
            }
            for pid, q, f, qt, title, text, has_text, sources, rank in session.execute(
                select(
                    col(Pair.id),
                    col(Query.external_id),
                    col(Fragment.external_id),
                    col(Query.text),
                    col(Fragment.title),
                    col(Fragment.text),
                    col(Fragment.has_text),
                    col(Pair.sources),
                    col(Pair.best_rank),
                )
                .join(Query, col(Query.id) == Pair.query_id)
                .join(Fragment, col(Fragment.id) == Pair.fragment_id)
                .where(col(Pair.project_id) == project_id)
                .order_by(
                    col(Query.external_id),
                    col(Pair.best_rank).is_(None),
                    col(Pair.best_rank),
                    col(Fragment.external_id),
                )
            )
        ]
    write_atomically(Path(out), render_records(rows, PAIR_COLUMNS, fmt))
    return len(rows)


def export_assignments(engine: Engine, project: str, fmt: str, out: str | Path) -> int:
    """Write every assignment: who holds which pair, in their queue's order, whether it is done, whether it was
    sent back for re-judging (the guideline version), and their current grade (null: none yet, or can't
    judge); returns how many."""
    with session_scope(engine) as session:
        project_id = pk(project_row(session, project))
        rows = [
            {
                "annotator": name,
                "query_id": q,
                "fragment_id": f,
                "position": int(pos),
                "done": bool(done),
                "rejudge_version": version,
                "grade": grade,
            }
            for name, q, f, pos, done, version, grade in session.execute(
                select(
                    col(User.username),
                    col(Query.external_id),
                    col(Fragment.external_id),
                    col(Assignment.position),
                    col(Assignment.done),
                    col(Assignment.rejudge_version),
                    col(Judgment.grade),
                )
                .select_from(Assignment)
                .join(User, col(User.id) == Assignment.user_id)
                .join(Pair, col(Pair.id) == Assignment.pair_id)
                .join(Query, col(Query.id) == Pair.query_id)
                .join(Fragment, col(Fragment.id) == Pair.fragment_id)
                .outerjoin(
                    Judgment,
                    and_(col(Judgment.pair_id) == Assignment.pair_id, col(Judgment.user_id) == Assignment.user_id),
                )
                .where(col(Assignment.project_id) == project_id)
                .order_by(col(User.username), col(Assignment.position))
            )
        ]
    write_atomically(Path(out), render_records(rows, ASSIGNMENT_COLUMNS, fmt))
    return len(rows)

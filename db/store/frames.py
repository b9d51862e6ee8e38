"""The store's contents as the pandas frames eval_core works on (judgments, adjudications, qrels, texts)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import Select, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from sqlmodel import col

from db.projects import project_row, project_scale
from db.store.engine import session_scope
from db.store.models import Adjudication, Fragment, Guideline, Judgment, JudgmentHistory, Pair, Query, User, pk
from eval_core.errors import NotFound

JUDGMENT_COLUMNS = [
    "query_id",
    "fragment_id",
    "annotator",
    "grade",
    "note",
    "guideline",
    "category",
    "cant_judge_reason",
    "pair_id",
    "annotator_kind",
]


def judgments_frame(engine: Engine, project: str, *, times: bool = False) -> pd.DataFrame:
    """Every current judgment of the project (see project_judgments)."""
    with session_scope(engine) as session:
        return project_judgments(session, pk(project_row(session, project)), times=times)


def project_judgments(session: Session, project_id: int, *, times: bool = False) -> pd.DataFrame:
    """Every current judgment in the judgments contract (grade Int64, NA = can't judge), sorted by query,
    fragment, annotator, plus the guideline version it was made under (str, None when unknown, e.g. an import
    without one), the query category, the note and can't-judge reason, the store's pair_id (so the app can
    open adjudication.pair_detail), the annotator's kind ('human' or 'model', eval_core.io.judgments.ANNOTATOR_KINDS),
    and with `times=True` when it was last changed (`updated_at`, aware UTC;
    reading and parsing it costs ~2 s at 1M judgments, so only the judgments export asks). The one builder:
    the lead pages, releases and the judgments export all read it.

    Judgments are read as bare ids and mapped to names column-wise through the (much smaller) pair, user and
    guideline tables: joining and sorting strings in the database took ~20 s at 1M judgments."""
    columns: list[Any] = [
        Judgment.pair_id,
        Judgment.user_id,
        Judgment.grade,
        Judgment.note,
        Judgment.guideline_id,
        Judgment.cant_judge_reason,
        *([Judgment.updated_at] if times else []),
    ]
    judged = frame_of(session, select(*columns).where(col(Judgment.project_id) == project_id))
    pairs = frame_of(
        session,
        select(col(Pair.id), col(Query.external_id), col(Fragment.external_id), col(Query.category))
        .select_from(Pair)
        .join(Query, col(Query.id) == col(Pair.query_id))
        .join(Fragment, col(Fragment.id) == col(Pair.fragment_id))
        .where(col(Pair.project_id) == project_id),
        ["pair_id", "query_id", "fragment_id", "category"],
    ).set_index("pair_id")
    conn = session.connection()
    users, kinds = {}, {}
    for uid, name, kind in conn.execute(select(col(User.id), col(User.username), col(User.kind))).fetchall():
        users[uid], kinds[uid] = name, kind
    versions = {
        gid: str(v)
        for gid, v in conn.execute(
            select(col(Guideline.id), col(Guideline.version)).where(col(Guideline.project_id) == project_id)
        ).fetchall()
    }
    where = pairs.index.get_indexer(judged["pair_id"])
    guideline = pd.array(judged["guideline_id"], dtype="Float64").astype("Int64")  # NULLs arrive as None/NaN
    frame = pd.DataFrame(
        {
            "query_id": pairs["query_id"].take(where).reset_index(drop=True),
            "fragment_id": pairs["fragment_id"].take(where).reset_index(drop=True),
            "annotator": judged["user_id"].map(users),
            "grade": pd.array(judged["grade"], dtype="Float64").astype("Int64"),
            "note": _texts(judged["note"]),
            "guideline": pd.Series(guideline.map(versions, na_action="ignore"), dtype=object).where(
                ~guideline.isna(), None
            ),
            "category": _texts(pairs["category"].take(where)),
            "cant_judge_reason": _texts(judged["cant_judge_reason"]),
            "pair_id": judged["pair_id"].to_numpy(dtype="int64"),
            "annotator_kind": judged["user_id"].map(kinds).to_numpy(dtype=object).astype(str),
        },
        columns=JUDGMENT_COLUMNS,
    )
    if times:
        frame["updated_at"] = pd.to_datetime(judged["updated_at"], utc=True, format="ISO8601")
    return frame.sort_values(["query_id", "fragment_id", "annotator"], kind="stable", ignore_index=True)


def _texts(values: pd.Series) -> pd.Series:
    """Optional text as object with None for missing (drivers hand back None or NaN)."""
    out = pd.Series(values, dtype=object).reset_index(drop=True)
    return out.where(out.notna(), None)


def frame_of(session: Session, stmt: Select, columns: list[str] | None = None) -> pd.DataFrame:
    """A Core select of plain int / float / str columns as a DataFrame, straight from the driver's tuples:
    building a SQLAlchemy Row per record costs seconds at a million rows, and pandas probing each Row for
    `_fields` costs an exception per row on top. Columns default to the select's labels."""
    result = session.connection().execute(stmt)
    names = columns or list(result.keys())
    rows = result.cursor.fetchall()
    result.close()
    return (
        pd.DataFrame.from_records(rows, columns=names, nrows=len(rows))
        if rows
        else pd.DataFrame({c: [] for c in names})
    )


def judgments_fingerprint(engine: Engine, project: str) -> tuple[int, int]:
    """A cache key that changes whenever a judgment of the project is added, changed or undone, or a pair is
    adjudicated: every such change appends a row, so the newest history and adjudication ids of the project
    (two probes on (project_id, id) indexes, no rows loaded)."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        conn = session.connection()
        history = conn.execute(
            select(func.max(col(JudgmentHistory.id))).where(col(JudgmentHistory.project_id) == project_id)
        ).scalar_one()
        adjudication = conn.execute(
            select(func.max(col(Adjudication.id))).where(col(Adjudication.project_id) == project_id)
        ).scalar_one()
    return (history or 0, adjudication or 0)


def pair_id(engine: Engine, project: str, query_id: str, fragment_id: str) -> int:
    """The store's id of the pair (query external id, fragment external id), e.g. to adjudicate a disputed pair."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        found = session.execute(
            select(col(Pair.id))
            .join(Query, col(Query.id) == col(Pair.query_id))
            .join(Fragment, col(Fragment.id) == col(Pair.fragment_id))
            .where(
                col(Pair.project_id) == project_id,
                col(Query.external_id) == query_id,
                col(Fragment.external_id) == fragment_id,
            )
        ).scalar_one_or_none()
    if found is None:
        raise NotFound(f"no pair ({query_id}, {fragment_id}) in project {project!r}")
    return int(found)


def adjudications_frame(engine: Engine, project: str) -> pd.DataFrame:
    """The adjudication in force per pair (see project_adjudications)."""
    with session_scope(engine) as session:
        return project_adjudications(session, pk(project_row(session, project)))


def project_adjudications(session: Session, project_id: int) -> pd.DataFrame:
    """The adjudication in force per pair (the latest): query_id, fragment_id, grade, reason, by — the one
    adjudications query (pages, live qrels, releases)."""
    rows = session.execute(
        select(
            col(Query.external_id),
            col(Fragment.external_id),
            col(Adjudication.grade),
            col(Adjudication.reason),
            col(User.username),
        )
        .select_from(Adjudication)
        .join(Pair, col(Pair.id) == col(Adjudication.pair_id))
        .join(Query, col(Query.id) == col(Pair.query_id))
        .join(Fragment, col(Fragment.id) == col(Pair.fragment_id))
        .join(User, col(User.id) == col(Adjudication.user_id))
        .where(col(Adjudication.project_id) == project_id)
        .order_by(col(Adjudication.created_at), col(Adjudication.id))
    ).all()
    frame = pd.DataFrame(rows, columns=["query_id", "fragment_id", "grade", "reason", "by"])
    frame = frame.drop_duplicates(["query_id", "fragment_id"], keep="last")
    return frame.sort_values(["query_id", "fragment_id"]).reset_index(drop=True).astype({"grade": "int64"})


def qrels_frame(engine: Engine, project: str, rule: str = "median", min_grades: int = 1) -> pd.DataFrame:
    """Live qrels (query_id, doc_id, grade) from the current judgments by a consensus rule, adjudications
    first — what the next release would contain; evaluate against a release for anything you publish."""
    from eval_core.consensus import consensus  # with SciPy's sparse matrices: only where labels are built

    with session_scope(engine) as session:
        proj = project_row(session, project)
        scale = project_scale(proj)
    labels = consensus(
        judgments_frame(engine, project)[["query_id", "fragment_id", "annotator", "grade"]],
        rule=rule,
        adjudications=adjudications_frame(engine, project),
        min_grades=min_grades,
        scale=scale,
    )
    out = labels.rename(columns={"fragment_id": "doc_id"})[["query_id", "doc_id", "grade"]]
    return out.astype({"query_id": str, "doc_id": str, "grade": "int64"}).reset_index(drop=True)


def queries_frame(engine: Engine, project: str) -> pd.DataFrame:
    """query_id, text, category of every query (for per-category reports and the app)."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        rows = session.execute(
            select(col(Query.external_id), col(Query.text), col(Query.category))
            .where(col(Query.project_id) == project_id)
            .order_by(Query.external_id)
        ).all()
    return pd.DataFrame(rows, columns=["query_id", "text", "category"])


def fragments_text(engine: Engine, project: str) -> dict[str, str]:
    """Fragment external id → text (e.g. for a retriever under evaluation); a fragment waiting for its text
    (db.textless) is left out, as one never imported is."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        return dict(
            session.execute(
                select(col(Fragment.external_id), col(Fragment.text)).where(
                    col(Fragment.project_id) == project_id, col(Fragment.has_text)
                )
            ).all()
        )

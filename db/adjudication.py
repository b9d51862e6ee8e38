"""Lead-only views and decisions: every grade of a pair, the final grade, and pairs due for re-judging."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from db.accounts.permissions import Actor, require_lead
from db.judging import check_grade
from db.projects import project_row
from db.store.engine import session_scope
from db.store.models import (
    Adjudication,
    Fragment,
    Guideline,
    Judgment,
    JudgmentHistory,
    Pair,
    Project,
    Query,
    User,
    utcnow,
)
from eval_core.errors import NotFound, Refused


@dataclass(frozen=True)
class AdjudicationInfo:
    """A recorded decision."""

    id: int
    pair_id: int
    grade: int
    reason: str
    lead: str
    created_at: datetime


def pair_detail(engine: Engine, project: str, pair_id: int, username: str | None = None) -> dict:
    """Everything about a pair for a lead: query, fragment, every annotator's grade and note, adjudications,
    and the full change history. Pass `username` to have the lead role checked here too."""
    with session_scope(engine) as session:
        if username is not None:
            require_lead(session, username)
        project_id = project_row(session, project).id
        head = session.execute(
            select(Query.external_id, Query.text, Query.category, Fragment.external_id, Fragment.title,
                   Fragment.text, Fragment.doc_id, Pair.sources, Pair.best_rank)
            .select_from(Pair).join(Query, Query.id == Pair.query_id).join(Fragment, Fragment.id == Pair.fragment_id)
            .where(Pair.id == pair_id, Pair.project_id == project_id)).first()
        if head is None:
            raise NotFound(f"no pair with id {pair_id} in project {project!r}")
        judgments = session.execute(
            select(User.username, Judgment.grade, Judgment.note, Judgment.cant_judge_reason, Guideline.version,
                   Judgment.seconds_spent, Judgment.revision, Judgment.updated_at)
            .select_from(Judgment).join(User, User.id == Judgment.user_id)
            .outerjoin(Guideline, Guideline.id == Judgment.guideline_id)
            .where(Judgment.pair_id == pair_id).order_by(User.username)).all()
        adjudications = session.execute(
            select(Adjudication.grade, Adjudication.reason, User.username, Adjudication.created_at)
            .join(User, User.id == Adjudication.user_id).where(Adjudication.pair_id == pair_id)
            .order_by(Adjudication.created_at, Adjudication.id)).all()
        history = session.execute(
            select(JudgmentHistory.action, User.username, JudgmentHistory.old_grade, JudgmentHistory.new_grade,
                   JudgmentHistory.old_note, JudgmentHistory.new_note, JudgmentHistory.changed_at)
            .join(User, User.id == JudgmentHistory.user_id).where(JudgmentHistory.pair_id == pair_id)
            .order_by(JudgmentHistory.id)).all()
    keys = ("annotator", "grade", "note", "cant_judge_reason", "guideline", "seconds_spent", "revision", "updated_at")
    return {
        "pair_id": pair_id,
        "query": {"id": head[0], "text": head[1], "category": head[2]},
        "fragment": {"id": head[3], "title": head[4], "text": head[5], "doc_id": head[6]},
        "sources": head[7], "best_rank": head[8],
        "judgments": [dict(zip(keys, row, strict=True)) for row in judgments],
        "adjudications": [{"grade": g, "reason": r, "by": b, "at": t} for g, r, b, t in adjudications],
        "adjudication": ({"grade": adjudications[-1][0], "reason": adjudications[-1][1], "by": adjudications[-1][2]}
                         if adjudications else None),
        "history": [dict(zip(("action", "annotator", "old_grade", "new_grade", "old_note", "new_note", "at"), row,
                             strict=True)) for row in history],
    }


def adjudicate(engine: Engine, pair_id: int, grade: int, reason: str, *, actor: Actor) -> AdjudicationInfo:
    """Record a lead's final grade for a pair (append-only: the latest decision is in force). Only an active
    lead, by name — never the anonymous CLI operator, on purpose: the decision records who made it
    (adjudications.user_id, the `by` of a release's line, which an import requires to be an active lead).
    The operator names the lead instead (`qrelkit adjudicate … --user LEAD`, as `release --user`)."""
    reason = (reason or "").strip()
    if not reason:
        raise ValueError("an adjudication needs a reason")
    if not isinstance(actor, str):
        raise Refused("an adjudication records which lead decided, so the CLI operator cannot adjudicate "
                              "anonymously: name an active lead (actor=USERNAME; from the CLI, --user LEAD)")
    with session_scope(engine, write=True) as session:
        lead_id = require_lead(session, actor)
        scale = session.execute(select(Pair.project_id, Project.scale_min, Project.scale_max)
                                .join(Project, Project.id == Pair.project_id).where(Pair.id == pair_id)).first()
        if scale is None:
            raise NotFound(f"no pair with id {pair_id}")
        checked = check_grade(grade, (scale[1], scale[2]), reason)
        assert checked is not None
        row = Adjudication(project_id=scale[0], pair_id=pair_id, grade=checked, reason=reason, user_id=lead_id,
                           created_at=utcnow())
        session.add(row)
        session.flush()
        assert row.id is not None
        return AdjudicationInfo(row.id, pair_id, checked, reason, actor, row.created_at)


def rejudge_queue(engine: Engine, project: str) -> pd.DataFrame:
    """Judgments made under an older guideline version than the current one (imports carry no version and
    are not listed): pair_id, query_id, fragment_id, annotator, grade, guideline, current."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        current = session.execute(select(func.max(Guideline.version))
                                  .where(Guideline.project_id == project_id)).scalar_one()
        rows = [] if current is None else session.execute(
            select(Pair.id, Query.external_id, Fragment.external_id, User.username, Judgment.grade, Guideline.version)
            .select_from(Judgment).join(Pair, Pair.id == Judgment.pair_id).join(Query, Query.id == Pair.query_id)
            .join(Fragment, Fragment.id == Pair.fragment_id).join(User, User.id == Judgment.user_id)
            .join(Guideline, Guideline.id == Judgment.guideline_id)
            .where(Judgment.project_id == project_id, Guideline.version < current)
            .order_by(Query.external_id, Fragment.external_id, User.username)).all()
    frame = pd.DataFrame(rows, columns=["pair_id", "query_id", "fragment_id", "annotator", "grade", "guideline"])
    frame["grade"] = frame["grade"].astype("Float64").astype("Int64")
    frame["current"] = current
    return frame

"""Model judges, the store side: the model-judge account, the pairs and texts a judge reads, the kept answers
(judge_calls) and the writer that stores a batch of grades as the judge's judgments (history kept), through the
same writer as imports. Running a judge (threads, HTTP, progress) is annotator.judge_run's: this module only
reads and writes the store.

Answers that gave a grade are kept in judge_calls by (pair, model, prompt version, inputs), so asking again costs
nothing. No API key ever reaches this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import col

from db.accounts.permissions import Actor, require_lead
from db.accounts.users import check_new_username
from db.imports import ImportReport, write_judgments
from db.projects import ProjectInfo, project_info, project_row
from db.store.engine import session_scope
from db.store.models import Fragment, Guideline, JudgeCall, Judgment, Pair, Query, User, pk, table_of, utcnow
from eval_core.judges.prompt import Answer, fragment_text, input_hash


@dataclass(frozen=True)
class JudgePair:
    """One pair to judge, with what the judge reads and the key its answer is cached under."""

    pair_id: int
    query: int
    fragment: int
    label: str
    query_text: str
    fragment_text: str
    key: str


def model_annotator(
    engine: Engine,
    name: str,
    model: str,
    prompt_version: str | None = None,
    params: Mapping | None = None,
    *,
    actor: Actor,
) -> tuple[int, bool]:
    """(id of model judge `name`, True when this call created it: on first use, without a password), its
    prompt version and parameters brought up to date; a person's name, a name that looks like another
    account's, or a judge of another model, is refused."""
    name, model = (name or "").strip(), (model or "").strip()
    if not name or len(name) > 200 or not model or len(model) > 200:
        raise ValueError(f"a model judge needs a name and a model of 1-200 characters, got {name!r}, {model!r}")
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        user = session.execute(select(User).where(col(User.username) == name)).scalar_one_or_none()
        created = user is None
        if user is None:
            check_new_username(session, name)
            user = User(username=name, role="annotator", kind="model", model_name=model)
        elif user.kind != "model":
            raise ValueError(
                f"{name!r} is a {user.kind} annotator; a model judge needs a name of its own "
                f"(e.g. --annotator {model!r})"
            )
        elif user.model_name != model:
            raise ValueError(
                f"model judge {name!r} is model {user.model_name!r}, not {model!r}; give this model "
                f"another annotator name"
            )
        user.prompt_version, user.model_params = prompt_version, dict(params or {})
        session.add(user)
        session.flush()
        return pk(user), created


def judge_setup(engine: Engine, project: str) -> tuple[ProjectInfo, Guideline]:
    """The project and its guideline in force, or ValueError when it has none (a model judge grades by one)."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        info = project_info(proj)
        in_force = session.execute(
            select(Guideline)
            .where(col(Guideline.project_id) == proj.id)
            .order_by(col(Guideline.version).desc())
            .limit(1)
        ).scalar_one_or_none()
    if in_force is None:
        raise ValueError(
            f"project {project!r} has no guideline; a model judge grades by one (add it with `qrelkit guideline add`)"
        )
    return info, in_force


def judge_pairs(
    engine: Engine, project: str, limit: int | None, labels: Mapping[int, str], guideline: str, params: Mapping
) -> list[JudgePair]:
    """The project's pairs in pool order (the first `limit`), with the texts the judge reads."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        stmt = (
            select(
                col(Pair.id),
                col(Pair.query_id),
                col(Pair.fragment_id),
                col(Query.external_id),
                col(Query.text),
                col(Fragment.external_id),
                col(Fragment.title),
                col(Fragment.text),
            )
            .join(Query, col(Query.id) == col(Pair.query_id))
            .join(Fragment, col(Fragment.id) == col(Pair.fragment_id))
            .where(col(Pair.project_id) == project_id)
            .order_by(col(Pair.id))
        )
        rows = session.execute(stmt.limit(limit) if limit is not None else stmt).all()
    out = []
    for pid, qid, fid, qext, qtext, fext, title, ftext in rows:
        shown = fragment_text(title, ftext)
        out.append(
            JudgePair(
                pid, qid, fid, f"{qext}/{fext}", qtext, shown, input_hash(qtext, shown, guideline, labels, params)
            )
        )
    return out


def kept_answers(engine: Engine, pairs: list[JudgePair], model: str, prompt: str) -> dict[tuple[int, str], JudgeCall]:
    """Kept answers of this model and prompt version for these pairs, by (pair id, input hash)."""
    ids = [p.pair_id for p in pairs]
    found: dict[tuple[int, str], JudgeCall] = {}
    with session_scope(engine) as session:
        for start in range(0, len(ids), 500):
            for call in session.execute(
                select(JudgeCall).where(
                    col(JudgeCall.pair_id).in_(ids[start : start + 500]),
                    col(JudgeCall.model) == model,
                    col(JudgeCall.prompt_version) == prompt,
                )
            ).scalars():
                found[(call.pair_id, call.input_hash)] = call
    return found


def write_grades(
    engine: Engine,
    project_id: int,
    name: str,
    user_id: int,
    guideline_id: int,
    model: str,
    prompt_version: str | None,
    grades: list[tuple[JudgePair, int, Answer | None]],
    actor: Actor,
) -> ImportReport:
    """In one transaction: keep the new answers, and write the grades as the judge's judgments (history kept);
    returns what was created, updated or unchanged."""
    now = utcnow()
    fresh = [
        {
            "project_id": project_id,
            "pair_id": p.pair_id,
            "model": model,
            "prompt_version": prompt_version or "",
            "input_hash": p.key,
            "grade": g,
            "answer": a.text,
            "prompt_tokens": a.prompt_tokens,
            "completion_tokens": a.completion_tokens,
            "created_at": now,
        }
        for p, g, a in grades
        if a is not None
    ]
    frame = pd.DataFrame(
        {
            "query": [p.query for p, _, _ in grades],
            "fragment": [p.fragment for p, _, _ in grades],
            "annotator": name,
            "grade": pd.array([g for _, g, _ in grades], dtype="Int64"),
            "guideline_id": guideline_id,
            "prompt_version": prompt_version,
        }
    )
    written = ImportReport()
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        if fresh:
            insert = postgresql.insert if session.connection().dialect.name == "postgresql" else sqlite.insert
            session.execute(insert(table_of(JudgeCall)).on_conflict_do_nothing(), fresh)
        write_judgments(
            session,
            project_id,
            frame,
            {name: user_id},
            {(p.query, p.fragment): p.pair_id for p, _, _ in grades},
            written,
            show=False,
        )
    return written


@dataclass(frozen=True)
class ModelJudgeInfo:
    """A model judge as the app lists it: who, which model, prompt and parameters, and its grades here."""

    username: str
    model: str | None
    prompt_version: str | None
    params: dict
    judged: int


def list_model_judges(engine: Engine, project: str) -> list[ModelJudgeInfo]:
    """Every model judge, with how many current judgments it has in the project, by name."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        counts = dict(
            session.execute(
                select(col(Judgment.user_id), func.count(col(Judgment.id)))
                .where(col(Judgment.project_id) == project_id)
                .group_by(col(Judgment.user_id))
            ).all()
        )
        rows = session.execute(
            select(
                col(User.id), col(User.username), col(User.model_name), col(User.prompt_version), col(User.model_params)
            )
            .where(col(User.kind) == "model")
            .order_by(User.username)
        ).all()
    return [
        ModelJudgeInfo(name, model, prompt, dict(params or {}), int(counts.get(uid, 0)))
        for uid, name, model, prompt, params in rows
    ]

"""Projects (scale, overlap policy, agreement threshold) and their versioned grading guidelines."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db.accounts.permissions import Actor, require_lead
from db.store.engine import session_scope
from db.store.models import Guideline, Project, User, pk
from eval_core.errors import Conflict, NotFound
from eval_core.thresholds import AGREEMENT_THRESHOLD
from eval_core.vocab import DEFAULT_ORDER, ORDER_NAMES
from guidelines import GRADING as BUNDLED_GUIDELINE
from guidelines.scale import scale_guideline

MAX_LABEL_CHARS = 60
_GRADE_ROW = re.compile(r"^\|\s*\*\*(\d+)\*\*\s*\|\s*([^|]+?)\s*\|", re.MULTILINE)


class ProjectNotFound(NotFound):
    """Raised with the project name and the names that do exist."""


@dataclass(frozen=True)
class ProjectInfo:
    """A project's settings as plain data."""

    id: int
    name: str
    scale: tuple[int, int]
    overlap: int
    overlap_fraction: float
    threshold: float
    labels: dict[int, str]
    queue_order: str = "pool"


@dataclass(frozen=True)
class GuidelineInfo:
    """One guideline version; judgments point at it."""

    id: int
    project: str
    version: int
    text: str
    content_hash: str
    created_by: str | None
    created_at: datetime
    note: str | None = None


def project_scale(row: Project) -> tuple[int, int]:
    """A project row's grading scale as (low, high)."""
    return int(row.scale_min), int(row.scale_max)


def project_info(row: Project) -> ProjectInfo:
    """Detach a row into plain data."""
    assert row.id is not None
    scale = project_scale(row)
    labels = {int(g): str(t) for g, t in row.grade_labels.items()} if row.grade_labels else default_labels(scale)
    return ProjectInfo(
        row.id,
        row.name,
        scale,
        row.overlap,
        row.overlap_fraction,
        row.agreement_threshold,
        dict(sorted(labels.items())),
        row.queue_order or DEFAULT_ORDER,
    )


@cache
def _bundled_names() -> dict[int, str]:
    """Grade → name from the bundled 0–3 guideline's grade table (`| **3** | Answers fully | …`)."""
    text = BUNDLED_GUIDELINE.read_text(encoding="utf-8")
    return {int(g): name.strip() for g, name in _GRADE_ROW.findall(text)}


def default_labels(scale: tuple[int, int]) -> dict[int, str]:
    """Every grade's default name: the bundled guideline's names on a 0–3 scale, otherwise "Grade g"."""
    low, high = scale
    if (low, high) == (0, 3):
        return dict(sorted(_bundled_names().items()))
    return {g: f"Grade {g}" for g in range(low, high + 1)}


def check_labels(labels: dict[int, str], scale: tuple[int, int]) -> dict[int, str]:
    """One non-empty label of at most MAX_LABEL_CHARS characters for every grade of the scale, nothing else."""
    low, high = scale
    grades = set(range(low, high + 1))
    clean: dict[int, str] = {}
    for grade, label in labels.items():
        if isinstance(grade, bool) or not isinstance(grade, int) or grade not in grades:
            raise ValueError(f"grade {grade!r} is not on the scale {low}-{high}")
        text = label.strip() if isinstance(label, str) else ""
        if not text:
            raise ValueError(f"the label of grade {grade} is empty")
        if len(text) > MAX_LABEL_CHARS:
            raise ValueError(f"the label of grade {grade} is {len(text)} characters; at most {MAX_LABEL_CHARS}")
        clean[grade] = text
    missing = sorted(grades - clean.keys())
    if missing:
        raise ValueError(f"no label for grade(s) {', '.join(map(str, missing))}: every grade {low}-{high} needs one")
    return dict(sorted(clean.items()))


def parse_labels(text: str, scale: tuple[int, int]) -> dict[int, str]:
    """`"1=Partly,2=Mostly,3=Fully"` over the scale's defaults (grades not named keep theirs); a grade named
    twice or not on the scale is refused."""
    given: dict[int, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        grade_text, eq, label = item.partition("=")
        if not eq or not grade_text.strip().lstrip("-").isdigit():
            raise ValueError(f"label {item!r} is not GRADE=NAME")
        grade = int(grade_text)
        if grade in given:
            raise ValueError(f"grade {grade} is labelled twice")
        given[grade] = label
    return check_labels({**default_labels(scale), **given}, scale)


def stored_labels(labels: dict[int, str]) -> dict[str, str]:
    """The JSON form kept in projects.grade_labels (JSON object keys are strings)."""
    return {str(g): t for g, t in sorted(labels.items())}


def starting_guideline(info: ProjectInfo) -> tuple[str, str]:
    """A new project's guideline version 1 and its note: the bundled guideline on 0–3, else one generated for
    the project's scale from its grade names (guidelines.scale), so annotators never start without one."""
    if info.scale == (0, 3):
        return BUNDLED_GUIDELINE.read_text(encoding="utf-8"), f"bundled guideline {BUNDLED_GUIDELINE.name}"
    low, high = info.scale
    return scale_guideline(info.labels), f"generated for the {low}-{high} scale from its grade names"


def project_row(session: Session, name: str, *, lock: bool = False) -> Project:
    """The project called `name`, or ProjectNotFound listing the ones there are. `lock=True` row-locks it on
    PostgreSQL (FOR UPDATE), so two writers of the same project-wide operation never interleave."""
    query = select(Project).where(Project.name == name)
    row = session.exec(query.with_for_update() if lock else query).first()
    if row is None:
        known = ", ".join(session.exec(select(Project.name).order_by(Project.name))) or "none yet"
        raise ProjectNotFound(f"no project named {name!r} (projects: {known})")
    return row


def _check_policy(scale: tuple[int, int], overlap: int, overlap_fraction: float, threshold: float) -> None:
    """The same rules as the database CHECK constraints, with messages a person can act on."""
    low, high = scale
    if not (0 <= low < high <= 100):
        raise ValueError(f"scale must be low-high with 0 <= low < high <= 100, got {low}-{high}")
    if overlap < 1:
        raise ValueError(f"overlap must be at least 1, got {overlap}")
    if not 0 < overlap_fraction <= 1:
        raise ValueError(f"overlap fraction must be in (0, 1], got {overlap_fraction}")
    if not -1 <= threshold <= 1:
        raise ValueError(f"agreement threshold must be in [-1, 1], got {threshold}")


def create_project(
    engine: Engine,
    name: str,
    scale: tuple[int, int] = (0, 3),
    overlap: int = 2,
    overlap_fraction: float = 1.0,
    threshold: float = AGREEMENT_THRESHOLD,
    labels: dict[int, str] | None = None,
    *,
    actor: Actor,
) -> ProjectInfo:
    """A new project (leads and the operator only); its name is unique; `labels` name every grade (default:
    default_labels)."""
    clean = (name or "").strip()
    if not clean or len(clean) > 200:
        raise ValueError(f"project name must be 1-200 characters, got {name!r}")
    scale = (int(scale[0]), int(scale[1]))
    _check_policy(scale, overlap, overlap_fraction, threshold)
    names = check_labels(default_labels(scale) if labels is None else labels, scale)
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        if session.exec(select(Project.id).where(Project.name == clean)).first() is not None:
            raise Conflict(f"project {clean!r} already exists")
        row = Project(
            name=clean,
            scale_min=scale[0],
            scale_max=scale[1],
            overlap=overlap,
            overlap_fraction=overlap_fraction,
            agreement_threshold=threshold,
            grade_labels=stored_labels(names),
        )
        session.add(row)
        session.flush()
        return project_info(row)


def get_project(engine: Engine, name: str) -> ProjectInfo:
    """The project called `name` (ProjectNotFound when absent)."""
    with session_scope(engine) as session:
        return project_info(project_row(session, name))


def list_projects(engine: Engine) -> list[ProjectInfo]:
    """Every project, by name."""
    with session_scope(engine) as session:
        return [project_info(r) for r in session.exec(select(Project).order_by(Project.name))]


def update_policy(
    engine: Engine,
    name: str,
    overlap: int | None = None,
    overlap_fraction: float | None = None,
    threshold: float | None = None,
    *,
    actor: Actor,
) -> ProjectInfo:
    """Change the overlap policy or agreement threshold (the scale is fixed once a project exists); leads and
    the operator only."""
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        row = project_row(session, name)
        new = (
            row.overlap if overlap is None else overlap,
            row.overlap_fraction if overlap_fraction is None else overlap_fraction,
            row.agreement_threshold if threshold is None else threshold,
        )
        _check_policy(project_scale(row), *new)
        row.overlap, row.overlap_fraction, row.agreement_threshold = new
        session.add(row)
        session.flush()
        return project_info(row)


def set_grade_labels(engine: Engine, project: str, labels: dict[int, str], *, actor: Actor) -> ProjectInfo:
    """Rename the grades (every grade of the scale, checked by check_labels); leads and the operator only."""
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        row = project_row(session, project)
        row.grade_labels = stored_labels(check_labels(labels, project_scale(row)))
        session.add(row)
        session.flush()
        return project_info(row)


def set_queue_order(engine: Engine, project: str, order: str, *, actor: Actor) -> ProjectInfo:
    """Choose the order annotators are served their pairs in (one of ORDER_NAMES); leads and the operator only."""
    if order not in ORDER_NAMES:
        raise ValueError(f"unknown queue order {order!r} (known: {', '.join(ORDER_NAMES)})")
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        row = project_row(session, project)
        row.queue_order = order
        session.add(row)
        session.flush()
        return project_info(row)


def _guideline_info(row: Guideline, project: str, creator: str | None) -> GuidelineInfo:
    assert row.id is not None
    return GuidelineInfo(row.id, project, row.version, row.text, row.content_hash, creator, row.created_at, row.note)


def add_guideline(engine: Engine, project: str, text: str, *, actor: Actor, note: str | None = None) -> GuidelineInfo:
    """Publish a new guideline version (leads and the operator only; a lead is recorded as its author, with
    an optional note on what changed); re-publishing the current text is a no-op returning it."""
    if not (text or "").strip():
        raise ValueError("guideline text is empty")
    note = (note or "").strip() or None
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    with session_scope(engine, write=True) as session:
        creator_id = require_lead(session, actor)
        proj = project_row(session, project)
        current = _current_row(session, pk(proj))
        if current is not None and current.content_hash == digest:
            creator = session.get(User, current.created_by_id) if current.created_by_id else None
            return _guideline_info(current, proj.name, creator.username if creator else None)
        row = Guideline(
            project_id=pk(proj),
            version=(current.version + 1) if current else 1,
            text=text,
            content_hash=digest,
            note=note,
            created_by_id=creator_id,
        )
        session.add(row)
        session.flush()
        return _guideline_info(row, proj.name, None if creator_id is None else str(actor))


def _current_row(session: Session, project_id: int) -> Guideline | None:
    return session.exec(
        select(Guideline).where(Guideline.project_id == project_id).order_by(col(Guideline.version).desc()).limit(1)
    ).first()


def current_guideline(engine: Engine, project: str) -> GuidelineInfo | None:
    """The guideline version in force, None before the first one is published."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        row = _current_row(session, pk(proj))
        if row is None:
            return None
        creator = session.get(User, row.created_by_id) if row.created_by_id else None
        return _guideline_info(row, proj.name, creator.username if creator else None)


def list_guidelines(engine: Engine, project: str) -> list[GuidelineInfo]:
    """Every version, oldest first."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        rows = session.exec(
            select(Guideline, User.username)
            .join(User, col(Guideline.created_by_id) == User.id, isouter=True)
            .where(Guideline.project_id == proj.id)
            .order_by(col(Guideline.version))
        ).all()
        return [_guideline_info(g, proj.name, who) for g, who in rows]


def check_grade(grade: object, scale: tuple[int, int], reason: str | None) -> int | None:
    """A grade on the project scale, or None (can't judge) which needs a reason."""
    if grade is None:
        if reason is None:
            raise ValueError("a can't-judge (no grade) needs a reason")
        return None
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise ValueError(f"grade must be an integer, got {grade!r}")
    if not scale[0] <= grade <= scale[1]:
        raise ValueError(f"grade {grade} is outside the scale {scale[0]}-{scale[1]}")
    return int(grade)

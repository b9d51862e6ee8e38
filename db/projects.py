"""Projects (scale, overlap policy, agreement threshold) and their versioned grading guidelines."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db.engine import session_scope
from db.models import Guideline, Project, User
from db.users import user_row


class ProjectNotFound(LookupError):
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


def project_info(row: Project) -> ProjectInfo:
    """Detach a row into plain data."""
    assert row.id is not None
    return ProjectInfo(row.id, row.name, (row.scale_min, row.scale_max), row.overlap, row.overlap_fraction,
                       row.agreement_threshold)


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


def create_project(engine: Engine, name: str, scale: tuple[int, int] = (0, 3), overlap: int = 2,
                   overlap_fraction: float = 1.0, threshold: float = 0.6) -> ProjectInfo:
    """A new project; its name is unique."""
    clean = (name or "").strip()
    if not clean or len(clean) > 200:
        raise ValueError(f"project name must be 1-200 characters, got {name!r}")
    _check_policy(tuple(scale), overlap, overlap_fraction, threshold)  # type: ignore[arg-type]
    with session_scope(engine, write=True) as session:
        if session.exec(select(Project.id).where(Project.name == clean)).first() is not None:
            raise ValueError(f"project {clean!r} already exists")
        row = Project(name=clean, scale_min=int(scale[0]), scale_max=int(scale[1]), overlap=overlap,
                      overlap_fraction=overlap_fraction, agreement_threshold=threshold)
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


def update_policy(engine: Engine, name: str, overlap: int | None = None, overlap_fraction: float | None = None,
                  threshold: float | None = None) -> ProjectInfo:
    """Change the overlap policy or agreement threshold (the scale is fixed once a project exists)."""
    with session_scope(engine, write=True) as session:
        row = project_row(session, name)
        new = (row.overlap if overlap is None else overlap,
               row.overlap_fraction if overlap_fraction is None else overlap_fraction,
               row.agreement_threshold if threshold is None else threshold)
        _check_policy((row.scale_min, row.scale_max), *new)
        row.overlap, row.overlap_fraction, row.agreement_threshold = new
        session.add(row)
        session.flush()
        return project_info(row)


def _guideline_info(row: Guideline, project: str, creator: str | None) -> GuidelineInfo:
    assert row.id is not None
    return GuidelineInfo(row.id, project, row.version, row.text, row.content_hash, creator, row.created_at)


def add_guideline(engine: Engine, project: str, text: str, username: str | None = None) -> GuidelineInfo:
    """Publish a new guideline version; re-publishing the current text is a no-op returning it."""
    if not (text or "").strip():
        raise ValueError("guideline text is empty")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    with session_scope(engine, write=True) as session:
        proj = project_row(session, project)
        current = _current_row(session, proj.id)  # type: ignore[arg-type]
        if current is not None and current.content_hash == digest:
            creator = session.get(User, current.created_by_id) if current.created_by_id else None
            return _guideline_info(current, proj.name, creator.username if creator else None)
        creator_id = user_row(session, username).id if username else None
        row = Guideline(project_id=proj.id, version=(current.version + 1) if current else 1, text=text,
                        content_hash=digest, created_by_id=creator_id)
        session.add(row)
        session.flush()
        return _guideline_info(row, proj.name, username)


def _current_row(session: Session, project_id: int) -> Guideline | None:
    return session.exec(select(Guideline).where(Guideline.project_id == project_id)
                        .order_by(Guideline.version.desc()).limit(1)).first()  # type: ignore[union-attr]


def current_guideline(engine: Engine, project: str) -> GuidelineInfo | None:
    """The guideline version in force, None before the first one is published."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        row = _current_row(session, proj.id)  # type: ignore[arg-type]
        if row is None:
            return None
        creator = session.get(User, row.created_by_id) if row.created_by_id else None
        return _guideline_info(row, proj.name, creator.username if creator else None)


def list_guidelines(engine: Engine, project: str) -> list[GuidelineInfo]:
    """Every version, oldest first."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        rows = session.exec(select(Guideline, User.username).join(User, Guideline.created_by_id == User.id,
                                                                  isouter=True)
                            .where(Guideline.project_id == proj.id).order_by(Guideline.version)).all()
        return [_guideline_info(g, proj.name, who) for g, who in rows]

"""An annotator's queue: next pair, record / undo a judgment (upsert + history in one transaction), progress.

A view carries the version of the (pair, annotator) it saw: the id of the latest history row, which every write
(grade, undo, import) appends, so it only grows. Saving with that version refuses, as ChangedMeanwhile, a grade
whose pair changed after the view was drawn (another tab, another device), instead of overwriting it unseen."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from sqlalchemy import and_, bindparam, exists, false, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from db.projects import check_grade, project_row
from db.qualification import queue_open
from db.queue_order import ordered_next
from db.store.engine import retry_once, session_scope
from db.store.models import (
    Assignment,
    Fragment,
    Guideline,
    Judgment,
    JudgmentHistory,
    Pair,
    Project,
    QualificationRound,
    Query,
    RoundStatus,
    User,
    table_of,
    utcnow,
)
from db.textless import IMPORT_TEXTS
from eval_core.errors import Conflict, NotFound, Refused
from eval_core.io.records import check_note
from eval_core.vocab import DEFAULT_ORDER, Role

ASSIGNMENTS, FRAGMENTS, GUIDELINES, JUDGMENT_HISTORY, JUDGMENTS, PAIRS, PROJECTS, QUERIES, ROUNDS, USERS = (
    table_of(m)
    for m in (
        Assignment,
        Fragment,
        Guideline,
        JudgmentHistory,
        Judgment,
        Pair,
        Project,
        Query,
        QualificationRound,
        User,
    )
)


@dataclass(frozen=True)
class PairView:
    """What the judging page shows: the pair, where it sits in the queue, and the user's own judgment."""

    pair_id: int
    query_external_id: str
    query_text: str
    fragment_external_id: str
    fragment_title: str | None
    fragment_text: str
    position: int | None
    total: int
    grade: int | None
    note: str | None
    cant_judge_reason: str | None
    fragment_doc_id: str | None = None
    rejudge_version: int | None = None  # a lead sent this judged pair back to be graded under this version
    version: int = 0  # the (pair, user)'s latest history id when the view was read; 0 = never graded
    has_text: bool = True  # false: the fragment waits for its text (db.textless); never served, shown to a lead only


class ChangedMeanwhile(Conflict):
    """A grade saved from a view older than the pair's last change (another tab graded or cleared it since):
    nothing was written. Carries what is stored now, so the page can ask "keep yours, or take the newer?"."""

    def __init__(self, pair_id: int, grade: int | None, note: str | None, reason: str | None, version: int) -> None:
        self.pair_id, self.grade, self.note, self.cant_judge_reason, self.version = (
            pair_id,
            grade,
            note,
            reason,
            version,
        )
        if grade is not None:
            now = f"graded {grade}"
        elif reason is not None:
            now = "marked can't judge"
        else:
            now = "cleared"
        self.now = now
        super().__init__(f"pair {pair_id} was {now} meanwhile (in another tab or window): nothing was saved")


@dataclass(frozen=True)
class JudgmentInfo:
    """A judgment after a write; `changed` is False when the submission repeated what was stored."""

    id: int
    pair_id: int
    username: str
    grade: int | None
    note: str | None
    cant_judge_reason: str | None
    guideline_id: int | None
    revision: int
    changed: bool
    updated_at: datetime | None
    version: int = 0  # the (pair, user)'s latest history id after the write


@dataclass(frozen=True)
class Progress:
    """How far an annotator is: overall and per query (external id, done, assigned) in queue order."""

    done: int
    assigned: int
    per_query: list[tuple[str, int, int]]


def _user(session: Session, username: str) -> tuple[int, str, bool]:
    row = session.connection().execute(_USER, {"username": username}).first()
    if row is None:
        raise NotFound(f"no user named {username!r}")
    return row[0], row[1], row[2]


def _clean(text: str | None, what: str) -> str | None:
    """Empty notes and reasons are stored as NULL so '' and None never count as a change; longer than
    MAX_NOTE_CHARS, or holding a NUL, they are refused."""
    if text is None:
        return None
    text = str(text).strip()
    if "\x00" in text:
        raise ValueError(f"the {what} holds a NUL character")
    return check_note(text, f"the {what}") or None


# The hot paths (next pair, record) run prebuilt Core statements on the session's connection: building and
# ORM-executing statements per call cost more than the indexed lookups themselves.
_USER = select(USERS.c.id, USERS.c.role, USERS.c.active).where(USERS.c.username == bindparam("username"))
_BEFORE_WRITE = (
    select(
        USERS.c.id,
        USERS.c.role,
        USERS.c.active,
        PAIRS.c.project_id,
        PROJECTS.c.scale_min,
        PROJECTS.c.scale_max,
        select(ASSIGNMENTS.c.id)
        .where(ASSIGNMENTS.c.pair_id == PAIRS.c.id, ASSIGNMENTS.c.user_id == USERS.c.id)
        .scalar_subquery(),
        select(func.max(GUIDELINES.c.id)).where(GUIDELINES.c.project_id == PAIRS.c.project_id).scalar_subquery(),
        JUDGMENTS.c.id,
        JUDGMENTS.c.grade,
        JUDGMENTS.c.note,
        JUDGMENTS.c.cant_judge_reason,
        JUDGMENTS.c.guideline_id,
        JUDGMENTS.c.revision,
        JUDGMENTS.c.updated_at,
        select(ASSIGNMENTS.c.rejudge_version)
        .where(ASSIGNMENTS.c.pair_id == PAIRS.c.id, ASSIGNMENTS.c.user_id == USERS.c.id)
        .scalar_subquery(),
        PROJECTS.c.qualify_pairs,
        select(ROUNDS.c.status)
        .where(ROUNDS.c.project_id == PAIRS.c.project_id, ROUNDS.c.user_id == USERS.c.id)
        .order_by(ROUNDS.c.attempt.desc())
        .limit(1)
        .scalar_subquery(),
        select(func.max(JUDGMENT_HISTORY.c.id))
        .where(JUDGMENT_HISTORY.c.pair_id == PAIRS.c.id, JUDGMENT_HISTORY.c.user_id == USERS.c.id)
        .scalar_subquery(),
        select(FRAGMENTS.c.has_text).where(FRAGMENTS.c.id == PAIRS.c.fragment_id).scalar_subquery(),
    )
    .select_from(
        USERS.join(PAIRS, PAIRS.c.id == bindparam("pair_id"))
        .join(PROJECTS, PROJECTS.c.id == PAIRS.c.project_id)
        .outerjoin(JUDGMENTS, and_(JUDGMENTS.c.pair_id == PAIRS.c.id, JUDGMENTS.c.user_id == USERS.c.id))
    )
    .where(USERS.c.username == bindparam("username"))
)
_HISTORY = JUDGMENT_HISTORY.insert().returning(JUDGMENT_HISTORY.c.id)
# A write closes the assignment, re-judging included.
_MARK = (
    ASSIGNMENTS.update()
    .where(ASSIGNMENTS.c.id == bindparam("assignment_id"))
    .values(done=bindparam("done"), rejudge_version=None)
)
# Open: not done, either not judged yet or sent back by a lead for re-judging, and its fragment has a text
# (assign never queues a pair still waiting for its text; this keeps any other path from serving one).
_OPEN = and_(
    ASSIGNMENTS.c.done == false(),
    or_(
        ASSIGNMENTS.c.rejudge_version.is_not(None),
        ~exists().where(JUDGMENTS.c.pair_id == ASSIGNMENTS.c.pair_id, JUDGMENTS.c.user_id == ASSIGNMENTS.c.user_id),
    ),
    exists().where(PAIRS.c.id == ASSIGNMENTS.c.pair_id, FRAGMENTS.c.id == PAIRS.c.fragment_id, FRAGMENTS.c.has_text),
)
# An assignment is done when its pair has the user's judgment and was not sent back for re-judging.
_DONE = and_(
    JUDGMENTS.c.pair_id == ASSIGNMENTS.c.pair_id,
    JUDGMENTS.c.user_id == ASSIGNMENTS.c.user_id,
    ASSIGNMENTS.c.rejudge_version.is_(None),
)
_QUEUE = (ASSIGNMENTS.c.project_id == bindparam("project_id")) & (ASSIGNMENTS.c.user_id == bindparam("user_id"))
# Project and user ids as uncorrelated scalar subqueries: both engines then treat them as constants and walk
# ix_assignments_todo in queue order, stopping at the first hit (a join made PostgreSQL sort the whole backlog).
_TODO = (
    select(
        ASSIGNMENTS.c.project_id,
        ASSIGNMENTS.c.user_id,
        ASSIGNMENTS.c.pair_id,
        ASSIGNMENTS.c.position,
        select(PROJECTS.c.queue_order).where(PROJECTS.c.name == bindparam("project")).scalar_subquery(),
    )
    .where(
        ASSIGNMENTS.c.project_id
        == select(PROJECTS.c.id).where(PROJECTS.c.name == bindparam("project")).scalar_subquery(),
        ASSIGNMENTS.c.user_id == select(USERS.c.id).where(USERS.c.username == bindparam("username")).scalar_subquery(),
        _OPEN,
    )
    .order_by(ASSIGNMENTS.c.position, ASSIGNMENTS.c.pair_id)
    .limit(1)
)
_VIEW = (
    select(
        QUERIES.c.external_id,
        QUERIES.c.text,
        FRAGMENTS.c.external_id,
        FRAGMENTS.c.title,
        FRAGMENTS.c.text,
        JUDGMENTS.c.grade,
        JUDGMENTS.c.note,
        JUDGMENTS.c.cant_judge_reason,
        select(func.min(ASSIGNMENTS.c.position)).where(_QUEUE).scalar_subquery(),
        select(func.max(ASSIGNMENTS.c.position)).where(_QUEUE).scalar_subquery(),
        FRAGMENTS.c.doc_id,
        select(ASSIGNMENTS.c.rejudge_version)
        .where(ASSIGNMENTS.c.pair_id == PAIRS.c.id, ASSIGNMENTS.c.user_id == bindparam("user_id"))
        .scalar_subquery(),
        select(func.max(JUDGMENT_HISTORY.c.id))
        .where(JUDGMENT_HISTORY.c.pair_id == PAIRS.c.id, JUDGMENT_HISTORY.c.user_id == bindparam("user_id"))
        .scalar_subquery(),
        FRAGMENTS.c.has_text,
    )
    .select_from(
        PAIRS.join(QUERIES, QUERIES.c.id == PAIRS.c.query_id)
        .join(FRAGMENTS, FRAGMENTS.c.id == PAIRS.c.fragment_id)
        .outerjoin(JUDGMENTS, and_(JUDGMENTS.c.pair_id == PAIRS.c.id, JUDGMENTS.c.user_id == bindparam("user_id")))
    )
    .where(PAIRS.c.id == bindparam("pair_id"), PAIRS.c.project_id == bindparam("project_id"))
)
_upserts: dict[str, object] = {}


def _upsert(dialect: str):
    """INSERT … ON CONFLICT (pair_id, user_id) DO UPDATE … RETURNING id, revision, built once per dialect."""
    if dialect not in _upserts:
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        cols = (
            "project_id",
            "pair_id",
            "user_id",
            "grade",
            "note",
            "cant_judge_reason",
            "guideline_id",
            "seconds_spent",
            "created_at",
            "updated_at",
        )
        stmt = insert(JUDGMENTS).values({**{c: bindparam(c) for c in cols}, "revision": 1})
        _upserts[dialect] = stmt.on_conflict_do_update(
            index_elements=[JUDGMENTS.c.pair_id, JUDGMENTS.c.user_id],
            set_={
                "grade": stmt.excluded.grade,
                "note": stmt.excluded.note,
                "cant_judge_reason": stmt.excluded.cant_judge_reason,
                "guideline_id": stmt.excluded.guideline_id,
                "seconds_spent": func.coalesce(stmt.excluded.seconds_spent, JUDGMENTS.c.seconds_spent),
                "revision": JUDGMENTS.c.revision + 1,
                "updated_at": stmt.excluded.updated_at,
            },
        ).returning(JUDGMENTS.c.id, JUDGMENTS.c.revision)
    return _upserts[dialect]


def _lock(conn, pair_id: int, username: str) -> None:
    """Serialise writers of one (pair, user) so old → new in history is exact: a transaction-scoped advisory lock
    on PostgreSQL (other annotators of the pair are not blocked); SQLite already holds the write lock."""
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(pair_id, func.hashtext(username))))


def _may_write(conn, username: str, user_id, role, active, project_id, round_size, round_status) -> None:
    """Refused unless this account may change its judgments in this project now: active, and (an annotator)
    with a regular queue that is open (no round left to pass, not closed by a lead). Grading and undo alike."""
    if not active:
        raise Refused(f"user {username!r} is deactivated")
    closed = round_status == RoundStatus.CLOSED
    if (round_size is not None or closed) and role == Role.ANNOTATOR and not queue_open(conn, project_id, user_id):
        if closed:
            raise Refused(
                f"a lead closed the regular queue of {username!r} in this project: it stays closed "
                "until a lead reopens it or grants a retake they pass"
            )
        raise Refused(
            f"{username!r} has a qualification round to pass in this project before grading its "
            "pairs (or a lead opens their queue)"
        )


@retry_once
def record_judgment(
    engine: Engine,
    pair_id: int,
    username: str,
    grade: int | None,
    note: str | None = None,
    cant_judge_reason: str | None = None,
    seconds_spent: float | None = None,
    seen_version: int | None = None,
) -> JudgmentInfo:
    """Store the user's grade for a pair: one upsert + one history row in one transaction; repeats are no-ops,
    so a transaction that lost its connection is run again once (retry_once) without doubling anything.

    `seen_version` is the PairView.version the grade was given on (None: no check, for scripts and imports).
    The check and the write share the transaction that holds the (pair, user) write lock (BEGIN IMMEDIATE on
    SQLite, an advisory lock on PostgreSQL), so two tabs cannot both pass it: when the pair changed since that
    view, ChangedMeanwhile is raised with the stored grade and nothing is written — unless what is stored is
    already what is submitted."""
    note, reason = _clean(note, "note"), _clean(cant_judge_reason, "can't-judge reason")
    if grade is not None:
        reason = None
    if seconds_spent is not None and not seconds_spent >= 0:
        raise ValueError(f"seconds spent must be >= 0, got {seconds_spent!r}")
    with session_scope(engine, write=True) as session:
        conn = session.connection()
        _lock(conn, pair_id, username)
        row = conn.execute(_BEFORE_WRITE, {"pair_id": pair_id, "username": username}).first()
        if row is None:
            _user(session, username)
            raise NotFound(f"no pair with id {pair_id}")
        (
            user_id,
            role,
            active,
            project_id,
            low,
            high,
            assignment_id,
            guideline_id,
            old_id,
            old_grade,
            old_note,
            old_reason,
            old_guideline,
            old_revision,
            old_updated,
            rejudge,
            round_size,
            round_status,
            version,
            has_text,
        ) = row
        version = version or 0
        _may_write(conn, username, user_id, role, active, project_id, round_size, round_status)
        if assignment_id is None and role != Role.LEAD:
            raise Refused(f"pair {pair_id} is not assigned to {username!r}")
        if not has_text:
            raise Refused(
                f"pair {pair_id} waits for its fragment's text (never imported): nobody grades what they cannot "
                f"read; import the text with {IMPORT_TEXTS}"
            )
        grade = check_grade(grade, (low, high), reason)
        # Re-judging writes even the same grade: the judgment is now made under the version in force.
        if old_id is not None and (old_grade, old_note, old_reason) == (grade, note, reason) and rejudge is None:
            return JudgmentInfo(
                old_id, pair_id, username, grade, note, reason, old_guideline, old_revision, False, old_updated, version
            )
        if seen_version is not None and seen_version != version:
            raise ChangedMeanwhile(pair_id, old_grade, old_note, old_reason, version)
        now = utcnow()
        new_id, revision = conn.execute(
            _upsert(conn.dialect.name),
            {
                "project_id": project_id,
                "pair_id": pair_id,
                "user_id": user_id,
                "grade": grade,
                "note": note,
                "cant_judge_reason": reason,
                "guideline_id": guideline_id,
                "seconds_spent": seconds_spent,
                "created_at": now,
                "updated_at": now,
            },
        ).one()
        new_version = conn.execute(
            _HISTORY,
            {
                "project_id": project_id,
                "pair_id": pair_id,
                "user_id": user_id,
                "action": "update" if old_id is not None else "create",
                "old_grade": old_grade,
                "new_grade": grade,
                "old_note": old_note,
                "new_note": note,
                "old_cant_judge_reason": old_reason,
                "new_cant_judge_reason": reason,
                "guideline_id": guideline_id,
                "changed_by_id": user_id,
                "changed_at": now,
            },
        ).scalar_one()
        if assignment_id is not None:
            conn.execute(_MARK, {"assignment_id": assignment_id, "done": True})
        return JudgmentInfo(
            new_id, pair_id, username, grade, note, reason, guideline_id, revision, True, now, new_version
        )


def _version(conn, pair_id: int, user_id: int) -> int:
    """The (pair, user)'s latest history id, 0 when it was never graded."""
    return (
        conn.execute(
            select(func.max(JUDGMENT_HISTORY.c.id)).where(
                JUDGMENT_HISTORY.c.pair_id == pair_id, JUDGMENT_HISTORY.c.user_id == user_id
            )
        ).scalar()
        or 0
    )


def undo_judgment(engine: Engine, pair_id: int, username: str, seen_version: int | None = None) -> JudgmentInfo | None:
    """Remove the user's own judgment (the pair returns to their queue); history keeps what it was. Refused as
    a grade would be: a deactivated account, or a queue closed or behind a qualification round. With
    `seen_version` (the view's), a pair changed since that view raises ChangedMeanwhile and stays as it is."""
    with session_scope(engine, write=True) as session:
        conn = session.connection()
        _lock(conn, pair_id, username)
        row = conn.execute(_BEFORE_WRITE, {"pair_id": pair_id, "username": username}).first()
        if row is None:
            _user(session, username)
            raise NotFound(f"no pair with id {pair_id}")
        user_id, role, active, project_id = row[0], row[1], row[2], row[3]
        _may_write(conn, username, user_id, role, active, project_id, row[16], row[17])
        old = conn.execute(
            select(JUDGMENTS).where(JUDGMENTS.c.pair_id == pair_id, JUDGMENTS.c.user_id == user_id)
        ).first()
        if old is None:
            return None
        if seen_version is not None and (version := _version(conn, pair_id, user_id)) != seen_version:
            raise ChangedMeanwhile(pair_id, old.grade, old.note, old.cant_judge_reason, version)
        now = utcnow()
        conn.execute(JUDGMENTS.delete().where(JUDGMENTS.c.id == old.id))
        new_version = conn.execute(
            _HISTORY,
            {
                "project_id": old.project_id,
                "pair_id": pair_id,
                "user_id": user_id,
                "action": "undo",
                "old_grade": old.grade,
                "new_grade": None,
                "old_note": old.note,
                "new_note": None,
                "old_cant_judge_reason": old.cant_judge_reason,
                "new_cant_judge_reason": None,
                "guideline_id": old.guideline_id,
                "changed_by_id": user_id,
                "changed_at": now,
            },
        ).scalar_one()
        conn.execute(
            ASSIGNMENTS.update()
            .where(ASSIGNMENTS.c.pair_id == pair_id, ASSIGNMENTS.c.user_id == user_id)
            .values(done=False)
        )
        return JudgmentInfo(
            old.id,
            pair_id,
            username,
            old.grade,
            old.note,
            old.cant_judge_reason,
            old.guideline_id,
            old.revision,
            True,
            now,
            new_version,
        )


def _view(session: Session, project_id: int, user_id: int, pair_id: int, position: int | None) -> PairView:
    """Assemble a PairView; position is 1-based in the user's queue (None for an unassigned pair). A pair sent
    back for re-judging shows none of the user's earlier grade, note or reason: it is graded afresh.

    assign() gives each annotator contiguous positions, so rank and queue length come from the queue's first
    and last position — two index probes — instead of counting a queue of thousands on every page view.
    """
    row = (
        session.connection().execute(_VIEW, {"pair_id": pair_id, "project_id": project_id, "user_id": user_id}).first()
    )
    if row is None:
        raise NotFound(f"no pair with id {pair_id} in this project")
    first, last = row[8], row[9]
    total = 0 if first is None else last - first + 1
    rank = None if position is None else position - first + 1
    version = row[12] or 0
    # sent back for re-judging: blind, like a first grading (history keeps the old grade, note and reason)
    grade, note, reason = (None, None, None) if row[11] is not None else (row[5], row[6], row[7])
    return PairView(
        pair_id,
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        rank,
        total,
        grade,
        note,
        reason,
        row[10],
        row[11],
        version,
        bool(row[13]),
    )


def _ids(session: Session, project: str, username: str) -> tuple[int, int]:
    proj = project_row(session, project)
    assert proj.id is not None
    return proj.id, _user(session, username)[0]


def _first_todo(session: Session, project_id: int, user_id: int) -> tuple[int, int] | None:
    """(pair id, position) of the first open assigned pair (not judged yet, or sent back for re-judging), in
    queue order."""
    row = session.execute(
        select(ASSIGNMENTS.c.pair_id, ASSIGNMENTS.c.position)
        .where(ASSIGNMENTS.c.project_id == project_id, ASSIGNMENTS.c.user_id == user_id, _OPEN)
        .order_by(ASSIGNMENTS.c.position, ASSIGNMENTS.c.pair_id)
        .limit(1)
    ).first()
    return (row[0], row[1]) if row else None


@retry_once
def next_pair(engine: Engine, project: str, username: str) -> PairView | None:
    """The user's next assigned, ungraded pair, None when the queue is done: the first in queue order, or under
    another project queue order the one that order picks within the query in progress (db.queue_order)."""
    with session_scope(engine) as session:
        todo = session.connection().execute(_TODO, {"project": project, "username": username}).first()
        if todo is None:
            _ids(session, project, username)  # unknown project or user: say which
            return None
        project_id, user_id, pair_id, position, order = todo
        if order != DEFAULT_ORDER:
            pair_id, position = ordered_next(session, project_id, user_id, order, (pair_id, position))
        return _view(session, project_id, user_id, pair_id, position)


@retry_once
def get_pair(engine: Engine, project: str, username: str, pair_id: int) -> PairView:
    """One pair with the user's own judgment (never anyone else's); annotators only see pairs assigned to them."""
    with session_scope(engine) as session:
        project_id, user_id = _ids(session, project, username)
        position = session.execute(
            select(ASSIGNMENTS.c.position).where(ASSIGNMENTS.c.pair_id == pair_id, ASSIGNMENTS.c.user_id == user_id)
        ).first()
        if position is None and _user(session, username)[1] != Role.LEAD:
            raise Refused(f"pair {pair_id} is not assigned to {username!r}")
        return _view(session, project_id, user_id, pair_id, position[0] if position else None)


@retry_once
def previous_pair(engine: Engine, project: str, username: str, before_pair_id: int | None = None) -> PairView | None:
    """The pair before `before_pair_id` in the user's queue (default: before the next unjudged one, or the last).
    Under a queue order other than the pool's, pairs are served out of position order, so "before" is the
    user's grading order instead: the pair they graded just before this one (default: their last graded)."""
    with session_scope(engine) as session:
        project_id, user_id = _ids(session, project, username)
        queue = (ASSIGNMENTS.c.project_id == project_id) & (ASSIGNMENTS.c.user_id == user_id)
        if before_pair_id is not None:
            ref = session.execute(
                select(ASSIGNMENTS.c.position).where(queue, ASSIGNMENTS.c.pair_id == before_pair_id)
            ).first()
            if ref is None:
                raise Refused(f"pair {before_pair_id} is not assigned to {username!r}")
            bound = ref[0]
        if (
            session.execute(select(PROJECTS.c.queue_order).where(PROJECTS.c.id == project_id)).scalar_one()
            != DEFAULT_ORDER
        ):
            return _graded_before(session, project_id, user_id, before_pair_id)
        if before_pair_id is None:
            todo = _first_todo(session, project_id, user_id)
            bound = todo[1] if todo else None
        stmt = select(ASSIGNMENTS.c.pair_id, ASSIGNMENTS.c.position).where(queue)
        if bound is not None:
            stmt = stmt.where(ASSIGNMENTS.c.position < bound)
        row = session.execute(
            stmt.order_by(ASSIGNMENTS.c.position.desc(), ASSIGNMENTS.c.pair_id.desc()).limit(1)
        ).first()
        return _view(session, project_id, user_id, row[0], row[1]) if row else None


def _graded_before(session: Session, project_id: int, user_id: int, pair_id: int | None) -> PairView | None:
    """The user's pair graded just before `pair_id` (judgment ids grow in grading order), or their last graded."""
    mine = (JUDGMENTS.c.project_id == project_id) & (JUDGMENTS.c.user_id == user_id)
    stmt = select(JUDGMENTS.c.pair_id, ASSIGNMENTS.c.position).outerjoin(
        ASSIGNMENTS, and_(ASSIGNMENTS.c.pair_id == JUDGMENTS.c.pair_id, ASSIGNMENTS.c.user_id == user_id)
    )
    ref = (
        None
        if pair_id is None
        else session.execute(select(JUDGMENTS.c.id).where(mine, JUDGMENTS.c.pair_id == pair_id)).first()
    )
    if ref is not None:
        stmt = stmt.where(JUDGMENTS.c.id < ref[0])
    row = session.execute(stmt.where(mine).order_by(JUDGMENTS.c.id.desc()).limit(1)).first()
    return _view(session, project_id, user_id, row[0], row[1]) if row else None


@retry_once
def progress(engine: Engine, project: str, username: str) -> Progress:
    """Judged / assigned for the user, overall and per query in queue order; a pair sent back for re-judging
    is not judged until it is graded again."""
    with session_scope(engine) as session:
        project_id, user_id = _ids(session, project, username)
        judged = _DONE
        rows = session.execute(
            select(col(Query.external_id), func.count(JUDGMENTS.c.id), func.count(ASSIGNMENTS.c.id))
            .select_from(ASSIGNMENTS)
            .join(PAIRS, PAIRS.c.id == ASSIGNMENTS.c.pair_id)
            .join(Query, col(Query.id) == PAIRS.c.query_id)
            .outerjoin(JUDGMENTS, judged)
            .where(ASSIGNMENTS.c.project_id == project_id, ASSIGNMENTS.c.user_id == user_id)
            .group_by(Query.external_id)
            .order_by(func.min(ASSIGNMENTS.c.position))
        ).all()
        per_query = [(q, int(d), int(n)) for q, d, n in rows]
        return Progress(sum(d for _, d, _ in per_query), sum(n for _, _, n in per_query), per_query)


def annotator_stats(engine: Engine, project: str) -> pd.DataFrame:
    """Per user with assignments or judgments: assigned, done (assigned and judged, not waiting to be re-judged),
    judged, median seconds, last active."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        judged = _DONE
        assigned = dict(
            (u, (int(n), int(d)))
            for u, n, d in session.execute(
                select(ASSIGNMENTS.c.user_id, func.count(ASSIGNMENTS.c.id), func.count(JUDGMENTS.c.id))
                .select_from(ASSIGNMENTS)
                .outerjoin(JUDGMENTS, judged)
                .where(ASSIGNMENTS.c.project_id == project_id)
                .group_by(ASSIGNMENTS.c.user_id)
            )
        )
        last = dict(
            session.execute(
                select(JUDGMENTS.c.user_id, func.max(JUDGMENTS.c.updated_at))
                .where(JUDGMENTS.c.project_id == project_id)
                .group_by(JUDGMENTS.c.user_id)
            ).all()
        )
        # bare (user, seconds) tuples from the cursor: a Row and a datetime per judgment cost seconds at 1M
        seconds = (
            session.connection()
            .execute(select(JUDGMENTS.c.user_id, JUDGMENTS.c.seconds_spent).where(JUDGMENTS.c.project_id == project_id))
            .cursor.fetchall()
        )
        names = dict(session.execute(select(col(User.id), col(User.username))).all())
    frame = pd.DataFrame(seconds, columns=["user_id", "seconds"]).astype({"seconds": "float64"})
    per_user = frame.groupby("user_id").agg(judged=("seconds", "size"), median_seconds=("seconds", "median"))
    per_user["last_active"] = pd.Series(last, dtype=object)
    users = sorted(set(assigned) | set(per_user.index), key=lambda u: names[u])
    out = pd.DataFrame(
        {
            "username": [names[u] for u in users],
            "assigned": [assigned.get(u, (0, 0))[0] for u in users],
            "done": [assigned.get(u, (0, 0))[1] for u in users],
            "judged": [int(per_user["judged"].get(u, 0)) for u in users],
            "median_seconds": [per_user["median_seconds"].get(u, float("nan")) for u in users],
            "last_active": [per_user["last_active"].get(u) for u in users],
        }
    )
    return out.astype({"assigned": "int64", "done": "int64", "judged": "int64", "median_seconds": "float64"})

"""The golden-set schema: SQLModel tables with the CHECK and UNIQUE constraints the database enforces."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    Index,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    inspect,
    true,
)
from sqlmodel import Field, SQLModel

from eval_core.thresholds import AGREEMENT_THRESHOLD
from eval_core.vocab import ANNOTATOR_KINDS, DEFAULT_ORDER, ORDER_NAMES, ROLES, RULES, AnnotatorKind


def utcnow() -> datetime:
    """Timezone-aware UTC now: every timestamp in the store is UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """TIMESTAMP WITH TIME ZONE that reads back as aware UTC on every engine (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        return value.astimezone(UTC) if value is not None and value.tzinfo is not None else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def table_of(model: type[SQLModel]) -> Table:
    """A table model's Core table, typed: SQLModel sets `Model.__table__` without declaring it, so Core
    statements (bulk inserts, updates, joins on `.c`) take the table from here."""
    table = inspect(model).local_table
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not a table model")
    return table


class _Stored(Protocol):
    @property
    def id(self) -> int | None: ...


def pk(row: _Stored) -> int:
    """A stored row's id as an int: SQLModel types `id` as `int | None` (None until the row is flushed), and a
    row read from the store always has one."""
    if row.id is None:
        raise ValueError(f"{type(row).__name__} has no id: it was never flushed")
    return row.id


def _ts(**kw: Any) -> Any:
    """A timezone-aware timestamp column defaulting to now."""
    return Field(default_factory=utcnow, sa_type=UTCDateTime, **kw)


class User(SQLModel, table=True):
    """A person: annotators grade, leads set up, adjudicate and release. No password ⇒ cannot log in.
    A `model` annotator is a model judge: its model name, prompt version and parameters say which."""

    __tablename__ = "users"
    __table_args__ = (
        CheckConstraint(f"role IN ({', '.join(repr(r) for r in ROLES)})", name="ck_users_role"),
        CheckConstraint(f"kind IN ({', '.join(repr(k) for k in ANNOTATOR_KINDS)})", name="ck_users_kind"),
        CheckConstraint(
            f"kind = '{AnnotatorKind.MODEL}' OR (model_name IS NULL AND prompt_version IS NULL)",
            name="ck_users_model_fields",
        ),
    )
    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(max_length=200, unique=True, index=True)
    role: str = Field(max_length=20)
    password_hash: str | None = Field(default=None, max_length=400)
    active: bool = True
    created_at: datetime = _ts()
    kind: str = Field(
        default=AnnotatorKind.HUMAN.value, max_length=10, sa_column_kwargs={"server_default": AnnotatorKind.HUMAN.value}
    )
    model_name: str | None = Field(default=None, max_length=200)
    prompt_version: str | None = Field(default=None, max_length=64)
    model_params: dict | None = Field(default=None, sa_type=JSON)
    probes: dict | None = Field(default=None, sa_type=JSON)  # a model judge's last judge-probe summary


class Project(SQLModel, table=True):
    """A golden-set project: grading scale and grade labels, overlap policy, agreement threshold, queue order."""

    __tablename__ = "projects"
    __table_args__ = (
        CheckConstraint("scale_min >= 0 AND scale_max > scale_min AND scale_max <= 100", name="ck_projects_scale"),
        CheckConstraint("overlap >= 1", name="ck_projects_overlap"),
        CheckConstraint("overlap_fraction > 0 AND overlap_fraction <= 1", name="ck_projects_fraction"),
        CheckConstraint("agreement_threshold >= -1 AND agreement_threshold <= 1", name="ck_projects_threshold"),
        CheckConstraint(
            f"queue_order IN ({', '.join(repr(name) for name in ORDER_NAMES)})", name="ck_projects_queue_order"
        ),
        CheckConstraint("qualify_pairs IS NULL OR qualify_pairs >= 2", name="ck_projects_qualify_pairs"),
        CheckConstraint(
            "qualify_threshold IS NULL OR (qualify_threshold >= -1 AND qualify_threshold <= 1)",
            name="ck_projects_qualify_threshold",
        ),
    )
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True, index=True)
    scale_min: int = 0
    scale_max: int = 3
    overlap: int = 2
    overlap_fraction: float = 1.0
    agreement_threshold: float = AGREEMENT_THRESHOLD
    grade_labels: dict | None = Field(default=None, sa_type=JSON)
    queue_order: str = Field(default=DEFAULT_ORDER, max_length=40, sa_column_kwargs={"server_default": DEFAULT_ORDER})
    created_at: datetime = _ts()
    control_every: int | None = None  # serve one control pair in every N of an annotator's pairs (NULL: none)
    qualify_pairs: int | None = None  # a new annotator first grades this many control pairs (NULL: no round)
    qualify_threshold: float | None = None  # κ the round must reach (NULL: the agreement threshold)


class Guideline(SQLModel, table=True):
    """One version of a project's grading guideline; judgments are stamped with the version in force."""

    __tablename__ = "guidelines"
    __table_args__ = (
        UniqueConstraint("project_id", "version", name="uq_guidelines_version"),
        CheckConstraint("version >= 1", name="ck_guidelines_version"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    version: int
    text: str = Field(sa_type=Text)
    content_hash: str = Field(max_length=64)
    note: str | None = Field(default=None, sa_type=Text)
    created_by_id: int | None = Field(default=None, foreign_key="users.id")
    created_at: datetime = _ts()


class Query(SQLModel, table=True):
    """A golden query, known by its external id within the project; a TREC topic's description and narrative
    are kept as its context for annotators."""

    __tablename__ = "queries"
    __table_args__ = (UniqueConstraint("project_id", "external_id", name="uq_queries_external"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    external_id: str = Field(max_length=500)
    text: str = Field(sa_type=Text)
    category: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, sa_type=Text)
    narrative: str | None = Field(default=None, sa_type=Text)


class Fragment(SQLModel, table=True):
    """A corpus fragment (chunk) that can be judged against queries; `position` orders it within its doc_id."""

    __tablename__ = "fragments"
    __table_args__ = (
        UniqueConstraint("project_id", "external_id", name="uq_fragments_external"),
        Index("ix_fragments_hash", "project_id", "content_hash"),
        Index("ix_fragments_document", "project_id", "doc_id", "position"),  # the neighbours panel (0011)
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    external_id: str = Field(max_length=500)
    doc_id: str | None = Field(default=None, max_length=500)
    title: str | None = Field(default=None, sa_type=Text)
    text: str = Field(sa_type=Text)  # "" while has_text is false
    content_hash: str = Field(max_length=64)
    meta: dict | None = Field(default=None, sa_type=JSON)
    position: int | None = None
    # false: named by a judgment, qrels or run before its text was imported; never served until the text comes (0017)
    has_text: bool = Field(default=True, sa_column_kwargs={"server_default": true()})


class Pair(SQLModel, table=True):
    """A query × fragment to judge, with where the pool found it (runs / bm25) and its best rank."""

    __tablename__ = "pairs"
    __table_args__ = (
        UniqueConstraint("query_id", "fragment_id", name="uq_pairs_query_fragment"),
        CheckConstraint("best_rank IS NULL OR best_rank >= 1", name="ck_pairs_rank"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    query_id: int = Field(foreign_key="queries.id", index=True)
    fragment_id: int = Field(foreign_key="fragments.id", index=True)
    sources: list | None = Field(default=None, sa_type=JSON)
    best_rank: int | None = None
    created_at: datetime = _ts()


class Assignment(SQLModel, table=True):
    """A pair given to one annotator; `position` fixes the order they see pairs in (grouped by query).

    `done` mirrors "this annotator has a judgment for this pair" (kept in the judging transaction), so the
    next pair is one index probe on ix_assignments_todo instead of a scan past every judged pair.
    `rejudge_version` is set when a lead sends the judged pair back to be graded again under that guideline
    version (done is then false although a judgment exists); the new grade clears it.
    """

    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("pair_id", "user_id", name="uq_assignments_pair_user"),
        Index("ix_assignments_queue", "project_id", "user_id", "position"),
        Index("ix_assignments_todo", "project_id", "user_id", "done", "position", "pair_id"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id")
    pair_id: int = Field(foreign_key="pairs.id", index=True)
    user_id: int = Field(foreign_key="users.id")
    position: int
    done: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    rejudge_version: int | None = None
    post_edit_of: int | None = None  # a model judge's user id: this person post-edits (grades blind) its grade
    created_at: datetime = _ts()


class Judgment(SQLModel, table=True):
    """One annotator's current grade for a pair (NULL grade = can't judge, with a reason)."""

    __tablename__ = "judgments"
    __table_args__ = (
        UniqueConstraint("pair_id", "user_id", name="uq_judgments_pair_user"),
        CheckConstraint("grade IS NULL OR (grade >= 0 AND grade <= 100)", name="ck_judgments_grade"),
        CheckConstraint("seconds_spent IS NULL OR seconds_spent >= 0", name="ck_judgments_seconds"),
        CheckConstraint("revision >= 1", name="ck_judgments_revision"),
        Index("ix_judgments_project_user", "project_id", "user_id"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id")
    pair_id: int = Field(foreign_key="pairs.id", index=True)
    user_id: int = Field(foreign_key="users.id")
    grade: int | None = None
    cant_judge_reason: str | None = Field(default=None, sa_type=Text)
    note: str | None = Field(default=None, sa_type=Text)
    guideline_id: int | None = Field(default=None, foreign_key="guidelines.id")
    seconds_spent: float | None = None
    revision: int = 1
    created_at: datetime = _ts()
    updated_at: datetime = _ts()
    prompt_version: str | None = Field(default=None, max_length=64)  # a model judge's prompt (NULL for people)


class JudgmentHistory(SQLModel, table=True):
    """Every change to a judgment, old → new, who and when; rows are never updated or deleted."""

    __tablename__ = "judgment_history"
    __table_args__ = (
        CheckConstraint("action IN ('create', 'update', 'undo', 'import')", name="ck_history_action"),
        Index("ix_history_pair_user", "pair_id", "user_id"),
        Index("ix_history_project_latest", "project_id", "id"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    pair_id: int = Field(foreign_key="pairs.id")
    user_id: int = Field(foreign_key="users.id")
    action: str = Field(max_length=10)
    old_grade: int | None = None
    new_grade: int | None = None
    old_note: str | None = Field(default=None, sa_type=Text)
    new_note: str | None = Field(default=None, sa_type=Text)
    old_cant_judge_reason: str | None = Field(default=None, sa_type=Text)
    new_cant_judge_reason: str | None = Field(default=None, sa_type=Text)
    guideline_id: int | None = Field(default=None, foreign_key="guidelines.id")
    changed_by_id: int | None = Field(default=None, foreign_key="users.id")
    changed_at: datetime = _ts()
    prompt_version: str | None = Field(default=None, max_length=64)


class Adjudication(SQLModel, table=True):
    """A lead's final grade for a pair; append-only, the latest row per pair is in force."""

    __tablename__ = "adjudications"
    __table_args__ = (
        CheckConstraint("grade >= 0 AND grade <= 100", name="ck_adjudications_grade"),
        Index("ix_adjudications_project_latest", "project_id", "id"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    pair_id: int = Field(foreign_key="pairs.id", index=True)
    grade: int
    reason: str = Field(sa_type=Text)
    user_id: int = Field(foreign_key="users.id")
    created_at: datetime = _ts()


class ControlPair(SQLModel, table=True):
    """A pair with a settled grade (from an adjudicated release, or set by a lead with a reason), served blind
    among an annotator's pairs to measure them against it."""

    __tablename__ = "control_pairs"
    __table_args__ = (
        UniqueConstraint("pair_id", name="uq_control_pairs_pair"),
        CheckConstraint("grade >= 0 AND grade <= 100", name="ck_control_pairs_grade"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    pair_id: int = Field(foreign_key="pairs.id")
    grade: int
    reason: str = Field(sa_type=Text)
    release_id: int | None = Field(default=None, foreign_key="releases.id")
    created_by_id: int | None = Field(default=None, foreign_key="users.id")
    created_at: datetime = _ts()


class RoundStatus(StrEnum):
    """Where an annotator's qualification round stands: grading it, passed (κ ≥ threshold), failed (waits for a
    lead), opened by a lead (whatever the round's outcome), or closed by a lead after the queue was open."""

    IN_ROUND = "in_round"
    PASSED = "passed"
    FAILED = "failed"
    OPENED = "opened"
    CLOSED = "closed"


OPEN_STATUSES = (RoundStatus.PASSED, RoundStatus.OPENED)  # the annotator's regular queue is open


class QualificationRound(SQLModel, table=True):
    """One of an annotator's qualification rounds in a project, numbered by `attempt` (the latest is in force):
    its size and threshold when it started, the κ it reached and when, the lead who granted it when it is a
    retake, the lead who opened the regular queue (who, when), and the lead who closed it again (who, when,
    why). A round is never rewritten after it closes: a retake or a reopening is the next attempt (pairs 0 for
    a reopening), so every decision stays on record."""

    __tablename__ = "qualification_rounds"
    __table_args__ = (
        UniqueConstraint("project_id", "user_id", "attempt", name="uq_qualification_rounds_attempt"),
        CheckConstraint(
            f"status IN ({', '.join(repr(s.value) for s in RoundStatus)})", name="ck_qualification_rounds_status"
        ),
        CheckConstraint("pairs >= 0", name="ck_qualification_rounds_pairs"),
        CheckConstraint("attempt >= 1", name="ck_qualification_rounds_attempt"),
        CheckConstraint(
            f"status != '{RoundStatus.OPENED.value}' OR (opened_by_id IS NOT NULL AND opened_at IS NOT NULL)",
            name="ck_qualification_rounds_opened",
        ),
        CheckConstraint(
            f"status != '{RoundStatus.CLOSED.value}' OR (closed_by_id IS NOT NULL AND closed_at IS NOT NULL)",
            name="ck_qualification_rounds_closed",
        ),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    user_id: int = Field(foreign_key="users.id")
    attempt: int = 1
    status: str = Field(max_length=10)
    pairs: int
    threshold: float
    weights: str = Field(max_length=20)
    kappa: float | None = None
    started_at: datetime = _ts()
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    granted_by_id: int | None = Field(default=None, foreign_key="users.id")  # the lead who granted a retake
    opened_by_id: int | None = Field(default=None, foreign_key="users.id")
    opened_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    closed_by_id: int | None = Field(default=None, foreign_key="users.id")
    closed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    closed_reason: str | None = Field(default=None, sa_type=Text)


class QualificationGrade(SQLModel, table=True):
    """A control pair of a qualification round, in round order, and the grade given (once: the settled grade
    and reason are shown right after). Not a judgment: never released, never in agreement."""

    __tablename__ = "qualification_grades"
    __table_args__ = (
        UniqueConstraint("round_id", "pair_id", name="uq_qualification_grades_pair"),
        UniqueConstraint("round_id", "position", name="uq_qualification_grades_position"),
        CheckConstraint("grade IS NULL OR (grade >= 0 AND grade <= 100)", name="ck_qualification_grades_grade"),
        CheckConstraint("settled >= 0 AND settled <= 100", name="ck_qualification_grades_settled"),
    )
    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="qualification_rounds.id", index=True)
    pair_id: int = Field(foreign_key="pairs.id")
    position: int
    settled: int  # the control pair's settled grade, as shown after grading
    reason: str = Field(sa_type=Text)  # the lead's reason, as shown after grading
    grade: int | None = None
    graded_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class Release(SQLModel, table=True):
    """An immutable, versioned golden set: its files are stored inline so they never change; `text_hashes` keeps
    each judged pair's query and fragment text hash, so a later re-import that changes a text is noticed."""

    __tablename__ = "releases"
    __table_args__ = (
        UniqueConstraint("project_id", "version", name="uq_releases_version"),
        CheckConstraint("version >= 1", name="ck_releases_version"),
        CheckConstraint(f"rule IN ({', '.join(repr(rule) for rule in RULES)})", name="ck_releases_rule"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    version: int
    rule: str = Field(max_length=20)
    min_grades: int = 1
    content_hash: str = Field(max_length=64)
    card: dict = Field(default_factory=dict, sa_type=JSON)
    qrels_trec: str = Field(sa_type=Text)
    judgments_jsonl: str = Field(sa_type=Text)
    text_hashes: dict | None = Field(default=None, sa_type=JSON)
    created_by_id: int | None = Field(default=None, foreign_key="users.id")
    created_at: datetime = _ts()


class Run(SQLModel, table=True):
    """A retrieval run imported into the project (used for pooling and tracked evaluations)."""

    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_runs_name"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    name: str = Field(max_length=200)
    content_hash: str = Field(max_length=64)
    n_lines: int = 0
    created_at: datetime = _ts()
    produced_by: str | None = Field(default=None, max_length=200)  # the model it was produced with, if any
    request: dict | None = Field(default=None, sa_type=JSON)  # a live-search pool's endpoint and template (0017)


class RunEntry(SQLModel, table=True):
    """One ranked line of a run, in trec_eval order (rank recomputed from score, ties by docid)."""

    __tablename__ = "run_entries"
    __table_args__ = (
        Index("ix_run_entries_rank", "run_id", "query_id", "rank"),
        CheckConstraint("rank >= 1", name="ck_run_entries_rank"),
    )
    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="runs.id")
    query_id: int = Field(foreign_key="queries.id")
    doc_external_id: str = Field(max_length=500)
    fragment_id: int | None = Field(default=None, foreign_key="fragments.id")
    rank: int
    score: float


class Evaluation(SQLModel, table=True):
    """A run scored against a release, kept for trend charts and release diffs."""

    __tablename__ = "evaluations"
    __table_args__ = (UniqueConstraint("run_id", "release_id", name="uq_evaluations_run_release"),)
    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="runs.id", index=True)
    release_id: int = Field(foreign_key="releases.id", index=True)
    means: dict = Field(default_factory=dict, sa_type=JSON)
    per_query: dict | None = Field(default=None, sa_type=JSON)
    warnings: list | None = Field(default=None, sa_type=JSON)
    created_at: datetime = _ts()


class UserSession(SQLModel, table=True):
    """A login: only the SHA-256 of its random token is kept, so a leaked table opens no session."""

    __tablename__ = "sessions"
    __table_args__ = (
        CheckConstraint("length(token_hash) = 64", name="ck_sessions_token_hash"),
        CheckConstraint("expires_at > created_at", name="ck_sessions_expiry"),
        CheckConstraint("revoked_at IS NULL OR revoked_at >= created_at", name="ck_sessions_revoked"),
        Index("ix_sessions_user_open", "user_id", "revoked_at"),
    )
    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, index=True)
    user_id: int = Field(foreign_key="users.id")
    client: str | None = Field(default=None, max_length=200)
    created_at: datetime = _ts()
    expires_at: datetime = Field(sa_type=UTCDateTime)
    last_seen_at: datetime = _ts()
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class LoginAttempt(SQLModel, table=True):
    """One password attempt, by account name and client, kept so back-off holds across sessions and processes."""

    __tablename__ = "login_attempts"
    __table_args__ = (
        Index("ix_login_attempts_username", "username", "attempted_at"),
        Index("ix_login_attempts_client", "client", "attempted_at"),
    )
    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(max_length=200)
    client: str = Field(max_length=200)
    succeeded: bool | None = Field(default=None)  # None: in flight, its password still being checked
    attempted_at: datetime = _ts()


class JudgeCall(SQLModel, table=True):
    """A model judge's answer for a pair, kept so the same (pair, model, prompt version, inputs) is never asked
    twice; only answers that gave a grade are kept. No key or header is ever stored."""

    __tablename__ = "judge_calls"
    __table_args__ = (
        UniqueConstraint("pair_id", "model", "prompt_version", "input_hash", name="uq_judge_calls_key"),
        CheckConstraint("prompt_tokens >= 0 AND completion_tokens >= 0", name="ck_judge_calls_tokens"),
    )
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    pair_id: int = Field(foreign_key="pairs.id", index=True)
    model: str = Field(max_length=200)
    prompt_version: str = Field(max_length=64)
    input_hash: str = Field(max_length=64)
    grade: int
    answer: str | None = Field(default=None, sa_type=Text)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    created_at: datetime = _ts()

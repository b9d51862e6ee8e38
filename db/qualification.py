"""The qualification round: a new annotator of a project first grades N of its control pairs and, after each,
sees the settled grade and the lead's reason; their regular queue opens when their linear-weighted κ against the
settled grades on the round reaches the threshold, or when a lead opens it (who and when recorded). A lead may
close an open queue again (who, when, why) and grant a retake after a failed round or a close: a new round on
control pairs the annotator has not met in a round. An annotator's rounds are numbered (`attempt`); the latest
is in force and the earlier ones are kept as they ended.

"New" means an active human annotator with no judgment in the project: people who graded before the round was
switched on, leads and model judges never take one. Round grades are kept in their own table (the history of
the round), not as judgments: they are never released as labels and never count in agreement, and a pair
seen in a round is never served to that annotator again (not as a round pair, not blind as a control pair,
not by assign(), not sent back for re-judging), since they know its settled grade.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import bindparam, delete, exists, func, insert, select, update
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col

from db.accounts.permissions import Actor, require_lead
from db.projects import project_row, project_scale
from db.store.engine import session_scope
from db.store.models import (
    OPEN_STATUSES,
    Assignment,
    ControlPair,
    Fragment,
    Judgment,
    Pair,
    Project,
    QualificationGrade,
    QualificationRound,
    Query,
    RoundStatus,
    User,
    table_of,
    utcnow,
)
from eval_core.agreement.control import DEFAULT_WEIGHTS, score
from eval_core.errors import Conflict, NotFound, Refused
from eval_core.io.records import check_note
from eval_core.vocab import AnnotatorKind, Role

MIN_PAIRS = 2  # κ needs at least two pairs to mean anything
ROUNDS, ROUND_GRADES = table_of(QualificationRound), table_of(QualificationGrade)
ASSIGNMENTS, FRAGMENTS, JUDGMENTS, PAIRS, QUERIES, USERS = (
    table_of(m) for m in (Assignment, Fragment, Judgment, Pair, Query, User)
)


@dataclass(frozen=True)
class QualifySettings:
    """A project's round: its size (None: no round), the κ it must reach, and how many control pairs exist."""

    pairs: int | None
    threshold: float
    threshold_is_default: bool
    controls: int

    def sentence(self) -> str:
        """The setting in words."""
        if self.pairs is None:
            return "No qualification round: new annotators start on their regular queue."
        source = " (the project's agreement threshold)" if self.threshold_is_default else ""
        return (
            f"New annotators first grade {self.pairs} control pairs, seeing each settled grade and reason; their "
            f"queue opens at κ ≥ {self.threshold:g}{source}, or when a lead opens it."
        )


@dataclass(frozen=True)
class RoundState:
    """One of an annotator's rounds: status, progress, κ reached, the lead who granted it (a retake), opened
    the queue or closed it again, if one did."""

    username: str
    status: RoundStatus
    pairs: int
    graded: int
    threshold: float
    weights: str
    kappa: float | None
    started_at: datetime
    finished_at: datetime | None
    opened_by: str | None
    opened_at: datetime | None
    attempt: int = 1
    granted_by: str | None = None
    closed_by: str | None = None
    closed_at: datetime | None = None
    closed_reason: str | None = None

    @property
    def open(self) -> bool:
        """Whether the annotator's regular queue is open."""
        return self.status in OPEN_STATUSES

    def sentence(self) -> str:
        """Where the round stands, in words (the annotator and the lead read the same one)."""
        score = (
            f"κ {self.kappa:.2f}" if self.kappa is not None else "κ undefined (the grades have no variation to measure)"
        )
        if self.status == RoundStatus.IN_ROUND:
            retake = f"Retake granted by lead {self.granted_by}: " if self.granted_by else "Qualification round: "
            return f"{retake}{self.graded} of {self.pairs} control pairs graded."
        if self.status == RoundStatus.PASSED:
            return (
                f"Passed the qualification round: {score} against the settled grades, at or above "
                f"{self.threshold:g}. The regular queue is open."
            )
        if self.status == RoundStatus.FAILED:
            return (
                f"Did not pass the qualification round: {score} against the settled grades, below "
                f"{self.threshold:g}. The regular queue stays closed until a lead opens it or grants a retake."
            )
        graded = f" after {self.graded} of {self.pairs} round pairs ({score})" if self.graded else ""
        if self.status == RoundStatus.CLOSED:
            why = f"Reason: {self.closed_reason}" if self.closed_reason else "No reason given."
            return (
                f"Regular queue closed by lead {self.closed_by} on {_when(self.closed_at)}{graded}; it stays closed "
                f"until a lead reopens it or grants a retake. {why}"
            )
        return f"Regular queue opened by lead {self.opened_by} on {_when(self.opened_at)}{graded}."

    def to_dict(self) -> dict:
        """JSON-able form."""
        out = {k: v for k, v in self.__dict__.items()}
        out["status"] = self.status.value
        for key in ("started_at", "finished_at", "opened_at", "closed_at"):
            out[key] = out[key].isoformat() if out[key] else None
        return out | {"open": self.open, "sentence": self.sentence()}


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "?"


@dataclass(frozen=True)
class RoundPair:
    """A pair of the round as the annotator sees it; `settled` and `reason` are None until they graded it."""

    pair_id: int
    position: int
    total: int
    query_external_id: str
    query_text: str
    fragment_external_id: str
    fragment_title: str | None
    fragment_text: str
    fragment_doc_id: str | None
    grade: int | None
    settled: int | None
    reason: str | None


# --- settings -------------------------------------------------------------------------------------------------


def set_qualification(
    engine: Engine, project: str, pairs: int | None, threshold: float | None = None, *, actor: Actor
) -> QualifySettings:
    """Switch the round on with `pairs` control pairs (None or 0: off) and its κ threshold (None: the project's
    agreement threshold). Rounds already under way keep the size and threshold they started with. Leads only."""
    if pairs == 0:
        pairs = None
    if pairs is not None and pairs < MIN_PAIRS:
        raise ValueError(f"a qualification round needs at least {MIN_PAIRS} control pairs, got {pairs}")
    if threshold is not None and not -1 <= threshold <= 1:
        raise ValueError(f"the round's κ threshold must be between -1 and 1, got {threshold:g}")
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        proj = project_row(session, project, lock=True)
        controls = _control_count(session, proj)
        if pairs is not None and pairs > controls:
            raise ValueError(
                f"project {project!r} has {controls} control pair(s), fewer than the {pairs} a round "
                "needs: add control pairs first (qrelkit control set / add)"
            )
        proj.qualify_pairs, proj.qualify_threshold = pairs, threshold
        session.add(proj)
        session.flush()
        return _settings(proj, controls)


def qualification_settings(engine: Engine, project: str) -> QualifySettings:
    """The project's round setting."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        return _settings(proj, _control_count(session, proj))


def _settings(proj: Project, controls: int) -> QualifySettings:
    threshold = proj.agreement_threshold if proj.qualify_threshold is None else proj.qualify_threshold
    return QualifySettings(proj.qualify_pairs, float(threshold), proj.qualify_threshold is None, controls)


def _control_count(session: Session, proj: Project) -> int:
    return int(
        session.execute(
            select(func.count()).select_from(ControlPair).where(col(ControlPair.project_id) == proj.id)
        ).scalar_one()
    )


# --- the gate ---------------------------------------------------------------------------------------------------


def _latest(conn: Connection | Session, project_id: int, user_id: int, lock: bool = False) -> Any:
    """The user's round in force in the project (their latest attempt): id, status, attempt; None if none."""
    stmt = (
        select(ROUNDS.c.id, ROUNDS.c.status, ROUNDS.c.attempt)
        .where(ROUNDS.c.project_id == project_id, ROUNDS.c.user_id == user_id)
        .order_by(ROUNDS.c.attempt.desc())
        .limit(1)
    )
    return conn.execute(stmt.with_for_update() if lock else stmt).first()


def queue_open(conn: Connection, project_id: int, user_id: int) -> bool:
    """Whether the user may grade the project's regular pairs. Leads and model judges always may. A human
    annotator may not while a lead's close is in force (whatever the round setting); otherwise they may when the
    project has no round, when their latest round passed or a lead opened their queue, or when they have no
    round and graded before it was switched on (no judgment: new)."""
    row = conn.execute(
        select(table_of(Project).c.qualify_pairs, USERS.c.role, USERS.c.kind)
        .select_from(table_of(Project).join(USERS, USERS.c.id == user_id))
        .where(table_of(Project).c.id == project_id)
    ).first()
    if row is None or row[1] != Role.ANNOTATOR or row[2] != AnnotatorKind.HUMAN:
        return True
    latest = _latest(conn, project_id, user_id)
    if latest is not None and latest.status == RoundStatus.CLOSED:
        return False
    if row[0] is None:
        return True
    if latest is not None:
        return latest.status in OPEN_STATUSES
    return bool(
        conn.execute(
            select(exists().where(JUDGMENTS.c.project_id == project_id, JUDGMENTS.c.user_id == user_id))
        ).scalar()
    )


def round_pair_ids(session: Session, project_id: int) -> dict[int, set[int]]:
    """Per user id, the pairs of the project they met in any of their qualification rounds (never to be served
    to them again: they know the settled grade)."""
    out: dict[int, set[int]] = defaultdict(set)
    for uid, pid in session.execute(
        select(ROUNDS.c.user_id, ROUND_GRADES.c.pair_id)
        .join(ROUND_GRADES, ROUND_GRADES.c.round_id == ROUNDS.c.id)
        .where(ROUNDS.c.project_id == project_id)
    ).all():
        out[int(uid)].add(int(pid))
    return out


# --- the annotator's round ------------------------------------------------------------------------------------


def round_for(engine: Engine, project: str, username: str) -> RoundState | None:
    """The user's round in force in the project, started (its control pairs chosen) when they are new and the
    project has a round; None when no round applies to them (their regular queue is open without one). A queue
    a lead closed is returned closed even with the round switched off. Read first, so the page's every run takes
    no write lock once the round is settled."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        assert proj.id is not None
        user_id = _user_id(session, username)
        state = _state(session, proj.id, user_id)
        if proj.qualify_pairs is None:  # switched off: no round gates anyone, under way or failed; a close holds
            return state if state is not None and state.status == RoundStatus.CLOSED else None
        if state is not None or queue_open(session.connection(), proj.id, user_id):
            return state
    with session_scope(engine, write=True) as session:
        proj = project_row(session, project, lock=True)
        assert proj.id is not None
        if proj.qualify_pairs is None:
            return None
        if _state(session, proj.id, user_id) is None and not queue_open(session.connection(), proj.id, user_id):
            _start(session, proj, user_id, _fresh_controls(session, proj.id, user_id))
        return _state(session, proj.id, user_id)


def _fresh_controls(session: Session, project_id: int, user_id: int) -> list[Any]:
    """The project's control pairs (pair, settled grade, reason) the user has neither met in a round nor judged:
    the only ones a round of theirs may hold (a round shows the settled grade)."""
    met = (
        select(ROUND_GRADES.c.pair_id)
        .join(ROUNDS, ROUNDS.c.id == ROUND_GRADES.c.round_id)
        .where(ROUNDS.c.project_id == project_id, ROUNDS.c.user_id == user_id)
    )
    judged = select(JUDGMENTS.c.pair_id).where(JUDGMENTS.c.project_id == project_id, JUDGMENTS.c.user_id == user_id)
    return list(
        session.execute(
            select(col(ControlPair.pair_id), col(ControlPair.grade), col(ControlPair.reason))
            .where(
                col(ControlPair.project_id) == project_id,
                col(ControlPair.pair_id).not_in(met),
                col(ControlPair.pair_id).not_in(judged),
            )
            .order_by(col(ControlPair.pair_id))
        ).all()
    )


def _start(
    session: Session,
    proj: Project,
    user_id: int,
    controls: Sequence[Any],
    attempt: int = 1,
    granted_by_id: int | None = None,
) -> None:
    """Open a round (the user's `attempt`-th; a retake names the lead who granted it): choose its control pairs
    from `controls` (spread over the settled grades, those not in the user's queue first), and take any chosen
    pair out of the user's queue (they will know its settled grade)."""
    assert proj.id is not None and proj.qualify_pairs is not None
    queued = set(
        session.execute(
            select(col(Assignment.pair_id)).where(
                col(Assignment.project_id) == proj.id, col(Assignment.user_id) == user_id
            )
        ).scalars()
    )
    chosen = choose_round(controls, queued, proj.qualify_pairs, seed=user_id if attempt == 1 else [user_id, attempt])
    threshold = proj.agreement_threshold if proj.qualify_threshold is None else proj.qualify_threshold
    round_id = session.execute(
        insert(ROUNDS).returning(ROUNDS.c.id),
        {
            "project_id": proj.id,
            "user_id": user_id,
            "attempt": attempt,
            "status": RoundStatus.IN_ROUND.value,
            "pairs": len(chosen),
            "threshold": float(threshold),
            "weights": DEFAULT_WEIGHTS,
            "started_at": utcnow(),
            "granted_by_id": granted_by_id,
        },
    ).scalar_one()
    session.execute(
        insert(ROUND_GRADES),
        [
            {"round_id": round_id, "pair_id": p, "position": i + 1, "settled": g, "reason": why}
            for i, (p, g, why) in enumerate(chosen)
        ],
    )
    taken = [p for p, _, _ in chosen if p in queued]
    if taken:
        session.execute(delete(ASSIGNMENTS).where(ASSIGNMENTS.c.user_id == user_id, ASSIGNMENTS.c.pair_id.in_(taken)))
        left = (
            session.execute(
                select(ASSIGNMENTS.c.id)
                .where(ASSIGNMENTS.c.project_id == proj.id, ASSIGNMENTS.c.user_id == user_id)
                .order_by(ASSIGNMENTS.c.position, ASSIGNMENTS.c.pair_id)
            )
            .scalars()
            .all()
        )
        if left:
            session.connection().execute(
                update(ASSIGNMENTS).where(ASSIGNMENTS.c.id == bindparam("aid")).values(position=bindparam("pos")),
                [{"aid": a, "pos": i + 1} for i, a in enumerate(left)],
            )


def choose_round(controls: Sequence, queued: set[int], n: int, seed: int | Sequence[int]) -> list[tuple[int, int, str]]:
    """n of the (pair, settled grade, reason) control pairs: taken a grade at a time in turn (so the round has
    the variation κ needs), within a grade those not in the user's queue first, seeded; returned shuffled."""
    rng = np.random.default_rng(seed)
    by_grade: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    for pair, grade, reason in controls:
        by_grade[int(grade)].append((int(pair), int(grade), str(reason)))
    stacks = []
    for grade in sorted(by_grade):
        items = by_grade[grade]
        noise = rng.random(len(items))
        order = sorted(range(len(items)), key=lambda i: (items[i][0] in queued, noise[i]))
        stacks.append([items[i] for i in order])
    chosen: list[tuple[int, int, str]] = []
    while len(chosen) < n and any(stacks):
        for stack in stacks:
            if stack and len(chosen) < n:
                chosen.append(stack.pop(0))
    return [chosen[i] for i in rng.permutation(len(chosen))]


def round_pairs(engine: Engine, project: str, username: str) -> list[RoundPair]:
    """The pairs of the user's round in force, in round order; settled grade and reason only for those they
    graded."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        return _pairs(session, int(proj.id or 0), _user_id(session, username))


def next_round_pair(engine: Engine, project: str, username: str) -> RoundPair | None:
    """The user's first ungraded round pair, None when the round is graded through (or there is none)."""
    return next((p for p in round_pairs(engine, project, username) if p.grade is None), None)


def grade_round_pair(
    engine: Engine, project: str, username: str, pair_id: int, grade: int
) -> tuple[RoundPair, RoundState]:
    """Record the user's grade for one pair of their round in force (once: the settled grade is shown after it)
    and, when it was the last, score the round; returns the pair with its settled grade and reason, and the
    round's state."""
    with session_scope(engine, write=True) as session:
        proj = project_row(session, project)
        assert proj.id is not None
        user_id = _user_id(session, username, active=True)
        row = _latest(session, proj.id, user_id, lock=True)
        if row is None:
            raise NotFound(f"{username!r} has no qualification round in project {project!r}")
        if row.status == RoundStatus.CLOSED:
            raise Refused(
                f"a lead closed the regular queue of {username!r} in project {project!r}: no round is "
                "graded until a lead reopens it or grants a retake"
            )
        low, high = project_scale(proj)
        if isinstance(grade, bool) or not isinstance(grade, int) or not low <= grade <= high:
            raise ValueError(f"grade {grade!r} is outside the scale {low}-{high}")
        item = session.execute(
            select(ROUND_GRADES.c.id, ROUND_GRADES.c.grade).where(
                ROUND_GRADES.c.round_id == row.id, ROUND_GRADES.c.pair_id == pair_id
            )
        ).first()
        if item is None:
            raise Refused(f"pair {pair_id} is not in {username!r}'s qualification round")
        if item[1] is not None:
            raise Conflict(
                f"pair {pair_id} of the qualification round is already graded ({item[1]}): a round grade "
                "is given once, before the settled grade is shown"
            )
        session.execute(
            update(ROUND_GRADES).where(ROUND_GRADES.c.id == item[0]).values(grade=grade, graded_at=utcnow())
        )
        pairs = _pairs(session, proj.id, user_id)
        if row.status == RoundStatus.IN_ROUND and all(p.grade is not None for p in pairs):
            _finish(session, row.id, pairs, (low, high))
        state = _state(session, proj.id, user_id)
        assert state is not None
        return next(p for p in pairs if p.pair_id == pair_id), state


def round_kappa(pairs: list[RoundPair], scale: tuple[int, int], weights: str = DEFAULT_WEIGHTS) -> float | None:
    """κ (`weights`, linear by default) of the round's grades against the settled grades on the full scale (the
    control report's κ); None when undefined (no variation)."""
    graded = [p for p in pairs if p.grade is not None and p.settled is not None]
    low = scale[0]
    frame = pd.DataFrame(
        {
            "query_id": [p.query_external_id for p in graded],
            "given": [int(p.grade or 0) - low for p in graded],
            "settled": [int(p.settled or 0) - low for p in graded],
        }
    )
    return score("", None, frame, scale[1] - low + 1, weights, 0, 0, 0.95).kappa.value


def _finish(session: Session, round_id: int, pairs: list[RoundPair], scale: tuple[int, int]) -> None:
    """Score a graded-through round: passed at κ ≥ threshold, else failed (an undefined κ cannot pass)."""
    threshold, weights = session.execute(
        select(ROUNDS.c.threshold, ROUNDS.c.weights).where(ROUNDS.c.id == round_id)
    ).one()
    kappa = round_kappa(pairs, scale, weights)
    passed = kappa is not None and kappa >= threshold
    session.execute(
        update(ROUNDS)
        .where(ROUNDS.c.id == round_id)
        .values(status=(RoundStatus.PASSED if passed else RoundStatus.FAILED).value, kappa=kappa, finished_at=utcnow())
    )


# --- the lead's side --------------------------------------------------------------------------------------------


def _named_lead(actor: Actor, doing: str) -> str:
    """A lead's decision on a queue records which lead decided: the CLI operator must name one."""
    if not isinstance(actor, str):
        raise Refused(
            f"{doing} records which lead decided, so the CLI operator cannot do it anonymously: name an "
            "active lead (from the CLI, --lead LEAD)"
        )
    return actor


@contextmanager
def _lead_decides(engine: Engine, project: str, actor: Actor) -> Iterator[tuple[Session, int | None, Project]]:
    """A write session in which a lead acts on `project` (its row locked): the session, the lead's id (checked
    active) and the project row."""
    with session_scope(engine, write=True) as session:
        lead_id = require_lead(session, actor)
        yield session, lead_id, project_row(session, project, lock=True)


def _threshold(proj: Project) -> float:
    return float(proj.agreement_threshold if proj.qualify_threshold is None else proj.qualify_threshold)


def open_queue(engine: Engine, project: str, username: str, *, actor: Actor) -> RoundState:
    """A lead opens the user's regular queue, whatever their round's outcome (also before or without one, and
    after a lead closed it: a new attempt with no pairs, so the close stays on record); the decision records which
    lead and when, so the CLI operator must name the lead (actor=USERNAME). An open queue is left as it is."""
    _named_lead(actor, "opening a queue")
    with _lead_decides(engine, project, actor) as (session, lead_id, proj):
        assert proj.id is not None
        user_id = _user_id(session, username)
        latest = _latest(session, proj.id, user_id)
        now = utcnow()
        if latest is None or latest.status == RoundStatus.CLOSED:
            session.execute(
                insert(ROUNDS),
                {
                    "project_id": proj.id,
                    "user_id": user_id,
                    "attempt": 1 if latest is None else latest.attempt + 1,
                    "status": RoundStatus.OPENED.value,
                    "pairs": 0,
                    "threshold": _threshold(proj),
                    "weights": DEFAULT_WEIGHTS,
                    "started_at": now,
                    "opened_by_id": lead_id,
                    "opened_at": now,
                },
            )
        elif latest.status not in OPEN_STATUSES:
            session.execute(
                update(ROUNDS)
                .where(ROUNDS.c.id == latest.id)
                .values(status=RoundStatus.OPENED.value, opened_by_id=lead_id, opened_at=now)
            )
        opened = _state(session, proj.id, user_id)
        assert opened is not None
        return opened


def close_queue(engine: Engine, project: str, username: str, reason: str | None = None, *, actor: Actor) -> RoundState:
    """A lead closes an annotator's open regular queue again (after a passed round, a lead's opening, or without
    any round): the store refuses their regular grades until a lead reopens the queue or they pass a retake.
    Records which lead, when and why (the reason is optional); the CLI operator must name the lead."""
    _named_lead(actor, "closing a queue")
    why = _reason(reason)
    with _lead_decides(engine, project, actor) as (session, lead_id, proj):
        assert proj.id is not None
        user_id = _annotator_id(session, username)
        latest = _latest(session, proj.id, user_id)
        if latest is not None and latest.status == RoundStatus.CLOSED:
            state = _state(session, proj.id, user_id)
            assert state is not None
            raise Conflict(
                f"the regular queue of {username!r} in project {project!r} is already closed by lead "
                f"{state.closed_by} on {_when(state.closed_at)}"
            )
        if not queue_open(session.connection(), proj.id, user_id):
            raise Conflict(
                f"the regular queue of {username!r} in project {project!r} is not open (they have a "
                "qualification round to pass first), so there is nothing to close"
            )
        closed = {
            "status": RoundStatus.CLOSED.value,
            "closed_by_id": lead_id,
            "closed_at": utcnow(),
            "closed_reason": why,
        }
        if latest is None:
            session.execute(
                insert(ROUNDS),
                {
                    "project_id": proj.id,
                    "user_id": user_id,
                    "attempt": 1,
                    "pairs": 0,
                    "threshold": _threshold(proj),
                    "weights": DEFAULT_WEIGHTS,
                    "started_at": closed["closed_at"],
                    **closed,
                },
            )
        else:
            session.execute(update(ROUNDS).where(ROUNDS.c.id == latest.id).values(**closed))
        state = _state(session, proj.id, user_id)
        assert state is not None
        return state


def grant_retake(engine: Engine, project: str, username: str, *, actor: Actor) -> RoundState:
    """A lead grants an annotator whose round failed, or whose queue a lead closed, a new round: the project's
    round size of control pairs they have neither met in a round nor judged, started at once; the earlier round
    stays as it ended. Records which lead granted it; the CLI operator must name the lead."""
    _named_lead(actor, "granting a retake")
    with _lead_decides(engine, project, actor) as (session, lead_id, proj):
        assert proj.id is not None
        if proj.qualify_pairs is None:
            raise Conflict(
                f"project {project!r} has no qualification round to retake: switch one on first "
                "(qrelkit control qualify)"
            )
        user_id = _annotator_id(session, username)
        state = _state(session, proj.id, user_id)
        if state is None:
            raise Conflict(
                f"{username!r} has taken no qualification round in project {project!r}, so there is none "
                "to retake (a new annotator's first round starts when they open the project)"
            )
        if state.status == RoundStatus.IN_ROUND:
            raise Conflict(
                f"{username!r} is still in their qualification round in project {project!r} "
                f"({state.graded} of {state.pairs} pairs graded): a retake follows a failed round or a "
                "closed queue"
            )
        if state.open:
            raise Conflict(
                f"the regular queue of {username!r} in project {project!r} is open: close it first if "
                "they should qualify again"
            )
        controls = _fresh_controls(session, proj.id, user_id)
        if len(controls) < proj.qualify_pairs:
            raise Conflict(
                f"project {project!r} has {len(controls)} control pair(s) that {username!r} has neither "
                f"met in a round nor judged, fewer than the {proj.qualify_pairs} a retake needs: add "
                "control pairs first (qrelkit control set / add)"
            )
        _start(session, proj, user_id, controls, attempt=state.attempt + 1, granted_by_id=lead_id)
        started = _state(session, proj.id, user_id)
        assert started is not None
        return started


def list_rounds(engine: Engine, project: str, history: bool = False) -> list[RoundState]:
    """Each annotator's round in force in the project, by annotator; with `history`, every round of theirs in
    attempt order."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        rows = [
            (int(uid), int(attempt))
            for uid, attempt in session.execute(
                select(ROUNDS.c.user_id, ROUNDS.c.attempt)
                .join(USERS, USERS.c.id == ROUNDS.c.user_id)
                .where(ROUNDS.c.project_id == proj.id)
                .order_by(USERS.c.username, ROUNDS.c.attempt)
            ).all()
        ]
        if not history:
            rows = list(dict(rows).items())  # each annotator's last attempt, still by annotator
        return [s for uid, attempt in rows if (s := _state(session, int(proj.id or 0), uid, attempt)) is not None]


# --- reads ------------------------------------------------------------------------------------------------------


def _reason(reason: str | None) -> str | None:
    """A lead's reason as kept: stripped, None when empty; refused when longer than a note may be or holding NUL."""
    if reason is None or not str(reason).strip():
        return None
    text = str(reason).strip()
    if "\x00" in text:
        raise ValueError("the reason holds a NUL character")
    return check_note(text, "the reason")


def _user_id(session: Session, username: str, active: bool = False) -> int:
    row = session.execute(select(col(User.id), col(User.active)).where(col(User.username) == username)).first()
    if row is None:
        raise NotFound(f"no user named {username!r}")
    if active and not row[1]:
        raise Refused(f"user {username!r} is deactivated")
    return int(row[0])


def _annotator_id(session: Session, username: str) -> int:
    """The id of a human annotator: only their regular queue is gated by qualification."""
    row = session.execute(
        select(col(User.id), col(User.role), col(User.kind)).where(col(User.username) == username)
    ).first()
    if row is None:
        raise NotFound(f"no user named {username!r}")
    if row[1] != Role.ANNOTATOR or row[2] != AnnotatorKind.HUMAN:
        who = "a model judge" if row[2] != AnnotatorKind.HUMAN else f"a {row[1]}"
        raise Conflict(
            f"{username!r} is {who}: only a human annotator's queue is opened, closed or qualified by rounds"
        )
    return int(row[0])


def _state(session: Session, project_id: int, user_id: int, attempt: int | None = None) -> RoundState | None:
    """The user's round `attempt` in the project (default: the latest), or None."""
    opener, closer, granter = USERS.alias("opener"), USERS.alias("closer"), USERS.alias("granter")
    which = (
        ROUNDS.c.attempt == attempt
        if attempt is not None
        else ROUNDS.c.attempt
        == select(func.max(ROUNDS.c.attempt))
        .where(ROUNDS.c.project_id == project_id, ROUNDS.c.user_id == user_id)
        .scalar_subquery()
    )
    row = session.execute(
        select(
            USERS.c.username,
            ROUNDS.c.status,
            ROUNDS.c.pairs,
            ROUNDS.c.threshold,
            ROUNDS.c.weights,
            ROUNDS.c.kappa,
            ROUNDS.c.started_at,
            ROUNDS.c.finished_at,
            opener.c.username,
            ROUNDS.c.opened_at,
            select(func.count())
            .where(ROUND_GRADES.c.round_id == ROUNDS.c.id, ROUND_GRADES.c.grade.is_not(None))
            .scalar_subquery(),
            ROUNDS.c.attempt,
            granter.c.username,
            closer.c.username,
            ROUNDS.c.closed_at,
            ROUNDS.c.closed_reason,
        )
        .join(USERS, USERS.c.id == ROUNDS.c.user_id)
        .outerjoin(opener, opener.c.id == ROUNDS.c.opened_by_id)
        .outerjoin(closer, closer.c.id == ROUNDS.c.closed_by_id)
        .outerjoin(granter, granter.c.id == ROUNDS.c.granted_by_id)
        .where(ROUNDS.c.project_id == project_id, ROUNDS.c.user_id == user_id, which)
    ).first()
    if row is None:
        return None
    return RoundState(
        row[0],
        RoundStatus(row[1]),
        int(row[2]),
        int(row[10]),
        float(row[3]),
        row[4],
        row[5],
        row[6],
        row[7],
        row[8],
        row[9],
        int(row[11]),
        row[12],
        row[13],
        row[14],
        row[15],
    )


def _pairs(session: Session, project_id: int, user_id: int) -> list[RoundPair]:
    """The pairs of the user's round in force."""
    latest = select(func.max(ROUNDS.c.attempt)).where(ROUNDS.c.project_id == project_id, ROUNDS.c.user_id == user_id)
    rows = session.execute(
        select(
            ROUND_GRADES.c.pair_id,
            ROUND_GRADES.c.position,
            QUERIES.c.external_id,
            QUERIES.c.text,
            FRAGMENTS.c.external_id,
            FRAGMENTS.c.title,
            FRAGMENTS.c.text,
            FRAGMENTS.c.doc_id,
            ROUND_GRADES.c.grade,
            ROUND_GRADES.c.settled,
            ROUND_GRADES.c.reason,
        )
        .join(ROUNDS, ROUNDS.c.id == ROUND_GRADES.c.round_id)
        .join(PAIRS, PAIRS.c.id == ROUND_GRADES.c.pair_id)
        .join(QUERIES, QUERIES.c.id == PAIRS.c.query_id)
        .join(FRAGMENTS, FRAGMENTS.c.id == PAIRS.c.fragment_id)
        .where(
            ROUNDS.c.project_id == project_id, ROUNDS.c.user_id == user_id, ROUNDS.c.attempt == latest.scalar_subquery()
        )
        .order_by(ROUND_GRADES.c.position)
    ).all()
    return [
        RoundPair(
            int(r[0]),
            int(r[1]),
            len(rows),
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            r[7],
            r[8],
            r[9] if r[8] is not None else None,
            r[10] if r[8] is not None else None,
        )
        for r in rows
    ]

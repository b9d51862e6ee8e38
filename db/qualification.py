"""The qualification round: a new annotator of a project first grades N of its control pairs and, after each,
sees the settled grade and the lead's reason; their regular queue opens when their weighted κ against the
settled grades on the round reaches the threshold, or when a lead opens it (who and when recorded).

"New" means an active human annotator with no judgment in the project: people who graded before the round was
switched on, leads and model judges never take one. Round grades are kept in their own table (the history of
the round), not as judgments: they are never released as labels and never count in agreement, and a pair
seen in a round is never served to that annotator again (not as a round pair, not blind as a control pair,
not by assign()), since they know its settled grade.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

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
    utcnow,
)
from eval_core.agreement.control import DEFAULT_WEIGHTS, score
from eval_core.errors import Conflict, NotFound, Refused
from eval_core.vocab import AnnotatorKind, Role

MIN_PAIRS = 2  # κ needs at least two pairs to mean anything
R, G = QualificationRound.__table__, QualificationGrade.__table__  # type: ignore[attr-defined]


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
        return (f"New annotators first grade {self.pairs} control pairs, seeing each settled grade and reason; their "
                f"queue opens at κ ≥ {self.threshold:g}{source}, or when a lead opens it.")


@dataclass(frozen=True)
class RoundState:
    """One annotator's round: status, progress, κ reached, and the lead who opened the queue, if one did."""

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

    @property
    def open(self) -> bool:
        """Whether the annotator's regular queue is open."""
        return self.status in OPEN_STATUSES

    def sentence(self) -> str:
        """Where the round stands, in words (the annotator and the lead read the same one)."""
        score = (f"κ {self.kappa:.2f}" if self.kappa is not None else
                 "κ undefined (the grades have no variation to measure)")
        if self.status == RoundStatus.IN_ROUND:
            return f"Qualification round: {self.graded} of {self.pairs} control pairs graded."
        if self.status == RoundStatus.PASSED:
            return (f"Passed the qualification round: {score} against the settled grades, at or above "
                    f"{self.threshold:g}. The regular queue is open.")
        if self.status == RoundStatus.FAILED:
            return (f"Did not pass the qualification round: {score} against the settled grades, below "
                    f"{self.threshold:g}. The regular queue stays closed until a lead opens it.")
        when = self.opened_at.strftime("%Y-%m-%d %H:%M UTC") if self.opened_at else "?"
        graded = f" after {self.graded} of {self.pairs} round pairs ({score})" if self.graded else ""
        return f"Regular queue opened by lead {self.opened_by} on {when}{graded}."

    def to_dict(self) -> dict:
        """JSON-able form."""
        out = {k: v for k, v in self.__dict__.items()}
        out["status"] = self.status.value
        for key in ("started_at", "finished_at", "opened_at"):
            out[key] = out[key].isoformat() if out[key] else None
        return out | {"open": self.open, "sentence": self.sentence()}


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

def set_qualification(engine: Engine, project: str, pairs: int | None, threshold: float | None = None, *,
                      actor: Actor) -> QualifySettings:
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
            raise ValueError(f"project {project!r} has {controls} control pair(s), fewer than the {pairs} a round "
                             "needs: add control pairs first (qrelkit control set / add)")
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
    return int(session.execute(select(func.count()).select_from(ControlPair)
                               .where(col(ControlPair.project_id) == proj.id)).scalar_one())


# --- the gate ---------------------------------------------------------------------------------------------------

def queue_open(conn: Connection, project_id: int, user_id: int) -> bool:
    """Whether the user may grade the project's regular pairs: no round in the project, not a human annotator,
    an annotator who graded before (no judgment: new), or a round passed or opened by a lead."""
    row = conn.execute(select(Project.__table__.c.qualify_pairs, User.__table__.c.role, User.__table__.c.kind)  # type: ignore[attr-defined]
                       .select_from(Project.__table__.join(User.__table__, User.__table__.c.id == user_id))  # type: ignore[attr-defined]
                       .where(Project.__table__.c.id == project_id)).first()  # type: ignore[attr-defined]
    if row is None or row[0] is None or row[1] != Role.ANNOTATOR or row[2] != AnnotatorKind.HUMAN:
        return True
    status = conn.execute(select(R.c.status).where(R.c.project_id == project_id, R.c.user_id == user_id)).first()
    if status is not None:
        return status[0] in OPEN_STATUSES
    J = Judgment.__table__  # type: ignore[attr-defined]
    return bool(conn.execute(select(exists().where(J.c.project_id == project_id, J.c.user_id == user_id))).scalar())


def round_pair_ids(session: Session, project_id: int) -> dict[int, set[int]]:
    """Per user id, the pairs of the project they met in a qualification round (never to be served to them)."""
    out: dict[int, set[int]] = defaultdict(set)
    for uid, pid in session.execute(select(R.c.user_id, G.c.pair_id).join(G, G.c.round_id == R.c.id)
                                    .where(R.c.project_id == project_id)).all():
        out[int(uid)].add(int(pid))
    return out


# --- the annotator's round ------------------------------------------------------------------------------------

def round_for(engine: Engine, project: str, username: str) -> RoundState | None:
    """The user's round in the project, started (its control pairs chosen) when they are new and the project
    has a round; None when no round applies to them (their regular queue is open without one). Read first, so
    the page's every run takes no write lock once the round is settled."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        assert proj.id is not None
        if proj.qualify_pairs is None:  # switched off: no round gates anyone, under way or failed
            return None
        user_id = _user_id(session, username)
        state = _state(session, proj.id, user_id)
        if state is not None or queue_open(session.connection(), proj.id, user_id):
            return state
    with session_scope(engine, write=True) as session:
        proj = project_row(session, project, lock=True)
        assert proj.id is not None
        if proj.qualify_pairs is None:
            return None
        if _state(session, proj.id, user_id) is None and not queue_open(session.connection(), proj.id, user_id):
            _start(session, proj, user_id)
        return _state(session, proj.id, user_id)


def _start(session: Session, proj: Project, user_id: int) -> None:
    """Open the round: choose its control pairs (spread over the settled grades, those not in the user's queue
    first), and take any chosen pair out of the user's queue (they will know its settled grade)."""
    assert proj.id is not None and proj.qualify_pairs is not None
    controls = session.execute(select(col(ControlPair.pair_id), col(ControlPair.grade), col(ControlPair.reason))
                               .where(col(ControlPair.project_id) == proj.id)
                               .order_by(col(ControlPair.pair_id))).all()
    queued = set(session.execute(select(col(Assignment.pair_id)).where(col(Assignment.project_id) == proj.id,
                                                                        col(Assignment.user_id) == user_id)).scalars())
    chosen = choose_round(controls, queued, proj.qualify_pairs, seed=user_id)
    threshold = proj.agreement_threshold if proj.qualify_threshold is None else proj.qualify_threshold
    round_id = session.execute(insert(R).returning(R.c.id), {
        "project_id": proj.id, "user_id": user_id, "status": RoundStatus.IN_ROUND.value, "pairs": len(chosen),
        "threshold": float(threshold), "weights": DEFAULT_WEIGHTS, "started_at": utcnow()}).scalar_one()
    session.execute(insert(G), [{"round_id": round_id, "pair_id": p, "position": i + 1, "settled": g, "reason": why}
                                for i, (p, g, why) in enumerate(chosen)])
    taken = [p for p, _, _ in chosen if p in queued]
    if taken:
        A = Assignment.__table__  # type: ignore[attr-defined]
        session.execute(delete(A).where(A.c.user_id == user_id, A.c.pair_id.in_(taken)))
        left = session.execute(select(A.c.id).where(A.c.project_id == proj.id, A.c.user_id == user_id)
                               .order_by(A.c.position, A.c.pair_id)).scalars().all()
        if left:
            session.connection().execute(update(A).where(A.c.id == bindparam("aid")).values(position=bindparam("pos")),
                                         [{"aid": a, "pos": i + 1} for i, a in enumerate(left)])


def choose_round(controls: Sequence, queued: set[int], n: int, seed: int) -> list[tuple[int, int, str]]:
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
    """The user's round pairs in round order; settled grade and reason only for those they graded."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        return _pairs(session, int(proj.id or 0), _user_id(session, username))


def next_round_pair(engine: Engine, project: str, username: str) -> RoundPair | None:
    """The user's first ungraded round pair, None when the round is graded through (or there is none)."""
    return next((p for p in round_pairs(engine, project, username) if p.grade is None), None)


def grade_round_pair(engine: Engine, project: str, username: str, pair_id: int,
                     grade: int) -> tuple[RoundPair, RoundState]:
    """Record the user's grade for one round pair (once: the settled grade is shown after it) and, when it was
    the last, score the round; returns the pair with its settled grade and reason, and the round's state."""
    with session_scope(engine, write=True) as session:
        proj = project_row(session, project)
        assert proj.id is not None
        user_id = _user_id(session, username, active=True)
        row = session.execute(select(R.c.id, R.c.status).where(R.c.project_id == proj.id, R.c.user_id == user_id)
                              .with_for_update()).first()
        if row is None:
            raise NotFound(f"{username!r} has no qualification round in project {project!r}")
        low, high = project_scale(proj)
        if isinstance(grade, bool) or not isinstance(grade, int) or not low <= grade <= high:
            raise ValueError(f"grade {grade!r} is outside the scale {low}-{high}")
        item = session.execute(select(G.c.id, G.c.grade).where(G.c.round_id == row[0], G.c.pair_id == pair_id)).first()
        if item is None:
            raise Refused(f"pair {pair_id} is not in {username!r}'s qualification round")
        if item[1] is not None:
            raise Conflict(f"pair {pair_id} of the qualification round is already graded ({item[1]}): a round grade "
                           "is given once, before the settled grade is shown")
        session.execute(update(G).where(G.c.id == item[0]).values(grade=grade, graded_at=utcnow()))
        pairs = _pairs(session, proj.id, user_id)
        if row[1] == RoundStatus.IN_ROUND and all(p.grade is not None for p in pairs):
            _finish(session, row[0], pairs, (low, high))
        state = _state(session, proj.id, user_id)
        assert state is not None
        return next(p for p in pairs if p.pair_id == pair_id), state


def round_kappa(pairs: list[RoundPair], scale: tuple[int, int], weights: str = DEFAULT_WEIGHTS) -> float | None:
    """Weighted κ of the round's grades against the settled grades on the full scale (the control report's κ);
    None when undefined (no variation)."""
    graded = [p for p in pairs if p.grade is not None and p.settled is not None]
    low = scale[0]
    frame = pd.DataFrame({"query_id": [p.query_external_id for p in graded],
                          "given": [int(p.grade or 0) - low for p in graded],
                          "settled": [int(p.settled or 0) - low for p in graded]})
    return score("", None, frame, scale[1] - low + 1, weights, 0, 0, 0.95).kappa.value


def _finish(session: Session, round_id: int, pairs: list[RoundPair], scale: tuple[int, int]) -> None:
    """Score a graded-through round: passed at κ ≥ threshold, else failed (an undefined κ cannot pass)."""
    threshold, weights = session.execute(select(R.c.threshold, R.c.weights).where(R.c.id == round_id)).one()
    kappa = round_kappa(pairs, scale, weights)
    passed = kappa is not None and kappa >= threshold
    session.execute(update(R).where(R.c.id == round_id).values(
        status=(RoundStatus.PASSED if passed else RoundStatus.FAILED).value, kappa=kappa, finished_at=utcnow()))


# --- the lead's side --------------------------------------------------------------------------------------------

def open_queue(engine: Engine, project: str, username: str, *, actor: Actor) -> RoundState:
    """A lead opens the user's regular queue, whatever their round's outcome (also before or without one); the
    decision records which lead and when, so the CLI operator must name the lead (actor=USERNAME). An already
    open queue is left as it is."""
    if not isinstance(actor, str):
        raise Refused("opening a queue records which lead decided, so the CLI operator cannot do it anonymously: "
                      "name an active lead (from the CLI, --lead LEAD)")
    with session_scope(engine, write=True) as session:
        lead_id = require_lead(session, actor)
        proj = project_row(session, project, lock=True)
        assert proj.id is not None
        user_id = _user_id(session, username)
        state = _state(session, proj.id, user_id)
        now = utcnow()
        if state is None:
            threshold = proj.agreement_threshold if proj.qualify_threshold is None else proj.qualify_threshold
            session.execute(insert(R), {"project_id": proj.id, "user_id": user_id, "status": RoundStatus.OPENED.value,
                                        "pairs": 0, "threshold": float(threshold), "weights": DEFAULT_WEIGHTS,
                                        "started_at": now, "opened_by_id": lead_id, "opened_at": now})
        elif not state.open:
            session.execute(update(R).where(R.c.project_id == proj.id, R.c.user_id == user_id)
                            .values(status=RoundStatus.OPENED.value, opened_by_id=lead_id, opened_at=now))
        opened = _state(session, proj.id, user_id)
        assert opened is not None
        return opened


def list_rounds(engine: Engine, project: str) -> list[RoundState]:
    """Every round of the project, by annotator."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        users = session.execute(select(R.c.user_id).join(User.__table__, User.__table__.c.id == R.c.user_id)  # type: ignore[attr-defined]
                                .where(R.c.project_id == proj.id).order_by(User.__table__.c.username)).scalars()  # type: ignore[attr-defined]
        return [s for uid in list(users) if (s := _state(session, int(proj.id or 0), int(uid))) is not None]


# --- reads ------------------------------------------------------------------------------------------------------

def _user_id(session: Session, username: str, active: bool = False) -> int:
    row = session.execute(select(col(User.id), col(User.active)).where(col(User.username) == username)).first()
    if row is None:
        raise NotFound(f"no user named {username!r}")
    if active and not row[1]:
        raise Refused(f"user {username!r} is deactivated")
    return int(row[0])


def _state(session: Session, project_id: int, user_id: int) -> RoundState | None:
    U = User.__table__  # type: ignore[attr-defined]
    lead = U.alias("lead")
    row = session.execute(
        select(U.c.username, R.c.status, R.c.pairs, R.c.threshold, R.c.weights, R.c.kappa, R.c.started_at,
               R.c.finished_at, lead.c.username, R.c.opened_at,
               select(func.count()).where(G.c.round_id == R.c.id, G.c.grade.is_not(None)).scalar_subquery())
        .join(U, U.c.id == R.c.user_id).outerjoin(lead, lead.c.id == R.c.opened_by_id)
        .where(R.c.project_id == project_id, R.c.user_id == user_id)).first()
    if row is None:
        return None
    return RoundState(row[0], RoundStatus(row[1]), int(row[2]), int(row[10]), float(row[3]), row[4], row[5],
                      row[6], row[7], row[8], row[9])


def _pairs(session: Session, project_id: int, user_id: int) -> list[RoundPair]:
    Q = Query.__table__  # type: ignore[attr-defined]
    F = Fragment.__table__  # type: ignore[attr-defined]
    P = Pair.__table__  # type: ignore[attr-defined]
    rows = session.execute(
        select(G.c.pair_id, G.c.position, Q.c.external_id, Q.c.text, F.c.external_id, F.c.title, F.c.text,
               F.c.doc_id, G.c.grade, G.c.settled, G.c.reason)
        .join(R, R.c.id == G.c.round_id).join(P, P.c.id == G.c.pair_id).join(Q, Q.c.id == P.c.query_id)
        .join(F, F.c.id == P.c.fragment_id)
        .where(R.c.project_id == project_id, R.c.user_id == user_id).order_by(G.c.position)).all()
    return [RoundPair(int(r[0]), int(r[1]), len(rows), r[2], r[3], r[4], r[5], r[6], r[7], r[8],
                      r[9] if r[8] is not None else None, r[10] if r[8] is not None else None) for r in rows]

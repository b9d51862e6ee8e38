"""Control pairs in the store: pairs with a settled grade (an adjudicated release's, or a lead's with a reason)
served blind among each annotator's pairs at the project's rate, and each annotator measured against them.

A control pair is an ordinary pair: the annotator is given an ordinary assignment for it, so the judging page,
its HTML and its messages are those of any pair. Their grade is an ordinary judgment (it counts in agreement
and in releases like any other); the settled grade is never written as anyone's judgment.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from db.accounts.permissions import Actor, require_lead
from db.projects import project_row, project_scale
from db.qualification import round_pair_ids
from db.store.engine import session_scope
from db.store.models import (
    Assignment,
    ControlPair,
    Fragment,
    Guideline,
    Judgment,
    Pair,
    Project,
    Query,
    Release,
    User,
    table_of,
    utcnow,
)
from eval_core.agreement.control import (
    DEFAULT_RECENT,
    DEFAULT_WEIGHTS,
    ControlReport,
    control_report,
)
from eval_core.errors import NotFound


@dataclass(frozen=True)
class ControlInfo:
    """One control pair as `qrelkit control list` shows it."""

    query_id: str
    fragment_id: str
    grade: int
    reason: str
    release: int | None
    created_at: datetime


@dataclass(frozen=True)
class ServeReport:
    """What setting control pairs did: pairs made controls, and control assignments added per annotator."""

    added: int
    every: int | None
    served: dict[str, int]
    without_text: int = 0  # pairs of the release left out: their fragment waits for its text (db.textless)

    def to_dict(self) -> dict:
        """JSON-able form."""
        out = {"added": self.added, "every": self.every, "served": dict(self.served)}
        return {**out, "without_text": self.without_text} if self.without_text else out


def parse_rate(text: str) -> int:
    """'1/20', '0.05' or '20' → 20: serve one control pair in every 20; ValueError for a rate that is not one
    in two or fewer."""
    value = text.strip()
    try:
        if "/" in value:
            top, bottom = value.split("/", 1)
            every = float(bottom) / float(top)
        else:
            number = float(value)
            every = 1 / number if 0 < number < 1 else number
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"rate must look like 1/20, 0.05 or 20, got {text!r}") from None
    if not np.isfinite(every) or every < 2:
        raise ValueError(f"rate {text!r} would serve control pairs more often than one in two")
    return round(every)


def _pair_ids(session: Session, project_id: int) -> dict[tuple[str, str], int]:
    """(query, fragment) external ids → pair id."""
    rows = session.execute(
        select(col(Pair.id), col(Query.external_id), col(Fragment.external_id))
        .join(Query, col(Query.id) == Pair.query_id)
        .join(Fragment, col(Fragment.id) == Pair.fragment_id)
        .where(col(Pair.project_id) == project_id)
    ).all()
    return {(q, f): pid for pid, q, f in rows}


def _project(session: Session, project: str) -> tuple[Project, int]:
    """The project row (locked) and its id."""
    proj = project_row(session, project, lock=True)
    assert proj.id is not None
    return proj, proj.id


def controls_from_release(engine: Engine, project: str, version: int | str, rate: str, *, actor: Actor) -> ServeReport:
    """Make every adjudicated pair of release `version` a control pair (its released grade settled, the
    adjudication's reason kept), set the project's rate, and serve them. Leads only."""
    from db.evaluations import load_release  # the evaluation modules here only: control_frames needs none

    with session_scope(engine, write=True) as session:
        user_id = require_lead(session, actor)
        every = parse_rate(rate)
        proj, pid = _project(session, project)
        release = load_release(session, proj, version)
        settled = [json.loads(line) for line in release.judgments_jsonl.splitlines() if line]
        settled = [r for r in settled if "adjudication" in r]
        if not settled:
            raise ValueError(
                f"release {release.version} of project {project!r} has no adjudicated pair to "
                "make a control pair (adjudicate, release, or add control pairs by hand)"
            )
        ids = _pair_ids(session, pid)
        rows = [
            (ids[(r["query_id"], r["fragment_id"])], int(r["grade"]), str(r["adjudication"]["reason"]))
            for r in settled
            if (r["query_id"], r["fragment_id"]) in ids
        ]
        readable = _with_text(session, [r[0] for r in rows])  # a control pair is served: it needs its text
        waiting = len(rows) - len(readable)
        added = _insert(session, pid, [r for r in rows if r[0] in readable], release.id, user_id)
        proj.control_every = every
        session.add(proj)
        session.flush()
        served = serve(session, pid, every)
    return ServeReport(added, every, served, waiting)


def _with_text(session: Session, pair_ids: list[int]) -> set[int]:
    """The pairs among `pair_ids` whose fragment has its text (db.textless): only they can be served."""
    out: set[int] = set()
    for start in range(0, len(pair_ids), 500):
        out.update(
            session.execute(
                select(col(Pair.id))
                .join(Fragment, col(Fragment.id) == Pair.fragment_id)
                .where(col(Pair.id).in_(pair_ids[start : start + 500]), col(Fragment.has_text))
            ).scalars()
        )
    return out


def add_control(
    engine: Engine,
    project: str,
    query: str,
    fragment: str,
    grade: int,
    reason: str,
    rate: str | None = None,
    *,
    actor: Actor,
) -> ServeReport:
    """Make one existing pair a control pair with a lead's grade and reason (and the rate, when given); serve
    the project's control pairs at its rate. Leads only."""
    if not reason.strip():
        raise ValueError("a control pair set by hand needs a reason (the settled grade's why)")
    with session_scope(engine, write=True) as session:
        user_id = require_lead(session, actor)
        proj, pid = _project(session, project)
        low, high = project_scale(proj)
        if not low <= grade <= high:
            raise ValueError(f"grade {grade} is outside the project's scale {low}-{high}")
        pair = _pair_ids(session, pid).get((query, fragment))
        if pair is None:
            raise NotFound(f"project {project!r} has no pair ({query!r}, {fragment!r}): pool or import it first")
        if not _with_text(session, [pair]):
            raise ValueError(
                f"pair ({query!r}, {fragment!r}) waits for its fragment's text: a control pair is served to "
                "annotators, so import its text first (`qrelkit import fragments FILE`)"
            )
        added = _insert(session, pid, [(pair, grade, reason.strip())], None, user_id)
        if rate is not None:
            proj.control_every = parse_rate(rate)
            session.add(proj)
            session.flush()
        every = proj.control_every
        served = serve(session, pid, every) if every else {}
    return ServeReport(added, every, served)


def _insert(
    session: Session, project_id: int, rows: list[tuple[int, int, str]], release_id: int | None, user_id: int | None
) -> int:
    """Insert control pairs not already controls; returns how many were new (a pair's settled grade is never
    silently replaced)."""
    have = set(
        session.execute(select(col(ControlPair.pair_id)).where(col(ControlPair.project_id) == project_id)).scalars()
    )
    new = [r for r in rows if r[0] not in have]
    if new:
        now = utcnow()
        session.execute(
            insert(ControlPair),
            [
                {
                    "project_id": project_id,
                    "pair_id": p,
                    "grade": g,
                    "reason": why,
                    "release_id": release_id,
                    "created_by_id": user_id,
                    "created_at": now,
                }
                for p, g, why in new
            ],
        )
    return len(new)


def serve(session: Session, project_id: int, every: int | None, seed: int = 0) -> dict[str, int]:
    """Give each annotator with a queue about one control pair in every `every` of their pending pairs, among
    the control pairs they have neither been assigned nor judged (those of queries they are grading first),
    placed at random among their pending pairs of the same query, else at random in the pending part of the
    queue (_placed). Positions are then
    renumbered, so a queue stays contiguous and a control pair looks like any pair. Returns added per user."""
    if not every:
        return {}
    controls: dict[int, int] = dict(
        session.execute(
            select(col(ControlPair.pair_id), col(Pair.query_id))
            .join(Pair, col(Pair.id) == ControlPair.pair_id)
            .where(col(ControlPair.project_id) == project_id)
        ).all()
    )
    if not controls:
        return {}
    queues: dict[int, list[tuple[int, int, int, bool]]] = defaultdict(list)
    for aid, uid, pair, qid, done in session.execute(
        select(
            col(Assignment.id),
            col(Assignment.user_id),
            col(Assignment.pair_id),
            col(Pair.query_id),
            col(Assignment.done),
        )
        .join(Pair, col(Pair.id) == Assignment.pair_id)
        .where(col(Assignment.project_id) == project_id)
        .order_by(col(Assignment.user_id), col(Assignment.position), col(Assignment.pair_id))
    ).all():
        queues[uid].append((aid, pair, qid, bool(done)))
    judged: dict[int, set[int]] = defaultdict(set)
    for uid, pair in session.execute(
        select(col(Judgment.user_id), col(Judgment.pair_id)).where(col(Judgment.project_id) == project_id)
    ).all():
        judged[uid].add(pair)
    for uid, pairs in round_pair_ids(session, project_id).items():  # a round showed them the settled grade
        judged[uid] |= pairs
    rng = np.random.default_rng(seed)
    names = dict(session.execute(select(col(User.id), col(User.username))).all())
    served: dict[str, int] = {}
    for uid, queue in sorted(queues.items()):
        pending = [a for a in queue if not a[3] and a[1] not in judged[uid]]
        pending_controls = sum(a[1] in controls for a in pending)
        regular = len(pending) - pending_controls
        want = regular // (every - 1) - pending_controls
        seen = {a[1] for a in queue} | judged[uid]
        free = sorted(p for p in controls if p not in seen)
        if want <= 0 or not free:
            continue
        # Controls of the queries the annotator is grading first (they hide among those pairs), then others.
        mine = {a[2] for a in pending}
        own = [p for p in free if controls[p] in mine]
        other = [p for p in free if controls[p] not in mine]
        picked = [own[i] for i in rng.permutation(len(own))] + [other[i] for i in rng.permutation(len(other))]
        chosen = sorted(picked[:want])
        order = _placed(queue, chosen, controls, rng)
        now = utcnow()
        new_ids = {}
        for pair in chosen:
            new_ids[pair] = session.execute(
                insert(Assignment).returning(col(Assignment.id)),
                {"project_id": project_id, "pair_id": pair, "user_id": uid, "position": 0, "created_at": now},
            ).scalar_one()
        ids = [new_ids[item[1]] if item[0] is None else item[0] for item in order]
        table = table_of(Assignment)
        session.connection().execute(
            update(table).where(table.c.id == bindparam("aid")).values(position=bindparam("pos")),
            [{"aid": a, "pos": i + 1} for i, a in enumerate(ids)],
        )
        served[names.get(uid, str(uid))] = len(chosen)
    return served


def _placed(
    queue: list[tuple[int, int, int, bool]], chosen: list[int], controls: dict[int, int], rng: np.random.Generator
) -> list[tuple[int | None, int]]:
    """The queue in its new order as (assignment id or None for a new one, pair). No fixed slot gives a control
    away: one whose query the annotator has pending pairs of goes to a random place among those pairs (before,
    between or after them); any other goes to a random place in the pending part of the queue (issue 29: always
    between two queries, a lone pair of a query seen nowhere else stood out)."""
    order: list[tuple[int | None, int]] = [(a[0], a[1]) for a in queue]
    query_of = {a[1]: a[2] for a in queue}
    pending_at = [i for i, a in enumerate(queue) if not a[3]]
    start = pending_at[0] if pending_at else len(queue)
    inserts: list[tuple[int, int]] = []
    for pair in chosen:
        same = [i for i in pending_at if query_of[queue[i][1]] == controls[pair]]
        slots = range(same[0], same[-1] + 2) if same else range(start, len(queue) + 1)
        inserts.append((int(rng.choice(slots)), pair))
    for at, pair in sorted(inserts, key=lambda t: t[0], reverse=True):
        order.insert(at, (None, pair))
    return order


def list_controls(engine: Engine, project: str) -> tuple[int | None, list[ControlInfo]]:
    """The project's rate (one in N, None: off) and its control pairs by query and fragment."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        versions: dict[int, int] = dict(
            session.execute(
                select(col(Release.id), col(Release.version)).where(col(Release.project_id) == proj.id)
            ).all()
        )
        rows = session.execute(
            select(
                col(Query.external_id),
                col(Fragment.external_id),
                col(ControlPair.grade),
                col(ControlPair.reason),
                col(ControlPair.release_id),
                col(ControlPair.created_at),
            )
            .join(Pair, col(Pair.id) == ControlPair.pair_id)
            .join(Query, col(Query.id) == Pair.query_id)
            .join(Fragment, col(Fragment.id) == Pair.fragment_id)
            .where(col(ControlPair.project_id) == proj.id)
            .order_by(col(Query.external_id), col(Fragment.external_id))
        ).all()
        return proj.control_every, [
            ControlInfo(q, f, g, r, versions.get(rel) if rel else None, at) for q, f, g, r, rel, at in rows
        ]


def control_frames(session: Session, project_id: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(judgments of control pairs made after each became a control, with annotator, guideline version and
    time; the settled grades) as eval_core.agreement.control reads them."""
    settled = session.execute(
        select(col(ControlPair.pair_id), col(ControlPair.grade), col(ControlPair.created_at)).where(
            col(ControlPair.project_id) == project_id
        )
    ).all()
    since = {p: at for p, _, at in settled}
    keys = {pid: key for key, pid in _pair_ids(session, project_id).items()}
    control = pd.DataFrame([(*keys[p], g) for p, g, _ in settled], columns=["query_id", "fragment_id", "grade"])
    rows = session.execute(
        select(
            col(Judgment.pair_id),
            col(User.username),
            col(Judgment.grade),
            col(Guideline.version),
            col(Judgment.created_at),
        )
        .join(User, col(User.id) == Judgment.user_id)
        .outerjoin(Guideline, col(Guideline.id) == Judgment.guideline_id)
        .where(col(Judgment.project_id) == project_id, col(Judgment.pair_id).in_(list(since)))
    ).all()
    judged = [
        (*keys[p], who, g, None if v is None else str(v), at.isoformat())
        for p, who, g, v, at in rows
        if _aware(at) >= _aware(since[p])
    ]
    frame = pd.DataFrame(judged, columns=["query_id", "fragment_id", "annotator", "grade", "guideline", "time"])
    return frame.astype({"grade": "Int64"}) if len(frame) else frame, control


def _aware(at: datetime) -> datetime:
    """A timestamp as aware UTC (SQLite hands back naive ones)."""
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def project_control_report(
    engine: Engine,
    project: str,
    weights: str = DEFAULT_WEIGHTS,
    replicates: int = 1000,
    seed: int = 0,
    threshold: float | None = None,
    recent: int = DEFAULT_RECENT,
) -> ControlReport:
    """Every annotator against the project's control grades (the project's agreement threshold by default)."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        assert proj.id is not None
        judgments, control = control_frames(session, proj.id)
        scale = project_scale(proj)
        limit = proj.agreement_threshold if threshold is None else threshold
    if judgments.empty:
        return ControlReport(
            weights,
            limit,
            recent,
            [],
            [],
            [],
            [],
            ["no annotator has graded a control pair yet" if len(control) else "the project has no control pairs"],
        )
    return control_report(judgments, control, scale, weights, replicates, seed, threshold=limit, recent=recent)

"""Lead-only views and decisions: every grade of a pair, the final grade, and pairs due for re-judging."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from db.accounts.permissions import Actor, require_lead
from db.projects import check_grade, project_row, project_scale
from db.store.engine import session_scope
from db.store.models import (
    Adjudication,
    Assignment,
    Fragment,
    Guideline,
    Judgment,
    JudgmentHistory,
    Pair,
    Project,
    Query,
    User,
    pk,
    table_of,
    utcnow,
)
from eval_core.errors import Conflict, NotFound, Problems, Refused
from eval_core.vocab import AnnotatorKind

if TYPE_CHECKING:  # pandas is imported where a frame is built, so `qrelkit adjudicate` starts without it
    import pandas as pd

DISPUTE_COLUMNS = [
    "pair_id",
    "query_id",
    "fragment_id",
    "spread",
    "low",
    "high",
    "grades",
    "by_annotator",
    "adjudicated",
]
# The adjudication queue's orders: name → what comes first.
DISPUTE_ORDERS = {
    "spread": "widest spread of people's grades first, then most varied",
    "doubt": "the pairs Dawid-Skene is least sure of first (highest posterior entropy, with the lead's "
    "settled grades as known truth); decided pairs last",
}


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
    """Everything about a pair for a lead: query, fragment (its text None while it waits for one), every
    annotator's grade and note, adjudications, and the full change history. Pass `username` to have the lead
    role checked here too."""
    with session_scope(engine) as session:
        if username is not None:
            require_lead(session, username)
        project_id = project_row(session, project).id
        head = session.execute(
            select(
                col(Query.external_id),
                col(Query.text),
                col(Query.category),
                col(Fragment.external_id),
                col(Fragment.title),
                col(Fragment.text),
                col(Fragment.doc_id),
                col(Pair.sources),
                col(Pair.best_rank),
                col(Fragment.has_text),
            )
            .select_from(Pair)
            .join(Query, col(Query.id) == Pair.query_id)
            .join(Fragment, col(Fragment.id) == Pair.fragment_id)
            .where(col(Pair.id) == pair_id, col(Pair.project_id) == project_id)
        ).first()
        if head is None:
            raise NotFound(f"no pair with id {pair_id} in project {project!r}")
        judgments = session.execute(
            select(
                col(User.username),
                col(Judgment.grade),
                col(Judgment.note),
                col(Judgment.cant_judge_reason),
                col(Guideline.version),
                col(Judgment.seconds_spent),
                col(Judgment.revision),
                col(Judgment.updated_at),
            )
            .select_from(Judgment)
            .join(User, col(User.id) == Judgment.user_id)
            .outerjoin(Guideline, col(Guideline.id) == Judgment.guideline_id)
            .where(col(Judgment.pair_id) == pair_id)
            .order_by(col(User.username))
        ).all()
        adjudications = session.execute(
            select(col(Adjudication.grade), col(Adjudication.reason), col(User.username), col(Adjudication.created_at))
            .join(User, col(User.id) == Adjudication.user_id)
            .where(col(Adjudication.pair_id) == pair_id)
            .order_by(col(Adjudication.created_at), col(Adjudication.id))
        ).all()
        history = session.execute(
            select(
                col(JudgmentHistory.action),
                col(User.username),
                col(JudgmentHistory.old_grade),
                col(JudgmentHistory.new_grade),
                col(JudgmentHistory.old_note),
                col(JudgmentHistory.new_note),
                col(JudgmentHistory.changed_at),
            )
            .join(User, col(User.id) == JudgmentHistory.user_id)
            .where(col(JudgmentHistory.pair_id) == pair_id)
            .order_by(col(JudgmentHistory.id))
        ).all()
    keys = ("annotator", "grade", "note", "cant_judge_reason", "guideline", "seconds_spent", "revision", "updated_at")
    return {
        "pair_id": pair_id,
        "query": {"id": head[0], "text": head[1], "category": head[2]},
        # text None: the fragment waits for its text (db.textless), never imported yet
        "fragment": {"id": head[3], "title": head[4], "text": head[5] if head[9] else None, "doc_id": head[6]},
        "sources": head[7],
        "best_rank": head[8],
        "judgments": [dict(zip(keys, row, strict=True)) for row in judgments],
        "adjudications": [{"grade": g, "reason": r, "by": b, "at": t} for g, r, b, t in adjudications],
        "adjudication": (
            {"grade": adjudications[-1][0], "reason": adjudications[-1][1], "by": adjudications[-1][2]}
            if adjudications
            else None
        ),
        "history": [
            dict(zip(("action", "annotator", "old_grade", "new_grade", "old_note", "new_note", "at"), row, strict=True))
            for row in history
        ],
    }


def _lead_name(actor: Actor) -> str:
    """The lead a decision is recorded under: a name, never the anonymous CLI operator."""
    if not isinstance(actor, str):
        raise Refused(
            "an adjudication records which lead decided, so the CLI operator cannot adjudicate "
            "anonymously: name an active lead (actor=USERNAME; from the CLI, --lead LEAD)"
        )
    return actor


def record_decisions(session: Session, rows: list[dict]) -> int | None:
    """Append decisions (project_id, pair_id, grade, reason, user_id, created_at) in the caller's transaction:
    the one writer of adjudications a lead makes (one at a time or from a file); nothing is ever overwritten,
    the latest row per pair is in force. Returns the new row's id when there is one decision."""
    table = table_of(Adjudication)
    if len(rows) == 1:
        return int(session.execute(table.insert().values(rows[0]).returning(table.c.id)).scalar_one())
    if rows:
        session.execute(table.insert(), rows)
    return None


def adjudicate(engine: Engine, pair_id: int, grade: int, reason: str, *, actor: Actor) -> AdjudicationInfo:
    """Record a lead's final grade for a pair (append-only: the latest decision is in force). Only an active
    lead, by name — never the anonymous CLI operator, on purpose: the decision records who made it
    (adjudications.user_id, the `by` of a release's line, which an import requires to be an active lead).
    The operator names the lead instead (`qrelkit adjudicate … --lead LEAD`, as `release --lead`)."""
    reason = (reason or "").strip()
    if not reason:
        raise ValueError("an adjudication needs a reason")
    lead = _lead_name(actor)
    with session_scope(engine, write=True) as session:
        lead_id = require_lead(session, lead)
        scale = session.execute(
            select(col(Pair.project_id), col(Project.scale_min), col(Project.scale_max))
            .join(Project, col(Project.id) == Pair.project_id)
            .where(col(Pair.id) == pair_id)
        ).first()
        if scale is None:
            raise NotFound(f"no pair with id {pair_id}")
        checked = check_grade(grade, (scale[1], scale[2]), reason)
        assert checked is not None
        now = utcnow()
        row = {
            "project_id": scale[0],
            "pair_id": pair_id,
            "grade": checked,
            "reason": reason,
            "user_id": lead_id,
            "created_at": now,
        }
        new_id = record_decisions(session, [row])
        assert new_id is not None
        return AdjudicationInfo(new_id, pair_id, checked, reason, lead, now)


def adjudicate_pair(
    engine: Engine, project: str, query_id: str, fragment_id: str, grade: int, reason: str, *, actor: Actor
) -> AdjudicationInfo:
    """`adjudicate` on the pair named by its query and fragment ids (what `qrelkit adjudicate` is given)."""
    with session_scope(engine) as session:
        found = session.execute(
            select(col(Pair.id))
            .join(Project, col(Project.id) == Pair.project_id)
            .join(Query, col(Query.id) == Pair.query_id)
            .join(Fragment, col(Fragment.id) == Pair.fragment_id)
            .where(
                col(Project.name) == project,
                col(Query.external_id) == query_id,
                col(Fragment.external_id) == fragment_id,
            )
        ).scalar_one_or_none()
        if found is None:
            project_row(session, project)  # an unknown project says so
            raise NotFound(f"no pair ({query_id}, {fragment_id}) in project {project!r}")
    return adjudicate(engine, int(found), grade, reason, actor=actor)


@dataclass
class DecisionsReport:
    """What `import adjudications` did: decisions read, recorded, and already in force (not recorded again)."""

    path: str
    lead: str
    decisions: int = 0
    recorded: int = 0
    unchanged: int = 0

    def to_dict(self) -> dict:
        """JSON-able form for the CLI."""
        return dict(self.__dict__)


def import_adjudications(
    engine: Engine, project: str, path: str | Path, *, actor: Actor, reason: str | None = None
) -> DecisionsReport:
    """A file of lead decisions (TREC qrels with the reason after the grade, or JSONL/CSV with query_id,
    fragment_id, grade, reason; eval_core.io.judgments.read_adjudications) recorded as the named lead's,
    through the same writer as one decision: all or nothing, bad lines told as path:line (the reader's: a
    grade off the scale, a pair twice; then the store's: an unknown pair, no reason and no default `reason`,
    a `by` naming another lead). A decision
    equal to the one in force (same grade, reason and lead) is not recorded again; every other is appended,
    so the earlier ones stay in the history."""
    from db.store.frames import project_adjudications
    from eval_core.io.judgments import read_adjudications

    lead = _lead_name(actor)
    default = (reason or "").strip() or None
    with session_scope(engine) as session:
        require_lead(session, lead)
        proj = project_row(session, project)
        scale = (proj.scale_min, proj.scale_max)
        pairs = {
            (q, f): pid
            for pid, q, f in session.execute(
                select(col(Pair.id), col(Query.external_id), col(Fragment.external_id))
                .join(Query, col(Query.id) == Pair.query_id)
                .join(Fragment, col(Fragment.id) == Pair.fragment_id)
                .where(col(Pair.project_id) == pk(proj))
            ).all()
        }
        in_force = {
            (q, f): (g, r, b) for q, f, g, r, b in project_adjudications(session, pk(proj)).itertuples(index=False)
        }
    decided = read_adjudications(path, scale, lines=True)
    problems = Problems(path)
    rows, report = [], DecisionsReport(path=str(path), lead=lead, decisions=len(decided))
    for query, fragment, grade, why, by, line in decided.itertuples(index=False):
        why = why.strip() if isinstance(why, str) and why.strip() else default
        pid = pairs.get((query, fragment))
        if pid is None:
            problems.add(line, f"no pair ({query!r}, {fragment!r}) in project {project!r}")
        elif why is None:
            problems.add(line, "an adjudication needs a reason: give one on the line or with --reason")
        elif by is not None and by != lead:
            problems.add(line, f"decided by {by!r}, but the import records {lead!r}'s decisions: leave out `by`")
        elif in_force.get((query, fragment)) == (int(grade), why, lead):
            report.unchanged += 1
        else:
            rows.append({"project_id": pk(proj), "pair_id": pid, "grade": int(grade), "reason": why})
    problems.check()
    with session_scope(engine, write=True) as session:
        lead_id = require_lead(session, lead)
        now = utcnow()
        record_decisions(session, [{**row, "user_id": lead_id, "created_at": now} for row in rows])
    report.recorded = len(rows)
    return report


@dataclass(frozen=True)
class Dispute:
    """A pair whose people gave different grades: spread = high - low (the highest and lowest human grade),
    every person's grade ("ana: 1, ben: 3", and by name in by_annotator) and whether a lead decided it. The
    fields are DISPUTE_COLUMNS, so a frame's row and a Dispute read alike."""

    pair_id: int
    query_id: str
    fragment_id: str
    spread: int
    low: int
    high: int
    grades: str
    by_annotator: dict[str, int]
    adjudicated: bool


def find_disputes(grades: Iterable[tuple[int, str, str, str, int]], adjudicated: set[tuple[str, str]]) -> list[Dispute]:
    """The one dispute rule, over people's grades (pair_id, query_id, fragment_id, annotator, grade) in
    query, fragment, annotator order: every pair whose grades differ, widest spread first, then most varied
    (the grades' sample variance, compared exactly), then by query and fragment. Plain Python, so `qrelkit
    disputes` starts without pandas."""
    by_pair: dict[int, tuple[str, str, dict[str, int]]] = {}
    for pair, query, fragment, annotator, grade in grades:
        by_pair.setdefault(pair, (query, fragment, {}))[2][annotator] = int(grade)
    found: list[tuple[tuple[int, Fraction], Dispute]] = []
    for pair, (query, fragment, named) in by_pair.items():
        values = list(named.values())
        low, high = min(values), max(values)
        if high == low:
            continue
        n, total = len(values), sum(values)
        variance = Fraction(n * sum(v * v for v in values) - total * total, n * (n - 1))
        shown = ", ".join(f"{name}: {grade}" for name, grade in named.items())
        dispute = Dispute(pair, query, fragment, high - low, low, high, shown, named, (query, fragment) in adjudicated)
        found.append(((high - low, variance), dispute))
    found.sort(key=lambda item: (item[1].query_id, item[1].fragment_id))
    found.sort(key=lambda item: item[0], reverse=True)  # stable: query and fragment order within a tie
    return [dispute for _, dispute in found]


def dispute_frame(found: Sequence[Dispute]) -> pd.DataFrame:
    """Disputes as the frame the Adjudicate page and the doubt order work on (DISPUTE_COLUMNS)."""
    import pandas as pd

    frame = pd.DataFrame([[getattr(d, c) for c in DISPUTE_COLUMNS] for d in found], columns=DISPUTE_COLUMNS)
    return frame.astype({"pair_id": "int64", "spread": "int64", "low": "int64", "high": "int64", "adjudicated": bool})


def disputes_of(judgments: pd.DataFrame, adjudicated: set[tuple[str, str]]) -> pd.DataFrame:
    """Every pair whose people gave different grades (model judges and can't-judge left out) in a judgments
    frame (db.store.frames.project_judgments), by find_disputes, as a frame (DISPUTE_COLUMNS)."""
    people = judgments[(judgments["annotator_kind"] == AnnotatorKind.HUMAN) & judgments["grade"].notna()]
    rows = zip(
        people["pair_id"].astype("int64"),
        people["query_id"],
        people["fragment_id"],
        people["annotator"].astype(str),
        people["grade"].astype("int64"),
        strict=True,
    )
    return dispute_frame(find_disputes(rows, adjudicated))


def in_filter(dispute: Dispute | Any, query: str | None = None, boundary: int | None = None) -> bool:
    """Whether a dispute (or a frame row) is of `query` and/or across grade `boundary` b: graded b or lower by
    someone and above b by someone else (the b|b+1 boundary)."""
    if query is not None and dispute.query_id != query:
        return False
    return boundary is None or dispute.low <= boundary < dispute.high


def filter_disputes(disputes: pd.DataFrame, query: str | None = None, boundary: int | None = None) -> pd.DataFrame:
    """The disputes frame's rows of one query and/or across one grade boundary (in_filter)."""
    keep = [in_filter(row, query, boundary) for row in disputes.itertuples(index=False)]
    return disputes[keep].reset_index(drop=True)


def people_grades(session: Session, project_id: int) -> list[tuple[int, str, str, str, int]]:
    """People's grades of the project as find_disputes reads them (pair_id, query_id, fragment_id, annotator,
    grade; can't-judge, model judges and references left out), sorted in Python as project_judgments sorts (not
    by the database's collation). A plain read, so the CLI's disputes need no frame."""
    rows = session.execute(
        select(
            col(Judgment.pair_id),
            col(Query.external_id),
            col(Fragment.external_id),
            col(User.username),
            col(Judgment.grade),
        )
        .select_from(Judgment)
        .join(Pair, col(Pair.id) == Judgment.pair_id)
        .join(Query, col(Query.id) == Pair.query_id)
        .join(Fragment, col(Fragment.id) == Pair.fragment_id)
        .join(User, col(User.id) == Judgment.user_id)
        .where(
            col(Judgment.project_id) == project_id,
            col(Judgment.grade).is_not(None),
            col(User.kind) == AnnotatorKind.HUMAN,
        )
    ).all()
    return sorted(((int(p), q, f, a, int(g)) for p, q, f, a, g in rows), key=lambda r: (r[1], r[2], r[3]))


def dispute_list(engine: Engine, project: str, query: str | None = None, boundary: int | None = None) -> list[Dispute]:
    """Every disputed pair of the project among people, widest spread first (find_disputes), of `query` and/or
    across `boundary` (in_filter), each marked when a lead decided it: what `qrelkit disputes` lists."""
    with session_scope(engine) as session:
        project_id = pk(project_row(session, project))
        grades = people_grades(session, project_id)
        decided = {
            (query, fragment)
            for query, fragment in session.execute(
                select(col(Query.external_id), col(Fragment.external_id))
                .select_from(Adjudication)
                .join(Pair, col(Pair.id) == Adjudication.pair_id)
                .join(Query, col(Query.id) == Pair.query_id)
                .join(Fragment, col(Fragment.id) == Pair.fragment_id)
                .where(col(Adjudication.project_id) == project_id)
                .distinct()
            ).all()
        }
    return [d for d in find_disputes(grades, decided) if in_filter(d, query, boundary)]


def by_doubt(
    frame: pd.DataFrame,
    judgments: pd.DataFrame,
    decided: pd.DataFrame,
    scale: tuple[int, int],
    controls: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The disputes `frame` ordered by the entropy (bits) of each pair's Dawid–Skene posterior over people's
    grades, most doubtful first, adding `entropy` and `top` (the most probable grade's posterior); control
    pairs and decided pairs are known truth to the model (entropy 0)."""
    import numpy as np

    from eval_core.consensus import consensus

    people = judgments[(judgments["annotator_kind"] == AnnotatorKind.HUMAN).to_numpy()]
    labels = consensus(
        people[["query_id", "fragment_id", "annotator", "grade"]],
        rule="dawid-skene",
        adjudications=decided[["query_id", "fragment_id", "grade"]],
        scale=scale,
        controls=controls,
    )
    posterior = {
        (q, f): np.fromiter(p.values(), dtype=np.float64)
        for q, f, p in zip(labels["query_id"], labels["fragment_id"], labels["posterior"], strict=True)
    }
    entropy, top = [], []
    for key in zip(frame["query_id"], frame["fragment_id"], strict=True):
        p = posterior[key]
        nonzero = p[p > 0]
        entropy.append(float(-(nonzero * np.log2(nonzero)).sum()) + 0.0)
        top.append(float(p.max()))
    out = frame.assign(entropy=entropy, top=top)
    out = out.sort_values(["entropy", "query_id", "fragment_id"], ascending=[False, True, True], kind="stable")
    return out.reset_index(drop=True)


def disputes(engine: Engine, project: str, order: str = "spread") -> pd.DataFrame:
    """Every disputed pair of the project among people (find_disputes), marking those a lead decided, in
    `order` (DISPUTE_ORDERS; "doubt" adds the columns entropy and top), as a frame (DISPUTE_COLUMNS)."""
    if order not in DISPUTE_ORDERS:
        raise ValueError(f"order must be one of {', '.join(DISPUTE_ORDERS)}, got {order!r}")
    if order == "spread":
        return dispute_frame(dispute_list(engine, project))
    from db.control import control_frames
    from db.store.frames import project_adjudications, project_judgments

    with session_scope(engine) as session:
        proj = project_row(session, project)
        judged = project_judgments(session, pk(proj))
        decided = project_adjudications(session, pk(proj))
        controls = control_frames(session, pk(proj))[1]
        scale = project_scale(proj)
    frame = disputes_of(judged, set(zip(decided["query_id"], decided["fragment_id"], strict=True)))
    return by_doubt(frame, judged, decided, scale, controls) if len(frame) else frame


def next_open(disputes: pd.DataFrame, after: int) -> int | None:
    """The pair_id of the first dispute not yet decided after pair `after` in the queue's order (wrapping to
    the start), or None when every dispute is decided."""
    ids = disputes["pair_id"].tolist()
    start = ids.index(after) + 1 if after in ids else 0
    for pair_id, decided in zip(
        ids[start:] + ids[:start], [*disputes["adjudicated"][start:], *disputes["adjudicated"][:start]], strict=True
    ):
        if not decided and pair_id != after:
            return int(pair_id)
    return None


def rejudge_queue(engine: Engine, project: str) -> pd.DataFrame:
    """Judgments made under an older guideline version than the current one (a reference's grades, e.g. an
    imported qrels, are never re-judged, so never listed; imports without a version are not listed either):
    pair_id, query_id, fragment_id, annotator, grade, guideline, current, and `sent` (the pair is back in that
    annotator's queue for re-judging)."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        current = session.execute(
            select(func.max(col(Guideline.version))).where(col(Guideline.project_id) == project_id)
        ).scalar_one()
        rows = (
            []
            if current is None
            else session.execute(
                select(
                    col(Pair.id),
                    col(Query.external_id),
                    col(Fragment.external_id),
                    col(User.username),
                    col(Judgment.grade),
                    col(Guideline.version),
                    col(Assignment.rejudge_version).is_not(None),
                )
                .select_from(Judgment)
                .join(Pair, col(Pair.id) == Judgment.pair_id)
                .join(Query, col(Query.id) == Pair.query_id)
                .join(Fragment, col(Fragment.id) == Pair.fragment_id)
                .join(User, col(User.id) == Judgment.user_id)
                .join(Guideline, col(Guideline.id) == Judgment.guideline_id)
                .outerjoin(
                    Assignment,
                    and_(col(Assignment.pair_id) == Judgment.pair_id, col(Assignment.user_id) == Judgment.user_id),
                )
                .where(
                    col(Judgment.project_id) == project_id,
                    col(Guideline.version) < current,
                    col(User.kind) != AnnotatorKind.REFERENCE,
                )
                .order_by(col(Query.external_id), col(Fragment.external_id), col(User.username))
            ).all()
        )
    import pandas as pd

    frame = pd.DataFrame(
        rows, columns=["pair_id", "query_id", "fragment_id", "annotator", "grade", "guideline", "sent"]
    )
    frame["grade"] = frame["grade"].astype("Float64").astype("Int64")
    frame["sent"] = frame["sent"].fillna(False).astype(bool)
    frame["current"] = current
    return frame[["pair_id", "query_id", "fragment_id", "annotator", "grade", "guideline", "current", "sent"]]


def send_for_rejudging(
    engine: Engine,
    project: str,
    pair_ids: Sequence[int] | None = None,
    to: Sequence[str] | None = None,
    *,
    actor: Actor,
) -> int:
    """Send pairs of the re-judge queue (all of it, or `pair_ids`) back to be graded under the guideline in
    force: to the annotators who judged them under the older version, or to the people named in `to`. Each
    assignment is reopened (created at the end of the person's queue when they had none) and marked with the
    version; the current judgment stays until the new grade replaces it, and history keeps both. Returns how
    many assignments were opened. Refused, sending nothing, when a pair would go to someone who met it in a
    qualification round (they saw its settled grade, so their grade would not be blind). Leads and the
    operator only."""
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        project_id = project_row(session, project).id
        current = session.execute(
            select(func.max(col(Guideline.version))).where(col(Guideline.project_id) == project_id)
        ).scalar_one()
        if current is None:
            raise ValueError(f"project {project!r} has no guideline: nothing to re-judge under")
        older = (
            select(col(Judgment.pair_id), col(Judgment.user_id))
            .join(Guideline, col(Guideline.id) == Judgment.guideline_id)
            .where(col(Judgment.project_id) == project_id, col(Guideline.version) < current)
        )
        if pair_ids is not None:
            older = older.where(col(Judgment.pair_id).in_(list(pair_ids)))
        listed = session.execute(older).all()
        if to is None:
            targets = sorted({(int(p), int(u)) for p, u in listed})
        else:
            people = judging_people(session, to)
            targets = sorted({(int(p), u) for p, _ in listed for u in people})
        refuse_seen(session, int(project_id or 0), targets)
        open_assignments(session, int(project_id or 0), targets, rejudge_version=int(current))
        return len(targets)


def open_assignments(session: Session, project_id: int, targets: Sequence[tuple[int, int]], **marks: int) -> None:
    """Open each (pair, person) of `targets` — reopened when the person has the assignment, else created at the end
    of their queue — with `marks` set on it (rejudge_version, post_edit_of): the one queue re-judging and
    post-editing a model judge's grades share, served blind by db.grading."""
    ends = dict(
        session.execute(
            select(col(Assignment.user_id), func.max(col(Assignment.position)))
            .where(col(Assignment.project_id) == project_id)
            .group_by(col(Assignment.user_id))
        ).all()
    )
    for pair_id, user_id in targets:
        row = session.execute(
            select(Assignment).where(col(Assignment.pair_id) == pair_id, col(Assignment.user_id) == user_id)
        ).scalar_one_or_none()
        if row is None:
            ends[user_id] = (ends.get(user_id) or 0) + 1
            row = Assignment(project_id=project_id, pair_id=pair_id, user_id=user_id, position=ends[user_id])
        row.done = False
        for name, value in marks.items():
            setattr(row, name, value)
        session.add(row)


def refuse_seen(session: Session, project_id: int, targets: Sequence[tuple[int, int]]) -> None:
    """Conflict naming the first (pair, person) of `targets` the person met in a qualification round."""
    from db.qualification import round_pair_ids

    seen = round_pair_ids(session, project_id)
    blocked = [(p, u) for p, u in targets if p in seen.get(u, set())]
    if not blocked:
        return
    pair_id, user_id = blocked[0]
    query, fragment = session.execute(
        select(col(Query.external_id), col(Fragment.external_id))
        .select_from(Pair)
        .join(Query, col(Query.id) == Pair.query_id)
        .join(Fragment, col(Fragment.id) == Pair.fragment_id)
        .where(col(Pair.id) == pair_id)
    ).one()
    name = session.execute(select(col(User.username)).where(col(User.id) == user_id)).scalar_one()
    more = f" (and {len(blocked) - 1} more such pair(s))" if len(blocked) > 1 else ""
    raise Conflict(
        f"nothing was sent: pair {query} {fragment} would go to {name!r}{more}, who saw its settled grade "
        "in their qualification round, so their grade would not be blind; send it to someone else or "
        "leave it out"
    )


def judging_people(session: Session, names: Sequence[str]) -> list[int]:
    """Ids of the named people who can grade: active, able to log in, not model judges."""
    rows = dict(
        session.execute(
            select(col(User.username), col(User.id)).where(
                col(User.username).in_(list(names)),
                col(User.active).is_(True),
                col(User.kind) == AnnotatorKind.HUMAN,
                col(User.password_hash).is_not(None),
            )
        ).all()
    )
    missing = [n for n in names if n not in rows]
    if missing:
        raise ValueError(
            f"cannot send pairs to {', '.join(map(repr, missing))}: re-judging needs active people who can log in"
        )
    return [rows[n] for n in names]

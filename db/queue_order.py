"""The project's queue order applied to an annotator's next pair: which assigned, ungraded pair of the query in
progress comes next, recomputed from the grades already recorded in the project."""

from __future__ import annotations

import statistics
import typing
from collections.abc import Hashable

from sqlalchemy import Text, bindparam, cast, false, func, select
from sqlalchemy.orm import Session

from db.store.models import Assignment, Fragment, Judgment, Pair, Project, Run, RunEntry, User, table_of
from eval_core.io.judgments import relevant_from
from eval_core.queue_order import QueryPool, make_order, replay_next
from eval_core.vocab import AnnotatorKind

ASSIGNMENTS, JUDGMENTS, PAIRS, PROJECTS = (table_of(m) for m in (Assignment, Judgment, Pair, Project))
RUNS, RUN_ENTRIES, USERS = (table_of(m) for m in (Run, RunEntry, User))
FRAGMENTS = table_of(Fragment)
MODEL_KIND: str = AnnotatorKind.MODEL.value
POOL_CACHE_SIZE = 512
_pools: dict[tuple, QueryPool] = {}
# Built once (as db.grading's hot statements are): per-call statement building cost more than the reads.
_QUERY = (
    select(PAIRS.c.query_id, PROJECTS.c.scale_min, PROJECTS.c.scale_max)
    .join(PROJECTS, PROJECTS.c.id == PAIRS.c.project_id)
    .where(PAIRS.c.id == bindparam("pair_id"))
)
_VERSION = select(func.count(), func.max(PAIRS.c.id), func.sum(func.length(cast(PAIRS.c.sources, Text)))).where(
    PAIRS.c.query_id == bindparam("query_id")
)
_RUN_HASHES = (
    select(RUNS.c.id, RUNS.c.content_hash).where(RUNS.c.project_id == bindparam("project_id")).order_by(RUNS.c.id)
)
# driven from the query's pairs (ix_pairs_query_id, then uq_assignments_pair_user), not the user's whole backlog
# the query's open assignments whose fragment has its text (one waiting for it is never served: db.textless)
_TODO = select(ASSIGNMENTS.c.pair_id, ASSIGNMENTS.c.position).where(
    ASSIGNMENTS.c.pair_id.in_(
        select(PAIRS.c.id)
        .join(FRAGMENTS, FRAGMENTS.c.id == PAIRS.c.fragment_id)
        .where(PAIRS.c.query_id == bindparam("query_id"), FRAGMENTS.c.has_text)
    ),
    ASSIGNMENTS.c.user_id == bindparam("user_id"),
    ASSIGNMENTS.c.done == false(),
)
_GRADES = (
    select(JUDGMENTS.c.pair_id, JUDGMENTS.c.grade, USERS.c.kind)
    .join(PAIRS, PAIRS.c.id == JUDGMENTS.c.pair_id)
    .join(USERS, USERS.c.id == JUDGMENTS.c.user_id)
    .where(PAIRS.c.query_id == bindparam("query_id"), JUDGMENTS.c.grade.is_not(None))
)


def _query_pool(session: Session, project_id: int, query_id: int) -> QueryPool:
    """The query's pool, built once per version of it: the key is the query's pairs (count, last id, total
    length of their provenance) and the project's runs (id, content hash), read in two index probes; pooling
    or a re-imported run changes the key."""
    conn = session.connection()
    pairs = conn.execute(_VERSION, {"query_id": query_id}).cursor.fetchall()
    runs = conn.execute(_RUN_HASHES, {"project_id": project_id}).cursor.fetchall()
    key = (str(conn.engine.url), query_id, tuple(pairs), tuple(runs))
    if key not in _pools:
        if len(_pools) >= POOL_CACHE_SIZE:
            _pools.clear()
        _pools[key] = _build_pool(session, project_id, query_id)
    return _pools[key]


def _build_pool(session: Session, project_id: int, query_id: int) -> QueryPool:
    """The query's pairs in pool order (best rank, then id, as assigned) and each pooled run's ranking of them;
    a run ranks only the pairs it contributed (its name is in the pair's sources)."""
    conn = session.connection()
    pairs = conn.execute(
        select(PAIRS.c.id, PAIRS.c.fragment_id, PAIRS.c.sources)
        .where(PAIRS.c.query_id == query_id)
        .order_by(PAIRS.c.best_rank.is_(None), PAIRS.c.best_rank, PAIRS.c.id)
    ).all()
    by_fragment = {f: (pid, set(sources or ())) for pid, f, sources in pairs}
    names = dict(conn.execute(select(RUNS.c.id, RUNS.c.name).where(RUNS.c.project_id == project_id)).all())
    rankings: dict[str, list[int]] = {}
    # run id IN (…) and the query id walk ix_run_entries_rank (run, query, rank): no scan of the other queries
    for run_id, fragment_id in conn.execute(
        select(RUN_ENTRIES.c.run_id, RUN_ENTRIES.c.fragment_id)
        .where(RUN_ENTRIES.c.run_id.in_(list(names)), RUN_ENTRIES.c.query_id == query_id)
        .order_by(RUN_ENTRIES.c.run_id, RUN_ENTRIES.c.rank)
    ):
        hit = by_fragment.get(fragment_id)
        if hit is not None and names[run_id] in hit[1]:
            rankings.setdefault(names[run_id], []).append(hit[0])
    return QueryPool(tuple(pid for pid, _, _ in pairs), tuple(tuple(r) for _, r in sorted(rankings.items())))


def _grades(session: Session, query_id: int) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Recorded grades of the query's pairs: (human grades, model grades) per pair id; can't-judge is left out."""
    human: dict[int, list[int]] = {}
    model: dict[int, list[int]] = {}
    for pair_id, grade, kind in session.connection().execute(_GRADES, {"query_id": query_id}).cursor.fetchall():
        (model if kind == MODEL_KIND else human).setdefault(pair_id, []).append(grade)
    return human, model


def ordered_next(
    session: Session, project_id: int, user_id: int, order: str, first: tuple[int, int]
) -> tuple[int, int]:
    """(pair id, position) the order serves next. `first` is the user's first to-do pair in queue order: its
    query is the one in progress (queries keep their queue order); within it the order picks among the user's
    assigned, ungraded pairs, replaying the policy over the grades recorded by everyone (median ≥ the
    relevance level counts as relevant). Falls back to `first` if the order names nothing."""
    conn = session.connection()
    query_id, low, high = typing.cast(
        tuple[int, int, int], conn.execute(_QUERY, {"pair_id": first[0]}).cursor.fetchone()
    )
    todo = dict(conn.execute(_TODO, {"user_id": user_id, "query_id": query_id}).cursor.fetchall())
    human, model = _grades(session, query_id)
    level = relevant_from((low, high))
    known: dict[Hashable, bool] = {
        pid: (g[0] if len(g) == 1 else statistics.median(g)) >= level for pid, g in human.items() if pid not in todo
    }
    policy = make_order(
        order,
        _query_pool(session, project_id, query_id),
        seed=query_id,
        rel_level=level,
        model_grades={pid: statistics.fmean(g) for pid, g in model.items()},
    )
    pick = replay_next(policy, known, todo)
    return (typing.cast(int, pick), todo[pick]) if pick is not None else first

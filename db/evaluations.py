"""Stored runs scored against releases: kept per run × release for trend charts and drop alerts, compared
with each other, and the holes they expose."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import numpy as np
import pandas as pd
from sqlalchemy import bindparam, delete, func, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from db.accounts.permissions import Actor, require_lead
from db.pooling import add_candidates
from db.projects import project_row, project_scale
from db.store.engine import session_scope
from db.store.frames import adjudications_frame, frame_of, judgments_frame
from db.store.models import Evaluation as EvaluationRow
from db.store.models import Fragment, Judgment, Pair, Project, Query, Release, Run, RunEntry, pk, table_of, utcnow
from db.textless import IMPORT_TEXTS, create_textless
from eval_core.errors import NotFound
from eval_core.ranking.evaluation import Evaluation, evaluate
from eval_core.ranking.significance import Comparison, bootstrap_ci, compare
from eval_core.robustness import RobustnessReport, robustness

# The metrics a lead watches: compared between runs, followed across releases, and alerted on when they drop.
HEADLINE = ("ndcg@10", "recall@10", "P@10", "mrr", "map")
CONFIDENCE = 0.95
N_BOOTSTRAP = 1000


class AlertCause(StrEnum):
    """What moved a metric beyond its interval: the run on the queries both releases label alike, or the
    golden set itself (queries added, removed or relabelled)."""

    RUN = "run"
    GOLDEN_SET = "golden set"


@dataclass(frozen=True)
class DropAlert:
    """One run's metric that fell below the CI of its previous evaluated release, split into the part the
    run's own change explains (`same_*`: its metric on the queries both releases label alike, with the CI of
    the earlier value there) and the part the golden set's change explains (queries added, removed and
    relabelled between the two releases)."""

    run: str
    metric: str
    version: int
    previous_version: int
    value: float
    previous: float
    previous_ci: tuple[float, float]
    cause: AlertCause
    n_same: int
    same_value: float | None
    same_previous: float | None
    same_ci: tuple[float, float] | None
    added: int
    removed: int
    relabelled: int


@dataclass(frozen=True)
class RunInfo:
    """A stored run as the app lists it."""

    id: int
    name: str
    n_lines: int
    content_hash: str
    created_at: datetime
    evaluations: int


def parse_version(version: int | str) -> int | None:
    """An explicit release number, or None for 'latest'."""
    if isinstance(version, int):
        return version
    text = str(version).strip().lower()
    if text == "latest":
        return None
    if not text.lstrip("v").isdigit():
        raise ValueError(f"release must be a number or 'latest', got {version!r}")
    return int(text.lstrip("v"))


def load_release(session: Session, project: Project, version: int | str = "latest") -> Release:
    """The release row `version` (or the newest); LookupError when there is none."""
    number = parse_version(version)
    stmt = select(Release).where(col(Release.project_id) == project.id)
    stmt = (
        stmt.where(col(Release.version) == number) if number is not None else stmt.order_by(col(Release.version).desc())
    )
    release = session.execute(stmt.limit(1)).scalar_one_or_none()
    if release is None:
        what = f"release {number}" if number is not None else "releases yet"
        raise NotFound(f"project {project.name!r} has no {what}")
    return release


def qrels_of(release: Release) -> pd.DataFrame:
    """A release's labels as the qrels frame (query_id, doc_id, grade), parsed from its stored TREC text."""
    rows = [line.split(" ") for line in release.qrels_trec.splitlines() if line]
    frame = (
        pd.DataFrame(rows, columns=["query_id", "iter", "doc_id", "grade"])
        if rows
        else pd.DataFrame({"query_id": [], "iter": [], "doc_id": [], "grade": []})
    )
    return frame.drop(columns="iter").astype({"query_id": str, "doc_id": str, "grade": "int64"})


def load_run(session: Session, project: Project, name: str) -> Run:
    """The stored run row by name; LookupError lists the runs that exist."""
    run = session.execute(
        select(Run).where(col(Run.project_id) == project.id, col(Run.name) == name)
    ).scalar_one_or_none()
    if run is None:
        known = session.execute(
            select(col(Run.name)).where(col(Run.project_id) == project.id).order_by(col(Run.name))
        ).scalars()
        raise NotFound(f"project {project.name!r} has no run named {name!r} (known: {', '.join(known) or 'none'})")
    return run


def run_frame(session: Session, run_id: int) -> pd.DataFrame:
    """A stored run rebuilt as the run frame (query_id, doc_id, score) from its entries, in ranked order."""
    frame = frame_of(
        session,
        select(col(RunEntry.query_id), col(RunEntry.doc_external_id), col(RunEntry.score))
        .where(col(RunEntry.run_id) == run_id)
        .order_by(col(RunEntry.query_id), col(RunEntry.rank)),
        ["query_id", "doc_id", "score"],
    )
    external = dict(
        session.connection()
        .execute(
            select(col(Query.id), col(Query.external_id))
            .join(Run, col(Run.project_id) == col(Query.project_id))
            .where(col(Run.id) == run_id)
        )
        .fetchall()
    )
    frame["query_id"] = frame["query_id"].map(external)
    return frame.astype({"query_id": str, "doc_id": str, "score": "float64"})


def stored_run_frame(engine: Engine, project: str, run_name: str) -> pd.DataFrame:
    """A stored run as the run frame, for callers without a session (the app's Evaluate page)."""
    with session_scope(engine) as session:
        return run_frame(session, pk(load_run(session, project_row(session, project), run_name)))


def release_qrels(engine: Engine, project: str, version: int | str = "latest") -> pd.DataFrame:
    """A release's qrels frame, for callers without a session (the app's Evaluate page)."""
    with session_scope(engine) as session:
        return qrels_of(load_release(session, project_row(session, project), version))


@dataclass(frozen=True)
class RobustnessInputs:
    """What a robustness check reads from the store: every current judgment (with annotator_kind when the store
    records it), the adjudications in force, the grading scale and the stored runs' frames by name."""

    judgments: pd.DataFrame
    adjudications: pd.DataFrame
    scale: tuple[int, int]
    runs: dict[str, pd.DataFrame]


def robustness_inputs(engine: Engine, project: str, runs: Sequence[str] | None = None) -> RobustnessInputs:
    """The project's judgments, adjudications, scale and stored runs (all of them unless `runs` names some)."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        names = (
            list(runs)
            if runs
            else session.execute(select(col(Run.name)).where(col(Run.project_id) == proj.id).order_by(col(Run.name)))
            .scalars()
            .all()
        )
        frames = {name: run_frame(session, pk(load_run(session, proj, name))) for name in names}
        scale = project_scale(proj)
    return RobustnessInputs(judgments_frame(engine, project), adjudications_frame(engine, project), scale, frames)


def project_robustness(
    engine: Engine,
    project: str,
    runs: Sequence[str] | None = None,
    metric: str = "ndcg@10",
    rule: str = "median",
    bootstrap: int = 200,
    seed: int = 0,
    rel_level: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> RobustnessReport:
    """Whether the stored runs' order on `metric` holds under every consensus rule, each annotator's labels,
    humans vs humans + models, and a bootstrap over annotators per pair (eval_core.robustness)."""
    inputs = robustness_inputs(engine, project, runs)
    if len(inputs.runs) < 2:
        raise ValueError(
            f"robustness compares two or more runs; got {len(inputs.runs)}"
            if runs
            else f"project {project!r} has {len(inputs.runs)} stored run(s); robustness compares two or "
            "more (import runs with `qrelkit import run`)"
        )
    if inputs.judgments.empty:
        raise ValueError(f"project {project!r} has no judgments yet")
    return robustness(
        inputs.judgments,
        inputs.runs,
        metric=metric,
        adjudications=inputs.adjudications,
        scale=inputs.scale,
        rule=rule,
        bootstrap=bootstrap,
        seed=seed,
        rel_level=rel_level,
        progress=progress,
    )


def score_run(qrels: pd.DataFrame, run: pd.DataFrame, name: str, scale: tuple[int, int]) -> Evaluation:
    """eval_core's evaluation of one rebuilt run against one release's qrels on the project's scale: its lowest
    grade, whatever number it has, means not relevant (relevance from the second grade) and gains 0 in nDCG."""
    return evaluate(qrels, run, name=name, scale=scale)


def store_evaluation(session: Session, run_id: int, release_id: int, result: Evaluation) -> int:
    """Write one run × release evaluation, replacing an earlier one; returns its row id."""
    table = table_of(EvaluationRow)
    session.execute(delete(table).where(table.c.run_id == run_id, table.c.release_id == release_id))
    per_query = result.to_dict(per_query=True)["per_query"]
    row = {
        "run_id": run_id,
        "release_id": release_id,
        "means": dict(result.mean),
        "per_query": per_query,
        "warnings": list(result.warnings),
        "created_at": utcnow(),
    }
    return session.execute(insert(table).returning(table.c.id), row).scalar_one()


def evaluate_stored_run(
    engine: Engine, project: str, run_name: str, version: int | str = "latest"
) -> tuple[Evaluation, int]:
    """Score a stored run against a release with eval_core and keep the result (re-evaluation replaces it)."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        release = load_release(session, proj, version)
        run = load_run(session, proj, run_name)
        result = score_run(qrels_of(release), run_frame(session, pk(run)), run.name, project_scale(proj))
        run_id, release_id = pk(run), pk(release)
    with session_scope(engine, write=True) as session:
        stored = store_evaluation(session, run_id, release_id, result)
    return result, stored


def list_runs(engine: Engine, project: str) -> list[RunInfo]:
    """The project's stored runs by name, with how many releases each has been evaluated against."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        counts = dict(
            session.execute(
                select(col(EvaluationRow.run_id), func.count())
                .join(Run)
                .where(col(Run.project_id) == proj.id)
                .group_by(col(EvaluationRow.run_id))
            ).all()
        )
        runs = (
            session.execute(select(Run).where(col(Run.project_id) == proj.id).order_by(col(Run.name))).scalars().all()
        )
        return [RunInfo(r.id, r.name, r.n_lines, r.content_hash, r.created_at, counts.get(r.id, 0)) for r in runs]


def _stored(
    session: Session, run_id: int, versions: Sequence[int] | None = None
) -> list[tuple[int, datetime, dict, dict | None]]:
    """A run's stored evaluations (only at `versions` when given), oldest release first: (version,
    released_at, means, per_query)."""
    stmt = (
        select(col(Release.version), col(Release.created_at), col(EvaluationRow.means), col(EvaluationRow.per_query))
        .join(Release, col(Release.id) == col(EvaluationRow.release_id))
        .where(col(EvaluationRow.run_id) == run_id)
    )
    if versions is not None:
        stmt = stmt.where(col(Release.version).in_(list(versions)))
    return [tuple(r) for r in session.execute(stmt.order_by(col(Release.version))).all()]


def mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """Percentile bootstrap CI of a mean over queries (seeded, so a page and a test see the same bounds)."""
    return bootstrap_ci(np.asarray(values, dtype=np.float64), n_bootstrap=N_BOOTSTRAP, confidence=CONFIDENCE)


def _history_rows(stored: list[tuple[int, datetime, dict, dict | None]], metrics: Sequence[str]) -> list[tuple]:
    """(version, released_at, metric, value, low, high) per stored release × metric, the CI over its queries."""
    rows = []
    for version, at, means, per_query in stored:
        for metric in metrics:
            if metric not in means:
                continue
            values = [row[metric] for row in (per_query or {}).values() if metric in row]
            low, high = mean_ci(values) if values else (float(means[metric]),) * 2
            rows.append((version, at, metric, float(means[metric]), low, high))
    return rows


def run_history(engine: Engine, project: str, run_name: str, metrics: Sequence[str] = HEADLINE) -> pd.DataFrame:
    """One row per evaluated release × metric (version, released_at, metric, value, low, high, change, drop)
    for trend charts; `drop` flags a value below the CI [low, high] of the previous evaluated release when
    that CI has width."""
    columns = ["version", "released_at", "metric", "value", "low", "high", "change", "drop"]
    with session_scope(engine) as session:
        run = load_run(session, project_row(session, project), run_name)
        stored = _stored(session, pk(run))
    if stored:
        unknown = sorted(set(metrics) - {m for _, _, means, _ in stored for m in means})
        if unknown:
            raise ValueError(f"metric(s) not in the stored evaluations: {', '.join(unknown)}")
    frame = pd.DataFrame(_history_rows(stored, metrics), columns=columns[:6])
    frame = frame.sort_values(["metric", "version"], kind="stable").reset_index(drop=True)
    by_metric = frame.groupby("metric")
    frame["change"] = by_metric["value"].diff()
    # A point CI (one query, or all alike) cannot tell a fall from noise: it never flags a drop.
    frame["drop"] = (
        (frame["value"] < by_metric["low"].shift()) & (by_metric["high"].shift() > by_metric["low"].shift())
    ).astype(bool)
    return frame[columns]


def _labels(release: Release) -> dict[str, frozenset[tuple[str, int]]]:
    """Each query's labels in a release as a set of (fragment, grade), to tell relabelled queries apart."""
    qrels = qrels_of(release)
    return {
        str(q): frozenset(zip(part["doc_id"], part["grade"], strict=True))
        for q, part in qrels.groupby("query_id", sort=False)
    }


def _widens(ci: tuple[float, float] | None) -> bool:
    """Whether an interval has width: a point (one query, or every query alike) tells no fall from noise."""
    return ci is not None and ci[1] > ci[0]


def drop_alerts(
    engine: Engine, project: str, version: int | str = "latest", metrics: Sequence[str] = HEADLINE
) -> list[DropAlert]:
    """At most one alert per (run, metric) at `version` against the run's previous evaluated release, by run
    name then metric order. The run is blamed (cause RUN) only when its metric on the queries both releases
    label alike fell below the CI of its earlier value there; otherwise a fall of the whole mean below the
    previous CI is the golden set's (cause GOLDEN_SET: queries added, removed, relabelled). A zero-width CI
    never raises an alert."""
    alerts = []
    with session_scope(engine) as session:
        proj = project_row(session, project)
        number = load_release(session, proj, version).version
        evaluated = session.execute(
            select(col(Run.id), col(Run.name), col(Release.version))
            .join(EvaluationRow, col(EvaluationRow.run_id) == col(Run.id))
            .join(Release, col(Release.id) == col(EvaluationRow.release_id))
            .where(col(Run.project_id) == proj.id, col(Release.version) <= number)
            .order_by(col(Run.name), col(Release.version))
        ).all()
        versions: dict[tuple[int, str], list[int]] = {}
        for run_id, name, v in evaluated:
            versions.setdefault((run_id, name), []).append(v)
        # Only the two evaluations compared are read (their per-query values are the bulk of a row).
        pairs = {
            name: _stored(session, run_id, (seen[-2], number))
            for (run_id, name), seen in versions.items()
            if len(seen) > 1 and seen[-1] == number
        }
        labels = {
            v: _labels(load_release(session, proj, v))
            for v in {older[0] for older, _ in pairs.values()} | ({number} if pairs else set())
        }
    for name, (older, current) in pairs.items():
        before_labels, now_labels = labels[older[0]], labels[number]
        shared = before_labels.keys() & now_labels.keys()
        alike = {q for q in shared if before_labels[q] == now_labels[q]}
        changes = (
            len(now_labels.keys() - before_labels.keys()),
            len(before_labels.keys() - now_labels.keys()),
            len(shared) - len(alike),
        )
        before = {r[2]: r for r in _history_rows([older], metrics)}
        for _, _, metric, value, _, _ in _history_rows([current], metrics):
            if metric not in before:
                continue
            _, _, _, previous, low, high = before[metric]
            same = sorted(
                q for q in alike if metric in (older[3] or {}).get(q, {}) and metric in (current[3] or {}).get(q, {})
            )
            was = [float((older[3] or {})[q][metric]) for q in same]
            now = [float((current[3] or {})[q][metric]) for q in same]
            same_ci = mean_ci(was) if same else None
            if same and same_ci is not None and _widens(same_ci) and float(np.mean(now)) < same_ci[0]:
                cause = AlertCause.RUN
            elif any(changes) and _widens((low, high)) and value < low:
                cause = AlertCause.GOLDEN_SET
            else:
                continue
            alerts.append(
                DropAlert(
                    name,
                    metric,
                    number,
                    older[0],
                    value,
                    previous,
                    (low, high),
                    cause,
                    len(same),
                    float(np.mean(now)) if same else None,
                    float(np.mean(was)) if same else None,
                    same_ci,
                    *changes,
                )
            )
    return alerts


def ensure_evaluation(engine: Engine, project: str, run_name: str, version: int | str = "latest") -> bool:
    """Keep the run × release evaluation the history and the drop alerts read, computing it only when it is
    not stored yet (a release stores every run it knows; a run imported later is stored on first view).
    Returns True when it was computed now."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        release = load_release(session, proj, version)
        run = load_run(session, proj, run_name)
        if _has_evaluation(session, pk(run), pk(release)):
            return False
        result = score_run(qrels_of(release), run_frame(session, pk(run)), run.name, project_scale(proj))
        run_id, release_id = pk(run), pk(release)
    try:
        with session_scope(engine, write=True) as session:
            if _has_evaluation(session, run_id, release_id):  # another session stored it meanwhile
                return False
            store_evaluation(session, run_id, release_id, result)
    except IntegrityError:  # PostgreSQL: a concurrent session inserted the same run × release first
        return False
    return True


def _has_evaluation(session: Session, run_id: int, release_id: int) -> bool:
    """Whether the run × release evaluation is stored."""
    return (
        session.execute(
            select(col(EvaluationRow.id)).where(
                col(EvaluationRow.run_id) == run_id, col(EvaluationRow.release_id) == release_id
            )
        ).first()
        is not None
    )


def compare_runs(
    engine: Engine,
    project: str,
    version: int | str,
    base: tuple[str, pd.DataFrame],
    rivals: Sequence[str],
    metrics: Sequence[str] = HEADLINE,
    rel_level: int | None = None,
) -> Comparison:
    """Paired tests of a run (a stored one or an upload, as its frame) against stored rivals on one release's
    queries, every run scored here with the same rel_level (default, as stored evaluations: the scale's
    second grade) and gains from the project's scale."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        scale = project_scale(proj)
        qrels = qrels_of(load_release(session, proj, version))
        frames = {name: run_frame(session, pk(load_run(session, proj, name))) for name in rivals if name != base[0]}
    return compare(qrels, {base[0]: base[1], **frames}, list(metrics), rel_level=rel_level, scale=scale)


def holes_without_text(engine: Engine, project: str, run_name: str, k: int = 10) -> int:
    """How many documents in a run's top-k have no text in the project and no grade: their fragments were never
    imported (kept as fragments waiting for their text, db.textless), so their pairs can be made and evaluated
    but never served until `qrelkit import fragments` brings the texts."""
    with session_scope(engine) as session:
        run = load_run(session, project_row(session, project), run_name)
        graded = (
            select(col(Judgment.id))
            .join(Pair, col(Pair.id) == col(Judgment.pair_id))
            .where(col(Pair.query_id) == col(RunEntry.query_id), col(Pair.fragment_id) == col(RunEntry.fragment_id))
        )
        return int(
            session.execute(
                select(func.count())
                .select_from(RunEntry)
                .outerjoin(Fragment, col(Fragment.id) == col(RunEntry.fragment_id))
                .where(
                    col(RunEntry.run_id) == run.id,
                    col(RunEntry.rank) <= k,
                    col(RunEntry.fragment_id).is_(None) | ~col(Fragment.has_text),
                    ~graded.exists(),
                )
            ).scalar_one()
        )


def no_text_advice(missing: int) -> str:
    """What to do about unjudged top-k documents without a text: one sentence for `qrelkit holes` and the
    Evaluate page."""
    return (
        f"{missing:,} unjudged pair(s) have no text yet (their fragments were never imported): they are kept as "
        f"pairs waiting for their text and never served to an annotator; import their texts with {IMPORT_TEXTS}, "
        "then assign them"
    )


def judge_holes(engine: Engine, project: str, run_name: str, k: int = 10, *, actor: Actor) -> int:
    """Turn the fragments in a run's top-k that no pair covers yet (same text counts as covered) into new pairs
    with provenance 'holes:<run>', ready for assignment (a lead's call); returns how many were created. A
    document a run stored before 0017 left without a fragment becomes one waiting for its text, so its pair
    exists (and waits, counted by holes_without_text) like any other."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        proj = project_row(session, project, lock=True)
        run = load_run(session, proj, run_name)
        _link_textless(session, pk(proj), pk(run), k)
        covered = set(
            session.execute(
                select(col(Pair.query_id), col(Fragment.content_hash))
                .join(Fragment, col(Fragment.id) == col(Pair.fragment_id))
                .where(col(Pair.project_id) == proj.id)
            ).all()
        )
        top = session.execute(
            select(col(RunEntry.query_id), col(RunEntry.fragment_id), col(RunEntry.rank), col(Fragment.content_hash))
            .join(Fragment, col(Fragment.id) == col(RunEntry.fragment_id))
            .where(col(RunEntry.run_id) == run.id, col(RunEntry.rank) <= k)
        ).all()
        source = f"holes:{run.name}"
        holes = [(q, f, r, source) for q, f, r, h in top if (q, h) not in covered]
        return add_candidates(session, pk(proj), holes).created if holes else 0


def _link_textless(session: Session, project_id: int, run_id: int, k: int) -> None:
    """Give the run's top-k documents that have no fragment (a run stored before 0017) one waiting for its text,
    or the fragment imported under their id since, in the caller's transaction."""
    docs = {
        doc
        for (doc,) in session.execute(
            select(col(RunEntry.doc_external_id)).where(
                col(RunEntry.run_id) == run_id, col(RunEntry.rank) <= k, col(RunEntry.fragment_id).is_(None)
            )
        )
    }
    if not docs:
        return
    have = dict(
        session.execute(
            select(col(Fragment.external_id), col(Fragment.id)).where(
                col(Fragment.project_id) == project_id, col(Fragment.external_id).in_(sorted(docs))
            )
        ).all()
    )
    have.update(create_textless(session, project_id, docs - have.keys()))
    entries = table_of(RunEntry)
    session.execute(
        entries.update()
        .where(entries.c.run_id == run_id, entries.c.doc_external_id == bindparam("doc"))
        .values(fragment_id=bindparam("fid")),
        [{"doc": doc, "fid": fid} for doc, fid in have.items()],
    )

"""A release's reliability from the store: its qrels, the stored runs, and which pairs each run put in the pool
(the pairs' recorded sources), handed to eval_core.reliability; and the reliability entry every release card
keeps (its sentence and the numbers behind it)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db.evaluations import load_release, load_run, qrels_of, run_frame
from db.projects import project_row, project_scale
from db.store.engine import session_scope
from db.store.models import Fragment, Pair, Project, Query, Run
from eval_core.reliability import ReliabilityReport, Settings, reliability
from eval_core.reliability.pool_bias import Pairs

CARD_METRIC = "ndcg@10"
CARD_RESAMPLES = 1000  # the card's Tukey HSD permutations and split halves on a small release
CARD_MIN_RESAMPLES = 100  # ... and the fewest it uses on a large one
CARD_WORK = 10_000_000  # resamples × runs × queries the card may spend (≈ 0.5 s: 10 runs × 1,000 queries)
NO_RUNS = (
    "No stored runs, so this release was not sized: reliability needs two or more runs scored on it "
    "(import them with `qrelkit import run`; the Evaluate page and the next release then size it)."
)


def pool_contributions(session: Session, project_id: int, runs: Sequence[str]) -> dict[str, Pairs]:
    """Per stored run among `runs`, the (query, fragment) external ids of the pairs whose pool sources name it."""
    rows = session.execute(
        select(Query.external_id, Fragment.external_id, col(Pair.sources))
        .join(Query, col(Query.id) == Pair.query_id)
        .join(Fragment, col(Fragment.id) == Pair.fragment_id)
        .where(Pair.project_id == project_id)
    ).all()
    wanted = set(runs)
    pooled: dict[str, Pairs] = {}
    for qid, fid, sources in rows:
        for source in sources or ():
            if source in wanted:
                pooled.setdefault(source, set()).add((qid, fid))
    return pooled


def project_reliability(
    engine: Engine,
    project: str,
    version: int | str = "latest",
    runs: Sequence[str] | None = None,
    metrics: Sequence[str] = ("ndcg@10",),
    settings: Settings | None = None,
    rel_level: int | None = None,
) -> ReliabilityReport:
    """The reliability of release `version` (the newest by default) against the stored runs (all unless `runs`
    names some), on the project's scale; pool bias for the runs the pool was built from."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        release = load_release(session, proj, version)
        names = (
            list(runs)
            if runs
            else list(
                session.execute(select(Run.name).where(Run.project_id == proj.id).order_by(col(Run.name))).scalars()
            )
        )
        if not names:
            raise ValueError(f"project {project!r} has no stored runs (import runs with `qrelkit import run`)")
        assert proj.id is not None
        frames = {name: run_frame(session, _run_id(session, proj, name)) for name in names}
        qrels = qrels_of(release)
        pooled = pool_contributions(session, proj.id, names)
        scale = project_scale(proj)
        number = release.version
    if qrels.empty:
        raise ValueError(f"release {number} of project {project!r} has no labels")
    return reliability(
        qrels,
        frames,
        metrics,
        settings=settings,
        pooled=pooled,
        rel_level=rel_level,
        scale=scale,
        source=f"release {number} of {project}",
    )


def _run_id(session: Session, project: Project, name: str) -> int:
    """A stored run's row id by name (LookupError names the runs that exist)."""
    run_id = load_run(session, project, name).id
    assert run_id is not None
    return run_id


def card_settings(n_runs: int, n_queries: int) -> Settings:
    """The card's settings: the defaults (δ 0.02, α 0.05, power 0.8, Tukey HSD, seed 0) with CARD_RESAMPLES
    resamples, fewer when runs × queries × resamples would exceed CARD_WORK, never fewer than
    CARD_MIN_RESAMPLES, so cutting a release stays quick however large it is."""
    cells = max(1, n_runs * n_queries)
    return Settings(resamples=max(CARD_MIN_RESAMPLES, min(CARD_RESAMPLES, CARD_WORK // cells)))


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by None, so the card is strict JSON (PostgreSQL's JSON
    and every JSON reader refuse NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def reliability_card(
    qrels: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame],
    pooled: Mapping[str, Pairs],
    scale: tuple[int, int],
    source: str,
) -> dict[str, Any]:
    """The card's reliability entry for a golden set (`qrels`: query_id, doc_id, grade) against `runs`: the
    sentence on CARD_METRIC, then the report as `qrelkit reliability --format json` gives it (settings, runs,
    pooled runs, per-metric numbers with every run pair's ASL, notes). With no run, NO_RUNS and empty lists."""
    if not runs:
        return {
            "sentence": NO_RUNS,
            "source": source,
            "runs": [],
            "pooled": [],
            "metrics": [],
            "settings": card_settings(0, 0).to_dict(),
            "notes": [NO_RUNS],
        }
    settings = card_settings(len(runs), int(qrels["query_id"].nunique()))
    report = reliability(qrels, runs, [CARD_METRIC], settings=settings, pooled=pooled, scale=scale, source=source)
    return _finite({"sentence": report.sentence(), **report.to_dict()})


def release_sentence(engine: Engine, project: str, version: int | str = "latest") -> str:
    """The reliability sentence of release `version`: the one its card keeps (measured against the runs stored
    when it was cut); for a release cut before cards kept one, measured now the way a new card would be."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        release = load_release(session, proj, version)
        kept = (release.card or {}).get("reliability")
        if kept:
            return str(kept["sentence"])
        names = list(
            session.execute(select(Run.name).where(Run.project_id == proj.id).order_by(col(Run.name))).scalars()
        )
        assert proj.id is not None
        frames = {name: run_frame(session, _run_id(session, proj, name)) for name in names}
        pooled = pool_contributions(session, proj.id, names)
        qrels, scale, number = qrels_of(release), project_scale(proj), release.version
    return str(reliability_card(qrels, frames, pooled, scale, f"release {number} of {project}")["sentence"])

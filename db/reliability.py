"""A release's reliability from the store: its qrels, the stored runs, and which pairs each run put in the pool
(the pairs' recorded sources), handed to eval_core.reliability."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db.evaluations import load_release, load_run, qrels_of, run_frame
from db.projects import project_row, project_scale
from db.store.engine import session_scope
from db.store.models import Fragment, Pair, Project, Query, Run
from eval_core.reliability import ReliabilityReport, Settings, reliability
from eval_core.reliability.pool_bias import Pairs


def pool_contributions(session: Session, project_id: int, runs: Sequence[str]) -> dict[str, Pairs]:
    """Per stored run among `runs`, the (query, fragment) external ids of the pairs whose pool sources name it."""
    rows = session.execute(select(Query.external_id, Fragment.external_id, col(Pair.sources))
                           .join(Query, col(Query.id) == Pair.query_id).join(Fragment, col(Fragment.id) == Pair.fragment_id)
                           .where(Pair.project_id == project_id)).all()
    wanted = set(runs)
    pooled: dict[str, Pairs] = {}
    for qid, fid, sources in rows:
        for source in sources or ():
            if source in wanted:
                pooled.setdefault(source, set()).add((qid, fid))
    return pooled


def project_reliability(engine: Engine, project: str, version: int | str = "latest",
                        runs: Sequence[str] | None = None, metrics: Sequence[str] = ("ndcg@10",),
                        settings: Settings | None = None, rel_level: int | None = None) -> ReliabilityReport:
    """The reliability of release `version` (the newest by default) against the stored runs (all unless `runs`
    names some), on the project's scale; pool bias for the runs the pool was built from."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        release = load_release(session, proj, version)
        names = list(runs) if runs else list(session.execute(select(Run.name).where(Run.project_id == proj.id)
                                                             .order_by(col(Run.name))).scalars())
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
    return reliability(qrels, frames, metrics, settings=settings, pooled=pooled, rel_level=rel_level, scale=scale,
                       source=f"release {number} of {project}")


def _run_id(session: Session, project: Project, name: str) -> int:
    """A stored run's row id by name (LookupError names the runs that exist)."""
    run_id = load_run(session, project, name).id
    assert run_id is not None
    return run_id


def release_sentence(engine: Engine, project: str, version: int) -> str | None:
    """The release card's reliability sentence for release `version` on ndcg@10 against every stored run, or None
    when the project has no stored run to measure it with (db/releases.py calls this once the release is
    written and keeps the sentence on the card)."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        if session.execute(select(col(Run.id)).where(Run.project_id == proj.id).limit(1)).first() is None:
            return None
    return project_reliability(engine, project, version).sentence()

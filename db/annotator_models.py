"""Each annotator of a project as the annotator models see them (eval_core.consensus.annotators), with the
lead's settled grades (control pairs, adjudications) as known truth and each one's control-pair accuracy beside."""

from __future__ import annotations

import pandas as pd
from sqlalchemy.engine import Engine

from db.control import control_frames, project_control_report
from db.projects import project_row, project_scale
from db.store.engine import session_scope
from db.store.frames import project_adjudications, project_judgments
from eval_core.consensus.annotators import AnnotatorReport, annotator_report
from eval_core.vocab import AnnotatorKind


def settled_grades(adjudications: pd.DataFrame, controls: pd.DataFrame) -> pd.DataFrame:
    """query_id, fragment_id, grade the lead settled: control pairs, then adjudications (a decision wins)."""
    both = pd.concat(
        [controls[["query_id", "fragment_id", "grade"]], adjudications[["query_id", "fragment_id", "grade"]]],
        ignore_index=True,
    )
    return both.drop_duplicates(["query_id", "fragment_id"], keep="last").reset_index(drop=True)


def project_annotator_report(
    engine: Engine, project: str, replicates: int = 200, seed: int = 0
) -> tuple[AnnotatorReport, dict[str, float | None]]:
    """The project's people (model judges left out) under Dawid–Skene and MACE, and each one's accuracy on the
    control pairs (None: no control pair graded)."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        assert proj.id is not None
        judged = project_judgments(session, proj.id)
        adjudications = project_adjudications(session, proj.id)
        controls = control_frames(session, proj.id)[1]
        scale = project_scale(proj)
    people = judged[judged["annotator_kind"].eq(AnnotatorKind.HUMAN).to_numpy()]
    report = annotator_report(
        people[["query_id", "fragment_id", "annotator", "grade"]],
        scale=scale,
        known=settled_grades(adjudications, controls),
        replicates=replicates,
        seed=seed,
    )
    accuracy: dict[str, float | None] = {a.annotator: None for a in report.annotators}
    if len(controls):
        for score in project_control_report(engine, project, replicates=0).per_annotator:
            if score.group is None and score.annotator in accuracy:
                accuracy[score.annotator] = score.accuracy.value
    return report, accuracy

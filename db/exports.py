"""Every current judgment of a project as a file, before any release: what agreement, consensus and import read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from db.projects import project_row
from db.store.engine import session_scope
from db.store.frames import frame_of, project_judgments
from db.store.models import Judgment, User
from eval_core.io.formats import write_atomically
from eval_core.io.judgments import render_judgments
from eval_core.vocab import AnnotatorKind


def export_judgments(engine: Engine, project: str, fmt: str, out: str | Path,
                     guideline_version: int | None = None) -> int:
    """Write the project's current judgments (optionally only those made under one guideline version) to `out`
    as JSONL or CSV, all or nothing; returns how many were written. Each line says who judged: the annotator's
    kind and, for a model judge, its model and the prompt version behind the grade, so an import elsewhere
    keeps model judges apart from people."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        frame = project_judgments(session, project_id, times=True).rename(columns={"updated_at": "time"})
        frame = _with_model_fields(session, project_id, frame)
    if guideline_version is not None:
        frame = frame[frame["guideline"] == str(guideline_version)]
    write_atomically(Path(out), render_judgments(frame, fmt))
    return len(frame)


def _with_model_fields(session: Session, project_id: int, frame: pd.DataFrame) -> pd.DataFrame:
    """The judgments frame plus `model` (the judge's model name) and `prompt_version` (the one stamped on the
    grade), None on people's lines; read in the frame's transaction, column-wise (a model may grade them all)."""
    models = dict(session.execute(select(User.username, User.model_name).where(User.kind == AnnotatorKind.MODEL)).all())
    stamped = frame_of(session, select(Judgment.pair_id, User.username, Judgment.prompt_version)
                       .join(User, User.id == Judgment.user_id)
                       .where(Judgment.project_id == project_id, User.kind == AnnotatorKind.MODEL,
                              Judgment.prompt_version.is_not(None)), ["pair_id", "annotator", "prompt_version"])
    is_model = (frame["annotator_kind"] == AnnotatorKind.MODEL).to_numpy()
    model = frame["annotator"].map(models).astype(object)
    where = pd.MultiIndex.from_frame(stamped[["pair_id", "annotator"]]).get_indexer(
        pd.MultiIndex.from_arrays([frame["pair_id"], frame["annotator"]])) if len(stamped) else None
    prompt = (pd.Series(None, index=frame.index, dtype=object) if where is None else
              pd.Series(stamped["prompt_version"].to_numpy(dtype=object)[where], index=frame.index, dtype=object)
              .where(where >= 0, None))
    return frame.assign(model=model.where(is_model & model.notna(), None), prompt_version=prompt.where(is_model, None))

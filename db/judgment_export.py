"""Every current judgment of a project as a file, before any release: what agreement, consensus and import read."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from db.queries_frames import judgments_frame
from eval_core.formats import write_atomically
from eval_core.judgments import render_judgments


def export_judgments(engine: Engine, project: str, fmt: str, out: str | Path,
                     guideline_version: int | None = None) -> int:
    """Write the project's current judgments (optionally only those made under one guideline version) to `out`
    as JSONL or CSV, all or nothing; returns how many were written."""
    frame = judgments_frame(engine, project, times=True).rename(columns={"updated_at": "time"})
    if guideline_version is not None:
        frame = frame[frame["guideline"] == str(guideline_version)]
    write_atomically(Path(out), render_judgments(frame, fmt))
    return len(frame)

"""Helpers shared by the lead pages: the lead guard, the project picker, uploads and import reports."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator import state
from annotator.auth import require_role
from db import projects


def lead_page(title: str) -> tuple[Engine, Any]:
    """Stop anyone who is not a lead (also when the page is opened by URL), then title the page."""
    user = require_role("lead")
    st.title(title)
    return state.engine(), user


def pick_project(engine: Engine) -> Any | None:
    """The project this session works on (part A's sidebar picker), with its scale and threshold."""
    name = state.current_project()
    if name is None:
        st.info("No project yet: create one on the Project page.")
        return None
    return projects.get_project(engine, name)


def as_dict(report: Any) -> dict[str, Any]:
    """A store report (dataclass or dict) as a dict for display."""
    return asdict(report) if is_dataclass(report) else dict(report)


@contextmanager
def saved_upload(upload: Any) -> Iterator[Path]:
    """An uploaded file written to a temporary path that keeps its name (the readers go by extension)."""
    with tempfile.TemporaryDirectory(prefix="qrelkit-upload-") as tmp:
        path = Path(tmp) / Path(upload.name).name
        path.write_bytes(upload.getvalue())
        yield path


def upload_error(exc: Exception, path: Path, upload_name: str) -> str:
    """An import error as `name:line: problem`, naming the uploaded file rather than its temp copy."""
    return str(exc).replace(str(path), upload_name)


def scale_of(project: Any) -> tuple[int, int]:
    """The project's grading scale as a plain (low, high) pair."""
    return int(project.scale[0]), int(project.scale[1])


def project_caption(project: Any) -> str:
    """One line with the project's policy."""
    low, high = scale_of(project)
    return (f"Scale {low}–{high} · {project.overlap} annotators per pair on {project.overlap_fraction:.0%} of "
            f"pairs · agreement threshold {project.threshold:g}")


def show_import_report(report: Any, path: Path, upload_name: str) -> None:
    """The validation report of an import: counts, then every rejected line as name:line: problem."""
    cols = st.columns(4)
    for col, key in zip(cols, ("created", "updated", "unchanged"), strict=False):
        col.metric(key, getattr(report, key))
    cols[3].metric("rejected", len(report.rejected))
    if report.rejected:
        lines = "\n".join(upload_error(Exception(r), path, upload_name) for r in report.rejected)
        st.code(lines, language=None)
    else:
        st.success(f"{upload_name}: {report.records} record(s) imported.")


def progress_table(stats: pd.DataFrame) -> pd.DataFrame:
    """Annotator stats with a done/assigned share for a progress bar and speed in seconds per pair."""
    table = stats.copy()
    assigned = table["assigned"].where(table["assigned"] > 0)
    table.insert(1, "progress", (table["done"] / assigned).fillna(0.0))
    return table


"""Widgets shared by the pages: fragments, readable tables, the lead guard, the current project, uploads and
import reports (the text they escape comes from annotator.app.text)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler
from sqlalchemy.engine import Engine
from streamlit.runtime.uploaded_file_manager import UploadedFile

from annotator.app import state
from annotator.app.auth import require_role
from annotator.app.text import highlighted, literal
from db import projects
from db.accounts.users import UserInfo
from db.imports import GAINS_NEED_ANNOTATOR, QRELS_AS_RUN
from db.projects import ProjectInfo
from eval_core.io.judgments import READ_AS_GAINS
from eval_core.io.records import tighter_limits
from eval_core.io.trec_text import SWAPPED_ADVICE
from eval_core.vocab import Role

MISSING = "—"
FRAGMENT_STYLE = (
    "font-family: inherit; font-size: 1.05rem; line-height: 1.6; white-space: pre-wrap; "
    "overflow-wrap: anywhere; max-height: 28rem; overflow-y: auto;"
)


def fragment_text(text: str, query: str) -> None:
    """A fragment in proportional type, as tall as its text (scrolling only past 28 rem), the query's terms
    marked; the text is HTML-escaped before the marks go in, so nothing in it is ever markup."""
    st.html(f'<div class="qrelkit-fragment" style="{FRAGMENT_STYLE}">{highlighted(text, query)}</div>')


def fragment_source(title: str | None, doc_id: str | None, fragment_id: str) -> str:
    """The caption above a fragment: its title and source document when present (and not just the fragment's
    own id again), and its id (all literal)."""
    parts = [f"**{literal(title)}**"] if title else []
    if doc_id and doc_id != fragment_id:
        parts.append(f"source {literal(doc_id)}")
    return " · ".join([*parts, f"fragment {literal(fragment_id)}"])


def guideline_markdown(text: str) -> None:
    """Render a lead's guideline as Markdown (tables, emphasis, lists, links) but never load anything: image
    syntax is shown as text and every `<` is escaped, so no remote image or HTML tag can come from it."""
    st.markdown((text or "").replace("<", "\\<").replace("![", "!\\["))


def readable(frame: pd.DataFrame, headers: dict[str, str], digits: dict[str, int] | None = None) -> Styler:
    """A table for people: only the columns in `headers`, renamed to them, numbers rounded to `digits`,
    times as `YYYY-MM-DD HH:MM UTC`, and "—" wherever a value is missing (a Styler st.dataframe shows)."""
    table = frame[list(headers)].rename(columns=headers)
    formats: dict[str, Any] = {headers[c]: f"{{:.{d}f}}" for c, d in (digits or {}).items()}
    for column in table.columns:
        if column not in formats and table[column].map(lambda v: isinstance(v, datetime)).any():
            formats[column] = lambda v: v.strftime("%Y-%m-%d %H:%M UTC") if isinstance(v, datetime) else MISSING
    return table.style.format(formats, na_rep=MISSING)


def table(frame: pd.DataFrame, headers: dict[str, str], digits: dict[str, int] | None = None, **options: Any) -> None:
    """Show `frame` as a readable table (see readable); missing cells read "—" in the browser too, where the
    grid draws nulls itself."""
    st.dataframe(readable(frame, headers, digits), hide_index=True, placeholder=MISSING, **options)


def lead_page(title: str) -> tuple[Engine, UserInfo]:
    """Stop anyone who is not a lead (also when the page is opened by URL), then title the page."""
    user = require_role(Role.LEAD)
    st.title(title)
    return state.engine(), user


def pick_project(engine: Engine) -> ProjectInfo | None:
    """The project this session works on (the sidebar's picker), with its scale and threshold."""
    name = state.current_project()
    if name is None:
        st.info("No project yet: create one on the Project page.")
        return None
    return projects.get_project(engine, name)


def as_dict(report: Any) -> dict[str, Any]:
    """A store report (dataclass or dict) as a dict for display."""
    return asdict(report) if is_dataclass(report) and not isinstance(report, type) else dict(report)


# What an uploaded file may hold once decompressed (a browser is not an operator at a shell): raised with
# QRELKIT_MAX_UPLOAD_BYTES and QRELKIT_MAX_UPLOAD_LINES; the CLI's limits are QRELKIT_MAX_READ_* (docs/security.md).
MAX_UPLOAD_BYTES = 1024**3
MAX_UPLOAD_LINES = 20_000_000


@contextmanager
def saved_upload(upload: UploadedFile) -> Iterator[Path]:
    """An uploaded file written to a temporary path that keeps its name (the readers go by extension); inside,
    every reader holds it to the upload limits."""
    with (
        tempfile.TemporaryDirectory(prefix="qrelkit-upload-") as tmp,
        tighter_limits(
            bytes_var="QRELKIT_MAX_UPLOAD_BYTES",
            default_bytes=MAX_UPLOAD_BYTES,
            lines_var="QRELKIT_MAX_UPLOAD_LINES",
            default_lines=MAX_UPLOAD_LINES,
        ),
    ):
        path = Path(tmp) / Path(upload.name).name
        path.write_bytes(upload.getvalue())
        yield path


# The readers' advice about a file given as the wrong kind names the command line's commands and options (the
# reader serves both); on a page it names the Import tab's choices instead. The one place the app rewords it:
# every upload error goes through upload_error.
BROWSER_ADVICE = (
    ("`qrelkit import judgments --annotator NAME`", 'import it as judgments, with "Qrels graded by" filled in'),
    ("`qrelkit import run`", "import it as a run"),
    ("(qrelkit import queries)", "(import it as queries)"),
    (
        "with --annotator NAME (and --annotator-kind model --model M for a model's)",
        'in "Qrels graded by" (and for a model\'s, choose model under "The file\'s annotators are")',
    ),
    (
        "with --annotator NAME (multi-judge qrels: also --qrels-format jg, one annotator per judge group)",
        'in "Qrels graded by" (multi-judge qrels: also tick "Multi-judge qrels", one annotator per judge group)',
    ),
    ("leave out --annotator", 'leave "Qrels graded by" empty'),
    (READ_AS_GAINS, 'tick "The qrels hold gains"'),
    (GAINS_NEED_ANNOTATOR, 'gains are qrels\' grades: fill in "Qrels graded by"'),
    (QRELS_AS_RUN, ': grades are imported as judgments (TREC or BEIR qrels: with "Qrels graded by" filled in)'),
    (SWAPPED_ADVICE, ": upload a run here; grades are imported on the Project page, as judgments"),
)


def for_browser(message: str) -> str:
    """A reader's or the store's message with its command-line advice as the Import tab's (BROWSER_ADVICE)."""
    for cli, page in BROWSER_ADVICE:
        message = message.replace(cli, page)
    return message


def upload_error(exc: Exception, path: Path, upload_name: str) -> str:
    """An import error as `name:line: problem`, naming the uploaded file rather than its temp copy, with the
    advice worded for the page (for_browser)."""
    return for_browser(str(exc).replace(str(path), upload_name))


def scale_of(project: ProjectInfo) -> tuple[int, int]:
    """The project's grading scale as a plain (low, high) pair."""
    return int(project.scale[0]), int(project.scale[1])


def project_caption(project: ProjectInfo) -> str:
    """One line with the project's policy and its grade names."""
    low, high = scale_of(project)
    names = ", ".join(f"{g} {literal(name)}" for g, name in project.labels.items())
    return (
        f"Scale {low}–{high} ({names}) · {project.overlap} annotators per pair on {project.overlap_fraction:.0%} of "
        f"pairs · agreement threshold {project.threshold:g}"
    )


def show_import_report(report: Any, path: Path, upload_name: str) -> None:
    """The validation report of an import: counts, then every rejected line as name:line: problem."""
    counts = {
        "Created": report.created,
        "Updated": report.updated,
        "Unchanged": report.unchanged,
        "Rejected lines": len(report.rejected),
    }
    for col, (label, count) in zip(st.columns(len(counts)), counts.items(), strict=True):
        col.metric(label, count)
    if report.rejected:
        lines = "\n".join(upload_error(Exception(r), path, upload_name) for r in report.rejected)
        st.code(lines, language=None)
    else:
        st.success(f"{literal(upload_name)}: {report.records} record(s) imported.")


def progress_table(stats: pd.DataFrame) -> pd.DataFrame:
    """Annotator stats with a done/assigned share for a progress bar and speed in seconds per pair."""
    table = stats.copy()
    assigned = table["assigned"].where(table["assigned"] > 0)
    table.insert(1, "progress", (table["done"] / assigned).fillna(0.0))
    return table

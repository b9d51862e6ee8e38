"""Agreement-page sections "Against the control pairs" and "vs reference": each annotator's accuracy and
linear-weighted κ (DEFAULT_WEIGHTS) against the settled grades or a reference's (e.g. NIST's imported qrels),
with CIs over queries, by guideline version, and the drift alerts — beside the human–human agreement above it
(user strings literal)."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app.views import literal
from db.control import list_controls, project_control_report
from db.projects import get_project
from db.store import frames
from eval_core.agreement.coefficients import kappa_name
from eval_core.agreement.control import ControlReport, ControlScore, vs_reference
from eval_core.thresholds import MIN_CI_QUERIES

TITLE = "Against the control pairs"
APP_BOOTSTRAP = 200


@st.cache_data(ttl=600, max_entries=8, show_spinner=False)
def _report(_engine: Engine, url: str, project: str, judged: tuple[int, int], controls: int) -> ControlReport:
    """The store's control report, recomputed when a judgment or the control pairs change."""
    return project_control_report(_engine, project, replicates=APP_BOOTSTRAP)


def score_table(scores: list[ControlScore], group: str | None = None) -> pd.DataFrame:
    """One row per annotator (and group): pairs, queries, accuracy and κ with their CIs."""
    rows = {"Annotator": [literal(s.annotator) for s in scores]}
    if group:
        rows[group] = [literal(s.group) for s in scores]
    rows |= {
        "Pairs": [str(s.pairs) for s in scores],
        "Queries": [str(s.queries) for s in scores],
        "Accuracy": [s.accuracy.text() for s in scores],
        "κ": [s.kappa.text() for s in scores],
    }
    return pd.DataFrame(rows)


def control_section(engine: Engine, project: str) -> None:
    """The section: the drift alerts, then each annotator against the control grades and by guideline."""
    st.subheader(TITLE)
    every, controls = list_controls(engine, project)
    if not controls:
        st.caption(
            "No control pairs: turn an adjudicated release's pairs into control pairs with "
            "`qrelkit control set --project P --release N --rate 1/20`."
        )
        return
    report = _report(engine, str(engine.url), project, frames.judgments_fingerprint(engine, project), len(controls))
    rate = f"one in every {every} of each annotator's pairs" if every else "not served (no rate set)"
    st.caption(
        f"{len(controls)} control pairs, {rate}, served like any pair. {kappa_name(report.weights).capitalize()} "
        f"on the full scale; 95% CIs from a bootstrap over queries (from {MIN_CI_QUERIES} queries up); only grades "
        "given after "
        "a pair became a control count."
    )
    for alert in report.alerts:
        st.warning(literal(f"Drift: {alert.sentence}"))
    if not report.per_annotator:
        for note in report.notes:
            st.caption(literal(note))
        return
    st.dataframe(score_table(report.per_annotator), hide_index=True)
    if report.by_guideline:
        st.markdown("**By guideline version**")
        st.dataframe(score_table(report.by_guideline, "Guideline"), hide_index=True)


@st.cache_data(ttl=600, max_entries=8, show_spinner=False)
def _references(_engine: Engine, url: str, project: str, judged: tuple[int, int]) -> dict[str, ControlReport]:
    """Each reference annotator's report (eval_core.agreement.control.vs_reference), recomputed on a new grade."""
    scale = get_project(_engine, project).scale
    return vs_reference(frames.judgments_frame(_engine, project), scale, replicates=APP_BOOTSTRAP)


def reference_section(engine: Engine, project: str) -> None:
    """Each reference (annotator kind 'reference') and every person against it, or nothing without one."""
    reports = _references(engine, str(engine.url), project, frames.judgments_fingerprint(engine, project))
    for name, report in reports.items():
        st.subheader(f"vs reference {literal(name)}")
        st.caption(
            f"Each person's grades against {literal(name)}'s on the pairs both graded: accuracy and "
            f"{kappa_name(report.weights)} on the full scale, 95% CIs from a bootstrap over queries (from "
            f"{MIN_CI_QUERIES} queries up). A reference "
            "never counts in the agreement between people above."
        )
        if report.per_annotator:
            st.dataframe(score_table(report.per_annotator), hide_index=True)
        for note in report.notes:
            st.caption(literal(note))

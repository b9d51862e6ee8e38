"""Evaluate-page section "Robustness under disagreement": whether the stored runs' order holds under every
consensus rule, each annotator's labels, humans vs humans + models and a bootstrap over annotators per pair —
the verdict sentences, the metric per condition, and Kendall's τ between the rankings (user strings literal)."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app.views import literal
from db import evaluations
from db.store import frames
from eval_core.robustness import CONFIDENCE, DEFAULT_BOOTSTRAP, Bootstrap, RobustnessReport, percent

TITLE = "Robustness under disagreement"
TOGGLE = "Check whether the run order holds under disagreement"
DIGITS = 4


@st.cache_data(ttl=600, max_entries=8, show_spinner=False)
def _report(
    _engine: Engine,
    url: str,
    project: str,
    runs: tuple[str, ...],
    metric: str,
    bootstrap: int,
    judged: tuple[int, int],
    stored: tuple[str, ...],
) -> RobustnessReport:
    """The store's robustness report, recomputed when a judgment, an adjudication or a run changes."""
    return evaluations.project_robustness(_engine, project, list(runs), metric=metric, bootstrap=bootstrap)


def robustness_report(engine: Engine, project: str, runs: list[str], metric: str, bootstrap: int) -> RobustnessReport:
    """The report for these runs, cached on the judgments' fingerprint and the runs' content hashes."""
    hashes = tuple(f"{r.name}:{r.content_hash}" for r in evaluations.list_runs(engine, project) if r.name in runs)
    return _report(
        engine,
        str(engine.url),
        project,
        tuple(runs),
        metric,
        bootstrap,
        frames.judgments_fingerprint(engine, project),
        hashes,
    )


def tau_chart(report: RobustnessReport) -> alt.Chart:
    """Kendall τ between every two conditions' run rankings as a heatmap (−1 red, 1 blue, '—' undefined)."""
    names = [c.name for c in report.conditions]
    rows = [
        {"a": a, "b": b, "tau": v, "label": "—" if v is None else f"{v:.2f}"}
        for a, row in zip(names, report.tau, strict=True)
        for b, v in zip(names, row, strict=True)
    ]
    data = pd.DataFrame(rows)
    step = max(28, min(44, 560 // max(1, len(names))))
    x = alt.X("b:N", sort=names, title=None, axis=alt.Axis(labelAngle=-40, labelLimit=160))
    y = alt.Y("a:N", sort=names, title=None, axis=alt.Axis(labelLimit=160))
    base = alt.Chart(data).encode(x=x, y=y)
    cells = base.mark_rect().encode(
        color=alt.Color("tau:Q", scale=alt.Scale(domain=[-1, 1], scheme="redblue"), title="τ"),
        tooltip=[
            alt.Tooltip("a:N", title="condition"),
            alt.Tooltip("b:N", title="vs"),
            alt.Tooltip("label:N", title="τ"),
        ],
    )
    text = base.mark_text(fontSize=11).encode(
        text="label:N", color=alt.condition("abs(datum.tau) > 0.5", alt.value("white"), alt.value("black"))
    )
    return (cells + text).properties(width=alt.Step(step), height=alt.Step(step))


def condition_table(report: RobustnessReport) -> pd.io.formats.style.Styler:
    """Metric per condition (rows: group, condition, pairs, queries) and run (columns), at 4 decimals."""
    return report.table().style.format(f"{{:.{DIGITS}f}}")


def bootstrap_table(report: RobustnessReport, boot: Bootstrap) -> pd.DataFrame:
    """Each run's mean and percentile interval over the report's bootstrap replicates."""
    return pd.DataFrame(
        {
            "Mean": [f"{boot.mean[r]:.{DIGITS}f}" for r in report.runs],
            f"{CONFIDENCE:.0%} interval": [
                f"[{boot.interval[r][0]:.{DIGITS}f}, {boot.interval[r][1]:.{DIGITS}f}]" for r in report.runs
            ],
        },
        index=pd.Index(report.runs, name="Run"),
    )


def robustness_section(engine: Engine, project: str) -> None:
    """The section: pick runs, metric and replicates; then the verdicts, the table, τ and the bootstrap."""
    st.subheader(TITLE)
    names = [r.name for r in evaluations.list_runs(engine, project)]
    if len(names) < 2:
        st.caption("Comparing runs under disagreement needs two or more stored runs: import them on the Project page.")
        return
    st.caption(
        "Each stored run's metric under every consensus rule, under each annotator's own grades, with "
        "model judges' labels added (when there are any) and over a bootstrap that redraws which "
        "annotators' grades form each pair's label; the winner of each pair of runs is the one ahead under "
        "the median rule. Uses the current judgments, not a release (`qrelkit robustness --project`)."
    )
    if not st.toggle(TOGGLE, key="robustness-on"):
        return
    left, middle, right = st.columns([3, 1, 1])
    runs = left.multiselect("Runs", names, default=names, key="robustness-runs")
    metric = middle.selectbox("Metric", evaluations.HEADLINE, key="robustness-metric")
    bootstrap = int(
        right.number_input(
            "Bootstrap replicates",
            min_value=0,
            max_value=2000,
            value=DEFAULT_BOOTSTRAP,
            step=50,
            key="robustness-bootstrap",
        )
    )
    if len(runs) < 2:
        st.info("Pick two or more runs.")
        return
    with st.spinner("Scoring the runs under every rule, annotator and bootstrap replicate…"):
        try:
            report = robustness_report(engine, project, runs, metric, bootstrap)
        except ValueError as exc:
            st.info(literal(exc))
            return
    for pair in report.pairs:
        if pair.holds:
            st.success(literal(pair.sentence), icon=":material/check_circle:")
        else:
            st.warning(literal(pair.sentence), icon=":material/swap_vert:")
    st.markdown(f"**{literal(report.metric)} per condition**")
    st.dataframe(condition_table(report))
    st.markdown("**Kendall τ between the rankings each condition induces**")
    st.altair_chart(tau_chart(report))
    if report.bootstrap is not None:
        boot = report.bootstrap
        st.markdown(
            f"**Bootstrap over annotators per pair** ({boot.replicates} replicates, seed {boot.seed}, {boot.rule} rule)"
        )
        st.dataframe(bootstrap_table(report, boot))
        tau = "undefined" if boot.tau_mean is None else f"mean {boot.tau_mean:.3f}, lowest {boot.tau_min:.3f}"
        st.caption(
            f"τ with the {boot.rule} rule's ranking: {tau}; "
            f"the same ranking in {percent(boot.same_ranking)} of replicates."
        )
    for note in report.notes:
        st.caption(literal(note))

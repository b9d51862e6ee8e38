"""Evaluate-page section "Is this release reliable?": the release's reliability sentence against the stored
runs, the ASL curve of every run pair, split-half τ and each pooled run's leave-one-out drop; and the sentence
the release card keeps, as the Releases and Evaluate pages show it (user strings literal)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app.views import literal
from db import evaluations
from db.reliability import project_reliability
from eval_core.reliability import Correction, MetricReliability, ReliabilityReport, Settings

TITLE = "Is this release reliable?"
NOT_ON_CARD = (
    "Release {version} was cut before release cards kept a reliability sentence: "
    '"Is this release reliable?" on the Evaluate page sizes it against the stored runs.'
)


@st.cache_data(ttl=600, max_entries=8, show_spinner=False)
def _report(
    _engine: Engine, url: str, project: str, version: int, metric: str, delta: float, runs: tuple[str, ...]
) -> ReliabilityReport:
    """The store's reliability report; a release never changes, so its version and the runs' hashes key it."""
    return project_reliability(_engine, project, version, metrics=[metric], settings=Settings(delta=delta))


def asl_chart(m: MetricReliability, alpha: float) -> alt.LayerChart:
    """Every run pair's ASL, pairs sorted from most to least significant, with the α line (Sakai's ASL curve)."""
    curve = m.asl_curve()
    line = (
        alt.Chart(curve)
        .mark_line(point=True)
        .encode(
            x=alt.X("rank:Q", title="run pairs, sorted by ASL", axis=alt.Axis(tickMinStep=1, format="d")),
            y=alt.Y("asl:Q", title="achieved significance level", scale=alt.Scale(domain=[0, 1])),
            tooltip=[alt.Tooltip("pair:N", title="pair"), alt.Tooltip("asl:Q", title="ASL", format=".4f")],
        )
    )
    rule = (
        alt.Chart(pd.DataFrame({"alpha": [alpha]})).mark_rule(strokeDash=[4, 4], color="firebrick").encode(y="alpha:Q")
    )
    return (line + rule).properties(height=260)


def drop_table(m: MetricReliability, runs: list[str]) -> pd.DataFrame:
    """Per run: mean, per-query variance, judged@k and the leave-own-pairs-out drop (— for unpooled runs)."""
    drops = {b.run: b for b in m.pool_bias}
    return pd.DataFrame(
        {
            "Mean": [f"{m.means[r]:.4f}" for r in runs],
            "Per-query variance": [f"{m.query_variance[r]:.4f}" for r in runs],
            "Judged@k": [f"{m.judged.get(r, float('nan')):.3f}" for r in runs],
            "Own judged pairs": [str(drops[r].own_pairs) if r in drops else "—" for r in runs],
            "Drop without them": [f"{drops[r].drop:.4f}" if r in drops else "—" for r in runs],
        },
        index=pd.Index([literal(r) for r in runs], name="Run"),
    )


def reliability_section(engine: Engine, project: str, version: int) -> None:
    """The section: metric and δ; the sentence, the ASL curve, τ and the pool-bias table."""
    st.subheader(TITLE)
    runs = evaluations.list_runs(engine, project)
    if not runs:
        st.caption("Sizing the release needs stored runs: import them on the Project page.")
        return
    left, right = st.columns([2, 1])
    metric = left.selectbox("Metric", evaluations.HEADLINE, key="reliability-metric")
    delta = float(
        right.number_input(
            "Difference to detect (δ)",
            min_value=0.001,
            max_value=0.5,
            value=0.02,
            step=0.005,
            format="%.3f",
            key="reliability-delta",
        )
    )
    with st.spinner("Sizing the release…"):
        report = _report(
            engine, str(engine.url), project, version, metric, delta, tuple(f"{r.name}:{r.content_hash}" for r in runs)
        )
    m = report.metrics[0]
    s = report.settings
    st.info(literal(report.sentence()))
    st.caption(
        f"Sizes from the {literal(m.variance_source)} = {m.variance:.5f}; paired t-test, α = {s.alpha:g}, "
        f"power {s.power:g} (`qrelkit reliability --project`)."
    )
    if m.pairs:
        power = m.discriminative_power or 0.0
        st.markdown(
            f"**Discriminative power**: {m.significant} of {len(m.pairs)} run pairs ({power:.0%}) differ "
            f"at α = {s.alpha:g} after the {s.correction.label} ({s.resamples} resamples)."
        )
        st.altair_chart(asl_chart(m, s.alpha), width="stretch")
        tau = m.tau_summary
        if tau["mean"] is not None:
            st.caption(
                f"Ranking stability: Kendall τ between the run rankings on two random halves of the queries, "
                f"mean {tau['mean']:.3f} (sd {tau['sd']:.3f}, 5th–95th percentile {tau['p5']:.3f} … {tau['p95']:.3f}) "
                f"over {s.resamples} splits."
            )
    st.dataframe(drop_table(m, report.runs))
    for note in report.notes:
        st.caption(literal(note))


def card_sentence(card: Mapping[str, Any], version: int) -> str:
    """The reliability sentence the release card keeps (measured when the release was cut), or why there is none."""
    entry = card.get("reliability") or {}
    return str(entry["sentence"]) if entry.get("sentence") else NOT_ON_CARD.format(version=version)


def card_details(card: Mapping[str, Any]) -> str | None:
    """The numbers behind the card's sentence in one plain line: the runs it was measured against, the variance
    and its source, discriminative power with the correction and resamples, split-half τ (None without them)."""
    entry = card.get("reliability") or {}
    if not entry.get("metrics"):
        return None
    m, s = entry["metrics"][0], entry.get("settings", {})
    runs = entry.get("runs", [])
    words = [
        f"Measured when the release was cut, on {m['metric']} over {m['queries']:,} queries against the "
        f"{len(runs)} run(s) stored then ({', '.join(runs)}; pooled: {', '.join(entry.get('pooled') or []) or 'none'})"
    ]
    if m.get("variance") is not None:
        words.append(
            f"variance of a per-query difference {m['variance']:.5f} ({m['variance_source']}), "
            f"α = {s.get('alpha', 0.05):g}, power {s.get('power', 0.8):g}"
        )
    if m.get("pairs"):
        correction = Correction(s.get("correction", Correction.TUKEY_HSD)).label
        words.append(
            f"{m['significant_pairs']} of {len(m['pairs'])} run pairs differ ({correction}, "
            f"{s.get('resamples', 0):,} resamples)"
        )
    tau = m.get("split_half_tau") or {}
    if tau.get("mean") is not None:
        words.append(
            f"split-half Kendall τ mean {tau['mean']:.3f} (5th–95th percentile {tau['p5']:.3f} … {tau['p95']:.3f})"
        )
    return "; ".join(words) + "."


def show_card_reliability(card: Mapping[str, Any], version: int, lead: str = "") -> None:
    """The card's sentence as plain text (after `lead`, e.g. "Release 3, as cut: "; a card without a sentence
    says so, without `lead`), and the numbers behind it as a caption, every string escaped (run names come
    from users)."""
    kept = bool((card.get("reliability") or {}).get("sentence"))
    st.text((lead if kept else "") + card_sentence(card, version))
    details = card_details(card)
    if details:
        st.caption(literal(details))

"""Altair charts for the lead pages, built from plain frames so each can be tested without a browser."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from eval_core.agreement.coefficients import WEIGHTS
from eval_core.agreement.types import KappaPair
from eval_core.thresholds import AGREEMENT_THRESHOLD


def kappa_matrix(kappa: Sequence[KappaPair], weight: str = "quadratic") -> pd.DataFrame:
    """Long frame (a, b, value, low, high, n, status) for both orders of every annotator pair, so the
    heatmap is symmetric; an undefined κ keeps its row with value None and the reason in `status`."""
    if weight not in WEIGHTS:
        raise ValueError(f"weight must be one of {', '.join(WEIGHTS)}, got {weight!r}")
    rows = []
    for pair in kappa:
        c = pair.kappa[weight]
        low, high = c.ci or (None, None)
        for a, b in ((pair.a, pair.b), (pair.b, pair.a)):
            rows.append({"a": a, "b": b, "value": c.value, "low": low, "high": high, "n": pair.n, "status": c.status})
    return pd.DataFrame(rows, columns=["a", "b", "value", "low", "high", "n", "status"])


def kappa_heatmap(
    kappa: Sequence[KappaPair], weight: str = "quadratic", threshold: float = AGREEMENT_THRESHOLD
) -> alt.LayerChart:
    """Pairwise Cohen's κ as a heatmap with each value printed in its cell: red below the threshold, green
    above, grey when undefined; cells are sized so names and values stay readable for any annotator count."""
    frame = kappa_matrix(kappa, weight)
    frame["label"] = [("—" if v is None or pd.isna(v) else f"{v:.2f}") for v in frame["value"]]
    names = sorted(set(frame["a"]))
    axis = alt.Axis(labelLimit=220, labelAngle=0)
    base = alt.Chart(frame).encode(
        x=alt.X("a:N", title="annotator", sort=names, axis=alt.Axis(labelLimit=220, labelAngle=-40)),
        y=alt.Y("b:N", title="annotator", sort=names, axis=axis),
        tooltip=[
            alt.Tooltip("a:N", title="annotator A"),
            alt.Tooltip("b:N", title="annotator B"),
            alt.Tooltip("value:Q", format=".3f", title=f"κ ({weight})"),
            alt.Tooltip("low:Q", format=".3f", title="95% CI low"),
            alt.Tooltip("high:Q", format=".3f", title="95% CI high"),
            alt.Tooltip("n:Q", title="pairs both graded"),
            alt.Tooltip("status:N", title="status"),
        ],
    )
    cells = base.mark_rect(stroke="white").encode(
        color=alt.Color(
            "value:Q",
            title=f"κ {weight}",
            scale=alt.Scale(domain=[-1, threshold, 1], range=["#b2182b", "#f7f7f7", "#1a9850"]),
            legend=alt.Legend(format=".1f"),
        )
    )
    text = base.mark_text(baseline="middle", fontSize=14, fontWeight="bold").encode(text="label:N")
    step = max(40, min(90, 720 // max(len(names), 1)))  # px per annotator: 90 for a few, never under 40
    # sized by its steps, so autosize "pad": Streamlit's default "fit" makes Vega warn in the browser's console
    # ("Dropping fit because spec has discrete size") on every draw
    return (cells + text).properties(
        title=alt.Title(f"Cohen's κ ({weight}) per annotator pair", subtitle=f"flag threshold {threshold:g}"),
        width=alt.Step(step),
        height=alt.Step(step),
        autosize=alt.AutoSizeParams(type="pad", contains="padding"),
    )


def confusion_frame(judgments: pd.DataFrame, a: str, b: str, scale: tuple[int, int] = (0, 3)) -> pd.DataFrame:
    """Counts of (grade by a, grade by b) over the pairs both graded, every cell of the scale present."""
    grades = judgments.dropna(subset=["grade"])
    left = grades.loc[grades["annotator"] == a, ["query_id", "fragment_id", "grade"]]
    right = grades.loc[grades["annotator"] == b, ["query_id", "fragment_id", "grade"]]
    joint = left.merge(right, on=["query_id", "fragment_id"], suffixes=("_a", "_b"))
    levels = np.arange(scale[0], scale[1] + 1)
    size = levels.size
    ia = joint["grade_a"].to_numpy(dtype=np.int64) - scale[0]
    ib = joint["grade_b"].to_numpy(dtype=np.int64) - scale[0]
    counts = np.bincount(ia * size + ib, minlength=size * size).reshape(size, size)
    return pd.DataFrame({"grade_a": np.repeat(levels, size), "grade_b": np.tile(levels, size), "count": counts.ravel()})


def confusion_chart(frame: pd.DataFrame, a: str, b: str) -> alt.LayerChart:
    """The confusion matrix of two annotators: where their grades part, e.g. 1 vs 2."""
    base = alt.Chart(frame).encode(
        x=alt.X("grade_b:O", title=f"grade by {b}"),
        y=alt.Y("grade_a:O", title=f"grade by {a}", sort="descending"),
        tooltip=["grade_a", "grade_b", "count"],
    )
    cells = base.mark_rect().encode(color=alt.Color("count:Q", scale=alt.Scale(scheme="blues"), title="pairs"))
    text = base.mark_text(baseline="middle").encode(text="count:Q")
    return (cells + text).properties(title=f"Confusion matrix: {a} × {b}", width=320, height=320)


def recall_curve_chart(curve: pd.DataFrame, value: str = "recall") -> alt.Chart:
    """Recall@k over k, one line per run: does it rise fast and flatten, and where?"""
    encode: dict[str, Any] = {
        "x": alt.X("k:Q", title="k", scale=alt.Scale(type="log")),
        "y": alt.Y(f"{value}:Q", title=f"{value}@k", scale=alt.Scale(domain=[0, 1])),
        "tooltip": ["k", alt.Tooltip(f"{value}:Q", format=".3f")],
    }
    if "run" in curve.columns:
        encode["color"] = alt.Color("run:N", title="run")
        encode["tooltip"] = ["run", *encode["tooltip"]]
    return alt.Chart(curve).mark_line(point=True).encode(**encode).properties(title=f"{value}@k curve")


def run_history_chart(history: pd.DataFrame, metric: str) -> alt.Chart | alt.LayerChart | alt.FacetChart:
    """One metric of a run across releases (db.evaluations.run_history rows), each drop marked in red."""
    frame = history[history["metric"] == metric]
    x = alt.X("version:O", title="release")
    line = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("value:Q", title=metric),
            tooltip=["version", alt.Tooltip("value:Q", format=".4f"), alt.Tooltip("change:Q", format="+.4f")],
        )
    )
    if not frame["drop"].any():  # an empty layer makes Vega log "Infinite extent for field value" in the console
        return line.properties(title=f"{metric} across releases")
    drops = (
        alt.Chart(frame[frame["drop"]])
        .mark_point(color="#d62728", size=160, filled=True, shape="triangle-down")
        .encode(x=x, y="value:Q", tooltip=["version", alt.Tooltip("change:Q", format="+.4f", title="drop")])
    )
    return alt.layer(line, drops).properties(title=f"{metric} across releases")


def agreement_trend_chart(
    trend: pd.DataFrame, threshold: float = AGREEMENT_THRESHOLD
) -> alt.LayerChart | alt.FacetChart:
    """α per guideline version with its CI and the threshold rule: did the last edit help?"""
    frame = trend.copy()
    frame["guideline"] = frame["guideline"].astype(str)
    x = alt.X("guideline:O", title="guideline version", sort=None)
    band = (
        alt.Chart(frame.dropna(subset=["low", "high"]))
        .mark_rule(strokeWidth=2)
        .encode(x=x, y=alt.Y("low:Q", title="ordinal α", scale=alt.Scale(domain=[-0.2, 1])), y2="high:Q")
    )
    line = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=x,
            y="value:Q",
            tooltip=[
                "guideline",
                alt.Tooltip("value:Q", format=".3f"),
                alt.Tooltip("low:Q", format=".3f"),
                alt.Tooltip("high:Q", format=".3f"),
                "n",
            ]
            if "n" in frame.columns
            else ["guideline", alt.Tooltip("value:Q", format=".3f")],
        )
    )
    rule = (
        alt.Chart(pd.DataFrame({"threshold": [threshold]}))
        .mark_rule(color="#d62728", strokeDash=[4, 4])
        .encode(y="threshold:Q")
    )
    return alt.layer(band, line, rule).properties(title="Agreement across guideline versions")


def bland_altman_chart(
    values: pd.DataFrame, bias: float, limits: tuple[float, float] | None, metric: str
) -> alt.LayerChart | alt.FacetChart:
    """Bland–Altman plot: each run × query's mean of the two values against judge − human, the bias as a solid
    rule and the 95% limits of agreement as dashed ones."""
    frame = values.assign(mean=(values["human"] + values["judge"]) / 2, difference=values["judge"] - values["human"])
    points = (
        alt.Chart(frame)
        .mark_circle(size=30, opacity=0.5)
        .encode(
            x=alt.X("mean:Q", title=f"mean of people's and the judge's {metric}"),
            y=alt.Y("difference:Q", title="judge − people"),
            tooltip=["run:N", "query_id:N", alt.Tooltip("human:Q", format=".3f"), alt.Tooltip("judge:Q", format=".3f")],
        )
    )
    lines = pd.DataFrame(
        [{"value": bias, "line": "bias"}]
        + ([{"value": limits[0], "line": "lower limit"}, {"value": limits[1], "line": "upper limit"}] if limits else [])
    )
    rules = (
        alt.Chart(lines)
        .mark_rule()
        .encode(
            y="value:Q",
            strokeDash=alt.condition(alt.datum.line == "bias", alt.value([1, 0]), alt.value([6, 4])),
            tooltip=["line:N", alt.Tooltip("value:Q", format="+.3f")],
        )
    )
    return alt.layer(points, rules)

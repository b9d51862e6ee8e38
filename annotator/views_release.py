"""Releases-page helpers: a release as a row, its card headline, grade distribution and diff."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st


def release_row(release: Any) -> dict[str, Any]:
    """One release as a table row: version, rule, size, hash, who and when."""
    counts = (release.card or {}).get("counts", {})
    return {"version": release.version, "rule": release.rule, "min_grades": release.min_grades,
            "queries": counts.get("queries"), "pairs": counts.get("pairs"),
            "adjudicated": counts.get("adjudicated"), "content_hash": str(release.content_hash)[:12],
            "created_by": release.created_by, "created_at": release.created_at}


def card_headline(card: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The card's headline figures for metric tiles: size and agreement with its CI."""
    counts = card.get("counts", {})
    agreement = card.get("agreement", {})
    alpha = agreement.get("alpha_ordinal") or {}
    value, ci = alpha.get("value"), alpha.get("ci")
    return [("Queries", str(counts.get("queries", "—"))), ("Pairs", str(counts.get("pairs", "—"))),
            ("Judgments", str(counts.get("judgments", "—"))),
            (f"Ordinal α · 95% CI {ci[0]:.2f}–{ci[1]:.2f}" if ci else "Ordinal α",
             "undefined" if value is None else f"{value:.2f}")]


def grade_distribution(card: Mapping[str, Any]) -> pd.DataFrame:
    """Released labels and individual grades per grade, side by side."""
    labels = card.get("grade_distribution", {})
    grades = card.get("judgment_grade_distribution", {})
    return pd.DataFrame({"grade": list(labels), "labels": list(labels.values()),
                         "individual grades": [grades.get(g, 0) for g in labels]})


def show_release_diff(diff: Mapping[str, Any]) -> None:
    """Added / removed / changed labels and how each stored run's headline metrics moved."""
    counts = diff.get("counts", {})
    cols = st.columns(4)
    for col, key in zip(cols, ("added", "removed", "changed", "unchanged"), strict=True):
        col.metric(f"labels {key}", counts.get(key, 0))
    for key in ("added", "removed", "changed"):
        if diff.get(key):
            shown = len(diff[key])
            with st.expander(f"{key.capitalize()} labels (first {shown} of {counts.get(key, shown)})"):
                st.dataframe(pd.DataFrame(diff[key]), hide_index=True)
    moves = [{"run": run, "metric": metric, **move} for run, metrics in (diff.get("runs") or {}).items()
             for metric, move in metrics.items()]
    if moves:
        st.markdown("**How the stored runs moved**")
        st.dataframe(pd.DataFrame(moves), hide_index=True, column_config={
            "old": st.column_config.NumberColumn(format="%.4f"), "new": st.column_config.NumberColumn(format="%.4f"),
            "delta": st.column_config.NumberColumn(format="%+.4f")})


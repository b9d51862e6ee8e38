"""Evaluate-page helpers: stored runs, categories, snippets and the metric table with CIs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.views_agreement import project_agreement
from db import evaluations, queries_frames
from eval_core.compare import bootstrap_ci
from eval_core.evaluate import Evaluation, evaluate


def stored_run_names(engine: Engine, project: str) -> list[str]:
    """Names of the project's stored runs."""
    return [r.name for r in evaluations.list_runs(engine, project)]


def query_categories(engine: Engine, project: Any) -> dict[str, str]:
    """query id → category for the per-category breakdown (queries without one are left out)."""
    frame, _ = project_agreement(engine, project)
    if "category" not in frame.columns:
        return {}
    pairs = frame[["query_id", "category"]].dropna().drop_duplicates("query_id")
    return dict(zip(pairs["query_id"].astype(str), pairs["category"].astype(str), strict=True))


@st.cache_data(ttl=300, max_entries=4, show_spinner=False)
def _fragment_texts(_engine: Engine, url: str, project: str) -> dict[str, str]:
    """Fragment texts for snippets, reread at most every five minutes."""
    return queries_frames.fragments_text(_engine, project)


def fragment_texts(engine: Engine, project: str) -> dict[str, str]:
    """fragment id → text, for the snippets of low-recall queries."""
    return _fragment_texts(engine, str(engine.url), project)


def evaluate_run(qrels: pd.DataFrame, run: pd.DataFrame, metrics: Sequence[str], ks: tuple[int, ...],
                 categories: Mapping[str, str] | None, name: str) -> Evaluation:
    """eval_core's evaluation of one run at the chosen cutoffs."""
    return evaluate(qrels, run, metrics=list(metrics), k=ks, categories=dict(categories) or None, name=name)


def metric_table(per_query: pd.DataFrame, n_bootstrap: int = 1000) -> pd.DataFrame:
    """Metric × k table of `mean [CI]` strings, the CI a percentile bootstrap over queries (seeded)."""
    cells: dict[str, dict[str, str]] = {}
    for column in per_query.columns:
        family, _, k = column.partition("@")
        values = per_query[column].to_numpy(dtype=float)
        low, high = bootstrap_ci(values, n_bootstrap=n_bootstrap)
        mean = float(values.mean()) if values.size else 0.0
        cells.setdefault(family, {})[f"@{k}" if k else "all"] = f"{mean:.3f} [{low:.3f}, {high:.3f}]"
    table = pd.DataFrame.from_dict(cells, orient="index")
    ordered = sorted((c for c in table.columns if c != "all"), key=lambda c: int(c[1:]))
    table = table[[*ordered, *(["all"] if "all" in table.columns else [])]]
    table.index.name = "metric"
    return table.fillna("")


"""Evaluate-page helpers: stored runs, categories, snippets, and the metric tables people read (means at 4
decimals as `qrelkit eval` prints them, 95% CIs, "—" where a value is missing, user strings escaped)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app.components.agreement import project_agreement
from annotator.app.views import MISSING, literal, table
from db import evaluations
from db.projects import ProjectInfo
from db.store import frames
from eval_core.ranking.evaluation import Evaluation, evaluate
from eval_core.ranking.registry import REGISTRY, base_of, cutoff_free
from eval_core.ranking.report import Diagnosis, diagnose
from eval_core.ranking.significance import Comparison

# The @k table's rows and the whole-ranking table's rows (every name checked against the metric registry).
CUTOFF_FAMILIES = ("P", "recall", "ndcg", "success", "judged")
WHOLE_RANKING = ("mrr", "map", "rprec", "bpref", "ndcg", "recall")
DIGITS = 4  # as `qrelkit eval` prints means


def table_metrics() -> list[str]:
    """The metric names the page evaluates: each cutoff family at every chosen k, then the cutoff-free ones."""
    names = [f"{family}@k" for family in CUTOFF_FAMILIES] + list(WHOLE_RANKING)
    unknown = [n for n in names if base_of(n) is None]
    if unknown or not all(cutoff_free(n) for n in WHOLE_RANKING):
        raise ValueError(f"the Evaluate page names metrics the registry does not know as such: {unknown}")
    return names


def stored_run_names(engine: Engine, project: str) -> list[str]:
    """Names of the project's stored runs."""
    return [r.name for r in evaluations.list_runs(engine, project)]


def query_categories(engine: Engine, project: ProjectInfo) -> dict[str, str]:
    """query id → category for the per-category breakdown (queries without one are left out)."""
    frame, _ = project_agreement(engine, project)
    if "category" not in frame.columns:
        return {}
    pairs = frame[["query_id", "category"]].dropna().drop_duplicates("query_id")
    return dict(zip(pairs["query_id"].astype(str), pairs["category"].astype(str), strict=True))


@st.cache_data(ttl=300, max_entries=4, show_spinner=False)
def _fragment_texts(_engine: Engine, url: str, project: str) -> dict[str, str]:
    """Fragment texts for snippets, reread at most every five minutes."""
    return frames.fragments_text(_engine, project)


def fragment_texts(engine: Engine, project: str) -> dict[str, str]:
    """fragment id → text, for the snippets of low-recall queries."""
    return _fragment_texts(engine, str(engine.url), project)


def evaluate_run(
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    ks: Sequence[int],
    categories: Mapping[str, str] | None,
    name: str,
    rel_level: int,
    scale: tuple[int, int],
) -> Evaluation:
    """eval_core's evaluation of one run at the chosen cutoffs: the call `qrelkit eval --scale … --k …
    --rel-level …` makes, so every cell can be checked against the CLI."""
    return evaluate(
        qrels,
        run,
        metrics=table_metrics(),
        k=tuple(sorted(ks)),
        rel_level=rel_level,
        categories=dict(categories or {}) or None,
        name=name,
        scale=scale,
    )


@st.cache_data(max_entries=8, show_spinner=False)
def scored_run(
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    ks: tuple[int, ...],
    categories: dict[str, str] | None,
    name: str,
    rel_level: int,
    scale: tuple[int, int],
    texts_of: tuple[str, str],
    _texts: Mapping[str, str],
) -> tuple[Evaluation, Diagnosis]:
    """The run's evaluation and diagnosis, each computed once per release qrels, run and options: every widget
    on the page reruns it, and none of these changed. `texts_of` (database URL, project) keys the fragment
    texts the diagnosis quotes, which are not hashed."""
    evaluation = evaluate_run(qrels, run, ks, categories, name, rel_level, scale)
    diagnosis = diagnose(
        qrels, run, fragments=_texts, categories=categories or None, name=name, rel_level=rel_level, scale=scale
    )
    return evaluation, diagnosis


@st.cache_data(max_entries=8, show_spinner=False)
def compared_runs(
    database: str,
    project: str,
    version: int,
    name: str,
    run: pd.DataFrame,
    rivals: tuple[str, ...],
    metrics: tuple[str, ...],
    rel_level: int,
    _engine: Engine,
) -> Comparison:
    """db.evaluations.compare_runs once per database, release, run, rivals, metrics and relevance level."""
    return evaluations.compare_runs(
        _engine, project, version, (name, run), list(rivals), list(metrics), rel_level=rel_level
    )


def _number(value: float | None) -> str:
    """A mean as the CLI prints it, or "—"."""
    return MISSING if value is None or value != value else f"{value:.{DIGITS}f}"


@st.cache_data(max_entries=8, show_spinner=False)
def _cis(per_query: pd.DataFrame) -> dict[str, str]:
    """Each metric's 95% bootstrap CI over queries (the one the drop alerts use) as `[low, high]`; cached by
    the per-query values, since every widget on the page reruns it and 10k queries take seconds."""
    out = {}
    for column in per_query.columns:
        values = per_query[column].to_numpy(dtype=float)
        low, high = evaluations.mean_ci(values) if values.size else (None, None)
        out[column] = MISSING if low is None else f"[{low:.{DIGITS}f}, {high:.{DIGITS}f}]"
    return out


def _by_cutoff(evaluation: Evaluation) -> dict[str, dict[int, str]]:
    """family → k → metric column name, for the metrics that carry a cutoff."""
    grid: dict[str, dict[int, str]] = {}
    for column in evaluation.per_query.columns:
        if cutoff_free(column):
            continue
        family, _, k = column.partition("@")
        grid.setdefault(family, {})[int(k)] = column
    return grid


def _grid(evaluation: Evaluation, cell: Any) -> pd.DataFrame:
    """Metric family × `@k` table of `cell(column)` strings, "—" where a family lacks that k."""
    grid = _by_cutoff(evaluation)
    ks = sorted({k for cuts in grid.values() for k in cuts})
    rows = {
        family: {f"@{k}": cell(cuts[k]) if k in cuts else MISSING for k in ks}
        for family in CUTOFF_FAMILIES
        if (cuts := grid.get(family))
    }
    table = pd.DataFrame.from_dict(rows, orient="index", columns=[f"@{k}" for k in ks])
    table.index.name = "Metric"
    return table


def cutoff_table(evaluation: Evaluation) -> pd.DataFrame:
    """Means of the metrics with a cutoff: one row per metric, one column per chosen k."""
    return _grid(evaluation, lambda column: _number(evaluation.mean.get(column)))


def cutoff_ci_table(evaluation: Evaluation) -> pd.DataFrame:
    """The same grid with each mean's 95% CI (a bootstrap over queries)."""
    cis = _cis(evaluation.per_query)
    return _grid(evaluation, lambda column: cis[column])


def whole_ranking_table(evaluation: Evaluation) -> pd.DataFrame:
    """The cutoff-free metrics (the whole ranking counts): mean, 95% CI and what each measures."""
    ci, cis = f"{evaluations.CONFIDENCE:.0%} CI", _cis(evaluation.per_query)
    rows = [
        {
            "Metric": name,
            "Mean": _number(evaluation.mean.get(name)),
            ci: cis.get(name, MISSING),
            "What it measures": literal(REGISTRY[name].definition),
        }
        for name in WHOLE_RANKING
    ]
    return pd.DataFrame(rows).set_index("Metric")


def family_legend() -> str:
    """One line defining each row of the @k table, from the metric registry (escaped for Markdown)."""
    return " · ".join(f"{family}@k: {literal(REGISTRY[family].definition)}" for family in CUTOFF_FAMILIES)


def show_categories(rows: list[dict[str, Any]]) -> None:
    """The per-category breakdown with readable headers and rounded means (category names shown literally)."""
    frame = pd.DataFrame(rows)
    metrics = [c for c in frame.columns if c not in ("category", "queries")]
    headers = {"category": "Category", "queries": "Queries", **{m: m for m in metrics}}
    table(frame, headers, {m: DIGITS for m in metrics})


COMPARISON_HEADERS = {
    "metric": "Metric",
    "run_a": "Run A",
    "run_b": "Run B",
    "mean_a": "Mean A",
    "mean_b": "Mean B",
    "diff": "B − A",
    "ci_low": "95% CI low",
    "ci_high": "95% CI high",
    "p_value": "p",
    "p_adjusted": "Holm-adjusted p",
    "better": "Queries better",
    "worse": "Queries worse",
    "unchanged": "Unchanged",
}


def show_comparison(comparison: Comparison) -> None:
    """One row per pair of runs and metric, readable and rounded ("—" where no correction applied)."""
    frame = comparison.to_frame()
    digits = {c: DIGITS for c in ("mean_a", "mean_b", "diff", "ci_low", "ci_high", "p_value", "p_adjusted")}
    table(frame, COMPARISON_HEADERS, digits)


def alert_text(alert: evaluations.DropAlert) -> str:
    """A drop alert as Markdown-safe sentences (the run name escaped) that keep apart what the run did on the
    queries both releases label alike and what the golden set's change (queries added, removed, relabelled) did."""
    d = DIGITS
    changes = (
        f"{alert.added} quer{'y' if alert.added == 1 else 'ies'} added, {alert.removed} removed, "
        f"{alert.relabelled} relabelled"
    )
    releases = f"releases {alert.previous_version} and {alert.version}"
    if alert.same_value is None or alert.same_previous is None:
        same = f"no query is labelled alike in {releases}"
    else:
        same = (
            f"on the {alert.n_same} quer{'y' if alert.n_same == 1 else 'ies'} {releases} label alike it went "
            f"{alert.same_previous:.{d}f} → {alert.same_value:.{d}f}"
        )
    whole = (
        f"over all queries {alert.previous:.{d}f} at release {alert.previous_version} → {alert.value:.{d}f} "
        f"at release {alert.version}"
    )
    if alert.cause is evaluations.AlertCause.RUN:
        assert alert.same_ci is not None
        low, high = alert.same_ci
        return (
            f"The run fell: {alert.metric} of {literal(alert.run)} {same}, below the "
            f"{evaluations.CONFIDENCE:.0%} CI \\[{low:.{d}f}, {high:.{d}f}\\] of its earlier value there "
            f"({whole}; the golden set: {changes})."
        )
    low, high = alert.previous_ci
    return (
        f"The golden set changed, not the run: {alert.metric} of {literal(alert.run)} went {whole}, below the "
        f"{evaluations.CONFIDENCE:.0%} CI \\[{low:.{d}f}, {high:.{d}f}\\], because of {changes}; {same}."
    )


def send_holes(engine: Engine, project: str, run_name: str | None, k: int, holes: int, lead: str) -> None:
    """The Evaluate page's "Send the N unjudged pairs to annotation": creates the pairs, says how many, and how
    many of the N have no text in the project (never imported) with what to do about them."""
    if run_name is None:
        if holes:
            st.caption("Import this run on the Project page to send its holes to annotation.")
        return
    missing = evaluations.holes_without_text(engine, project, run_name, k=k)
    if missing:
        st.caption(literal(f"Of these, {evaluations.no_text_advice(missing)}."))
    if holes and st.button(f"Send the {holes} unjudged pairs to annotation"):
        created = evaluations.judge_holes(engine, project, run_name, k=k, actor=lead)
        readable = f" ({missing} of the unjudged wait for their text)" if missing else ""
        st.success(f"{created} new pair(s) created{readable}; assign them on the Project page.")
        if missing:
            st.warning(literal(f"{evaluations.no_text_advice(missing)}."), icon=":material/text_snippet:")

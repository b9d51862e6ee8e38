"""Helpers shared by the lead pages: the lead guard, the project picker, uploads, and cached agreement."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator import state
from annotator.auth import require_role
from db import evaluations, projects, queries_frames
from eval_core.agreement import agreement_report
from eval_core.compare import bootstrap_ci
from eval_core.evaluate import Evaluation, evaluate

PAGES = Path(__file__).resolve().parent / "screens"
ADJUDICATE_KEY = "adjudicate_pair"
# Bootstrap replicates for the CIs shown in the app: enough for two stable decimals, cheap at 1M judgments.
APP_BOOTSTRAP = 200
DISPUTED_SHOWN = 25


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


def coefficient_text(c: Mapping[str, Any] | None, digits: int = 3) -> str:
    """`0.520 [0.440, 0.600]`, or the reason the coefficient is undefined."""
    if not c or c.get("value") is None:
        return f"undefined ({c.get('status', 'no data')})" if c else "undefined"
    ci = c.get("ci")
    text = f"{c['value']:.{digits}f}"
    return f"{text} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else text


def pair_id_of(engine: Engine, project: str, pair: Mapping[str, Any]) -> int:
    """The store's pair id of a (query id, fragment id) row of the agreement report."""
    return queries_frames.pair_id(engine, project, str(pair["query_id"]), str(pair["fragment_id"]))


@st.cache_resource(max_entries=2, show_spinner=False)
def cached_judgments(_engine: Engine, url: str, project: str, fingerprint: tuple) -> pd.DataFrame:
    """The project's judgments, shared read-only across reruns and sessions until the fingerprint moves."""
    return queries_frames.judgments_frame(_engine, project)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_agreement(_engine: Engine, url: str, project: str, fingerprint: tuple,
                     scale: tuple[int, int], threshold: float) -> dict[str, Any]:
    """The agreement report (α by query, by guideline version; by category when queries have one), computed
    once per judgments fingerprint: 1M judgments take seconds, a cached rerun milliseconds."""
    frame = cached_judgments(_engine, url, project, fingerprint)
    if frame.empty:
        return {}
    report = agreement_report(frame, scale=scale, threshold=threshold, by="query", bootstrap=APP_BOOTSTRAP,
                              top=DISPUTED_SHOWN)
    if "category" in frame.columns and frame["category"].notna().any():
        by_category = agreement_report(frame, scale=scale, threshold=threshold, by="category", bootstrap=0, top=0)
        report["diagnostics"]["by_category"] = by_category["diagnostics"]["by"]["groups"]
    report["by_version"] = {}
    if "guideline" in frame.columns:
        for version, part in frame.dropna(subset=["guideline"]).groupby("guideline", sort=False):
            sub = agreement_report(part.drop(columns=["guideline"]), scale=scale, threshold=threshold,
                                   bootstrap=APP_BOOTSTRAP, top=0)
            report["by_version"][version_label(version)] = {
                "alpha": sub["alpha"]["ordinal"], "cuts": sub["cuts"], "n_units": sub["n_units"]}
    return report


def project_agreement(engine: Engine, project: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Judgments and agreement report of a project, from cache when no judgment changed since."""
    fingerprint = queries_frames.judgments_fingerprint(engine, project.name)
    url = str(engine.url)
    with st.spinner("Computing agreement…"):
        frame = cached_judgments(engine, url, project.name, fingerprint)
        report = cached_agreement(engine, url, project.name, fingerprint, scale_of(project),
                                  float(project.threshold))
    return frame, report


def open_adjudication(pair: Mapping[str, Any]) -> None:
    """Carry a disputed pair to the adjudication page, where it opens selected."""
    st.session_state[ADJUDICATE_KEY] = dict(pair)
    st.switch_page(PAGES / "lead_adjudicate.py")


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


def _value(c: Any) -> float | None:
    """The value of a coefficient given as a C dict or a bare number."""
    return c.get("value") if isinstance(c, Mapping) else (None if c is None else float(c))


def _row(name: str, c: Any) -> dict[str, Any]:
    """One coefficient as a table row: value, CI and status (the reason when undefined)."""
    c = c if isinstance(c, Mapping) else {"value": c, "ci": None, "status": "ok" if c is not None else "undefined"}
    ci = c.get("ci") or (None, None)
    return {"coefficient": name, "value": c.get("value"), "ci_low": ci[0], "ci_high": ci[1],
            "status": c.get("status")}


def headline(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Ordinal α, AC2 and raw agreement as metric tiles (label with the 95% CI, value), then the size."""
    raw = {"value": report.get("raw_agreement"), "ci": report.get("raw_agreement_ci")}
    tiles = []
    for label, c in (("Ordinal α", report["alpha"]["ordinal"]), ("Gwet AC2 (quadratic)", report["ac2"]["quadratic"]),
                     ("Raw agreement", raw)):
        value, ci = c.get("value"), c.get("ci")
        tiles.append((f"{label} · 95% CI {ci[0]:.2f}–{ci[1]:.2f}" if ci else label,
                      "undefined" if value is None else f"{value:.2f}"))
    tiles.append(("Units / annotators", f"{report['n_units']} / {report['n_annotators']}"))
    return tiles


def coefficients_table(report: Mapping[str, Any]) -> pd.DataFrame:
    """Every coefficient side by side, so the kappa paradox (high raw agreement, low κ/α) is visible."""
    rows = [_row(f"Krippendorff α ({level})", c) for level, c in report["alpha"].items()]
    rows.append(_row("Fleiss κ", report.get("fleiss_kappa")))
    rows.append(_row("Gwet AC1", report.get("ac1")))
    rows += [_row(f"Gwet AC2 ({w})", c) for w, c in (report.get("ac2") or {}).items()]
    raw = report.get("raw_agreement")
    rows.append(_row("Raw agreement", {"value": raw, "ci": report.get("raw_agreement_ci"),
                                       "status": "ok" if raw is not None else "undefined"}))
    return pd.DataFrame(rows)


def cuts_table(report: Mapping[str, Any]) -> pd.DataFrame:
    """α of the scale binarised at each grade, labelled by the boundary it tests (e.g. 1|2)."""
    return pd.DataFrame([{**_row(f"{int(cut) - 1}|{cut}", c), "coefficient": f"boundary {int(cut) - 1}|{cut}"}
                         for cut, c in (report.get("cuts") or {}).items()])


def weakest_boundary(report: Mapping[str, Any]) -> tuple[str, float] | None:
    """The grade boundary whose binarised α is lowest: the one the guideline leaves ambiguous."""
    defined = [(cut, _value(c)) for cut, c in (report.get("cuts") or {}).items() if _value(c) is not None]
    if not defined:
        return None
    cut, value = min(defined, key=lambda item: item[1])
    return f"{int(cut) - 1}|{cut}", float(value)


def agreement_flags(report: Mapping[str, Any], threshold: float) -> list[str]:
    """One banner per guideline version whose ordinal α is under the threshold, naming its ambiguous
    boundary, then one for the whole project when it is under too, with the report's reasons."""
    flags = []
    for version, sub in sorted(report.get("by_version", {}).items(), key=lambda item: _version_key(item[0])):
        if _value(sub["alpha"]) is not None and _value(sub["alpha"]) < threshold:
            text = (f"Guideline version {version} flagged: ordinal α {coefficient_text(sub['alpha'], 2)} < "
                    f"{threshold:g} on its {sub['n_units']} pairs.")
            boundary = weakest_boundary(sub)
            flags.append(text + (f" The ambiguous boundary is {boundary[0]} (α {boundary[1]:.2f})."
                                 if boundary else ""))
    alpha = report["alpha"]["ordinal"]
    if _value(alpha) is not None and _value(alpha) < threshold:
        assessment = report.get("assessment") or {}
        boundary = weakest_boundary(report)
        text = (f"All judgments: ordinal α {coefficient_text(alpha, 2)} < {threshold:g}"
                + (f"; the ambiguous boundary is {boundary[0]} (α {boundary[1]:.2f})" if boundary else "")
                + f". Verdict: {assessment.get('verdict', 'ambiguous')}.")
        flags.append(text + "".join(f"\n- {r}" for r in assessment.get("reasons", [])))
    return flags


def _version_key(version: str) -> tuple[bool, int, str]:
    """Sort guideline versions numerically, labels like '(none)' last."""
    return (not version.isdigit(), int(version) if version.isdigit() else 0, version)


def version_label(value: Any) -> str:
    """A guideline version as people write it: '2', not '2.0' (NA-holding columns come back as floats)."""
    text = str(value)
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else text


def guideline_trend(report: Mapping[str, Any]) -> pd.DataFrame:
    """α with its CI per guideline version, oldest first, for the trend chart (undefined versions left out)."""
    rows = []
    for version, sub in sorted(report.get("by_version", {}).items(), key=lambda item: _version_key(item[0])):
        value = _value(sub["alpha"])
        if value is None:
            continue
        ci = sub["alpha"].get("ci") or (None, None)
        rows.append({"guideline": version, "value": value, "low": ci[0], "high": ci[1], "n": sub["n_units"]})
    return pd.DataFrame(rows, columns=["guideline", "value", "low", "high", "n"])


def _group_table(rows: list[dict[str, Any]], name: str) -> pd.DataFrame:
    """α per group (query or category) as a table, lowest first."""
    return pd.DataFrame([{name: r["group"], "alpha": _value(r["alpha"]), "status": r["alpha"].get("status"),
                          "units": r.get("n_units"), "pairable": r.get("n_pairable")} for r in rows],
                        columns=[name, "alpha", "status", "units", "pairable"])


def breakdown_tables(report: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """α per query and per category."""
    diagnostics = report.get("diagnostics", {})
    by_query = (diagnostics.get("by") or {}).get("groups") or []
    return _group_table(list(by_query), "query"), _group_table(list(diagnostics.get("by_category") or []), "category")


def disputed_pairs(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's most disputed pairs, widest spread first."""
    return list(report.get("diagnostics", {}).get("disputed_pairs") or [])


def pair_key(pair: Mapping[str, Any]) -> tuple[str, str]:
    """(query id, fragment id) of a disputed pair."""
    return str(pair["query_id"]), str(pair["fragment_id"])


def disputed_label(pair: Mapping[str, Any]) -> str:
    """Short label of a disputed pair for the adjudication queue."""
    spread = f" · spread {pair['spread']}" if "spread" in pair else ""
    return f"{pair['query_id']} · {pair['fragment_id']}{spread}"


def disputed_line(pair: Mapping[str, Any]) -> str:
    """A disputed pair with every grade, as one plain-text line."""
    grades = ", ".join(f"{a}: {'can’t judge' if g is None else g}" for a, g in (pair.get("grades") or {}).items())
    return f"{pair['query_id']} · {pair['fragment_id']} — spread {pair.get('spread', '?')} — {grades}"

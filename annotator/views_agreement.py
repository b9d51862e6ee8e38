"""Agreement helpers for the lead pages: the cached report, its tiles, tables, flags and disputed pairs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.views import scale_of
from db import queries_frames
from eval_core.agreement import agreement_report

PAGES = Path(__file__).resolve().parent / "screens"
ADJUDICATE_KEY = "adjudicate_pair"
# Bootstrap replicates for the CIs shown in the app: enough for two stable decimals, cheap at 1M judgments.
APP_BOOTSTRAP = 200
DISPUTED_SHOWN = 25


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


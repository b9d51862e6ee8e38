"""Control pairs: each annotator's grades against settled grades (from an adjudicated release or set by a lead)
— accuracy and κ (linear-weighted by default, DEFAULT_WEIGHTS) with query-clustered bootstrap CIs, by guideline
version and over time, and a drift alert when an annotator's recent κ falls below the threshold."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from eval_core.agreement.bootstrap import bootstrap_sums, percentile_ci
from eval_core.agreement.coefficients import (
    UNDEFINED_OVERLAP,
    UNDEFINED_VARIATION,
    WEIGHTS,
    coef,
    kappa_from_confusion,
)
from eval_core.agreement.types import Coefficient
from eval_core.io.judgments import annotator_kinds
from eval_core.thresholds import AGREEMENT_THRESHOLD, MIN_CI_QUERIES
from eval_core.vocab import AnnotatorKind

DEFAULT_WEIGHTS = "linear"
DEFAULT_RECENT = 20  # the drift check reads each annotator's last this many control judgments
DEFAULT_THRESHOLD = AGREEMENT_THRESHOLD  # an annotator's κ with the settled grades is flagged below it


@dataclass(frozen=True)
class ControlScore:
    """One annotator's (or one group of their) graded control pairs against the settled grades."""

    annotator: str
    group: str | None  # the guideline version or time window, None for all of the annotator's pairs
    pairs: int
    queries: int
    accuracy: Coefficient  # share graded exactly as settled
    kappa: Coefficient  # κ against the settled grades (the report's weights), on the full scale

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "annotator": self.annotator,
            "group": self.group,
            "pairs": self.pairs,
            "queries": self.queries,
            "accuracy": self.accuracy.to_dict(),
            "kappa": self.kappa.to_dict(),
        }


@dataclass(frozen=True)
class DriftAlert:
    """An annotator whose κ on their most recent control pairs is below the threshold."""

    annotator: str
    recent: int
    kappa: float
    threshold: float

    @property
    def sentence(self) -> str:
        """The alert in words."""
        return (
            f"{self.annotator}: κ {self.kappa:.2f} against the control grades on their last {self.recent} "
            f"control pairs, below {self.threshold:g}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "annotator": self.annotator,
            "recent": self.recent,
            "kappa": self.kappa,
            "threshold": self.threshold,
            "sentence": self.sentence,
        }


@dataclass(frozen=True)
class ControlReport:
    """Every annotator against the control grades."""

    weights: str
    threshold: float
    recent: int
    per_annotator: list[ControlScore]
    by_guideline: list[ControlScore]
    over_time: list[ControlScore]
    alerts: list[DriftAlert]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "weights": self.weights,
            "threshold": self.threshold,
            "recent": self.recent,
            "per_annotator": [s.to_dict() for s in self.per_annotator],
            "by_guideline": [s.to_dict() for s in self.by_guideline],
            "over_time": [s.to_dict() for s in self.over_time],
            "alerts": [a.to_dict() for a in self.alerts],
            "notes": list(self.notes),
        }


def _confusions(query: np.ndarray, given: np.ndarray, settled: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query (rows, in `np.unique` order), the flattened k × k confusion settled × given, and the hits."""
    codes, q = np.unique(query, return_inverse=True)
    flat = np.zeros((len(codes), k * k))
    np.add.at(flat, (q, settled * k + given), 1.0)
    hits = np.bincount(q, weights=(settled == given).astype(float), minlength=len(codes))
    return flat, hits


def score(
    annotator: str,
    group: str | None,
    frame: pd.DataFrame,
    k: int,
    weights: str,
    replicates: int,
    seed: int,
    confidence: float,
) -> ControlScore:
    """Accuracy and κ of one annotator's rows (columns query_id, given, settled as 0-based codes) with
    percentile CIs from a bootstrap over queries (the queries' pairs are resampled together), from
    MIN_CI_QUERIES queries up."""
    query, given, settled = (frame[c].to_numpy() for c in ("query_id", "given", "settled"))
    n, n_queries = len(frame), int(pd.unique(query).size)
    if n == 0:
        none = Coefficient(None, None, UNDEFINED_OVERLAP)
        return ControlScore(annotator, group, 0, 0, none, none)
    flat, hits = _confusions(query, given, settled, k)
    conf = flat.sum(0).reshape(k, k)
    kappa = float(kappa_from_confusion(conf, weights))
    accuracy_ci = kappa_ci = None
    if replicates and n_queries >= MIN_CI_QUERIES:  # a handful of queries: the value alone, as for agreement
        counts = np.column_stack([flat, hits, flat.sum(1)])
        (sums,) = bootstrap_sums([counts], replicates, seed)
        accuracy_ci = percentile_ci(sums[:, k * k] / sums[:, k * k + 1], confidence)
        kappa_ci = percentile_ci(kappa_from_confusion(sums[:, : k * k].reshape(-1, k, k), weights), confidence)
    status = "ok" if np.isfinite(kappa) else UNDEFINED_VARIATION
    return ControlScore(
        annotator,
        group,
        n,
        n_queries,
        coef(float(hits.sum()) / n, ci=accuracy_ci),
        coef(kappa if status == "ok" else None, status, kappa_ci),
    )


def matched(judgments: pd.DataFrame, control: pd.DataFrame, scale: tuple[int, int]) -> pd.DataFrame:
    """The judgments of control pairs with a grade (can't-judge left out), each with its settled grade; grades
    as 0-based codes `given`, `settled`."""
    settled = control.rename(columns={"grade": "settled"})[["query_id", "fragment_id", "settled"]]
    graded = judgments[judgments["grade"].notna()]
    rows = graded.merge(settled, on=["query_id", "fragment_id"], how="inner")
    low = scale[0]
    return rows.assign(given=rows["grade"].astype(int) - low, settled=rows["settled"].astype(int) - low)


def control_report(
    judgments: pd.DataFrame,
    control: pd.DataFrame,
    scale: tuple[int, int] = (0, 3),
    weights: str = DEFAULT_WEIGHTS,
    replicates: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    threshold: float = DEFAULT_THRESHOLD,
    recent: int = DEFAULT_RECENT,
) -> ControlReport:
    """Every annotator's grades on control pairs against the settled grades.

    `judgments`: query_id, fragment_id, annotator, grade (None: can't judge), optionally `guideline` (by
    guideline version) and `time` (the order for the time windows and the drift check; file order without it).
    `control`: query_id, fragment_id, grade — the settled grade of each control pair, on `scale`.
    Over time: consecutive windows of `recent` control judgments per annotator; the drift alert fires when the
    κ of an annotator's last `recent` ones is below `threshold`.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    if recent < 2:
        raise ValueError(f"recent must be at least 2 control judgments, got {recent}")
    k = scale[1] - scale[0] + 1
    rows = matched(judgments, control, scale)
    if "time" in rows.columns:
        rows = rows.sort_values("time", kind="stable")
    notes = [] if len(rows) else ["no judgment of a control pair"]
    args = (k, weights, replicates, seed, confidence)
    per, by_guideline, over_time, alerts = [], [], [], []
    for name, own in rows.groupby("annotator", sort=True):
        annotator = str(name)
        per.append(score(annotator, None, own, *args))
        if "guideline" in own.columns:
            for version, part in own.groupby(own["guideline"].fillna("(none)").astype(str), sort=True):
                by_guideline.append(score(annotator, str(version), part, *args))
        for start in range(0, len(own), recent):
            window = own.iloc[start : start + recent]
            label = f"control judgments {start + 1}–{start + len(window)}"
            over_time.append(score(annotator, label, window, *args))
        last = score(annotator, "recent", own.iloc[-recent:], k, weights, 0, seed, confidence)
        if len(own) >= recent and last.kappa.value is not None and last.kappa.value < threshold:
            alerts.append(DriftAlert(annotator, min(recent, len(own)), last.kappa.value, threshold))
    return ControlReport(weights, threshold, recent, per, by_guideline, over_time, alerts, notes)


def vs_reference(
    judgments: pd.DataFrame,
    scale: tuple[int, int] = (0, 3),
    weights: str = DEFAULT_WEIGHTS,
    replicates: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, ControlReport]:
    """Each reference annotator's grades (annotator_kind 'reference', e.g. NIST's qrels) as settled grades, and
    every person against them: accuracy and κ (the report's weights, linear by default) with query-clustered CIs,
    exactly as against control pairs. Model judges are left out; an empty dict when the frame names no reference."""
    kinds = annotator_kinds(judgments)
    references = sorted(a for a, kind in kinds.items() if kind == AnnotatorKind.REFERENCE)
    if not references:
        return {}
    names = judgments["annotator"].astype(str)
    people = judgments[names.map(kinds).eq(AnnotatorKind.HUMAN).to_numpy()]
    out = {}
    for reference in references:
        own = judgments[(names == reference).to_numpy() & judgments["grade"].notna().to_numpy()]
        settled = own[["query_id", "fragment_id", "grade"]].astype({"grade": "int64"})
        out[reference] = control_report(
            people,
            settled,
            scale,
            weights=weights,
            replicates=replicates,
            seed=seed,
            confidence=confidence,
            threshold=threshold,
        )
    return out

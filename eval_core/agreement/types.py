"""The agreement report as types: every consumer reads fields, and only `to_dict()` makes the JSON shape.

A coefficient is a `Coefficient` (value, confidence interval, status); an undefined one has value and CI
None and says why in its status, so no reader guesses from a missing key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OK = "ok"


@dataclass(frozen=True)
class Coefficient:
    """One agreement coefficient: value and CI are None unless status is "ok"."""

    value: float | None
    ci: tuple[float, float] | None = None
    status: str = OK

    @property
    def defined(self) -> bool:
        """True when the coefficient has a value."""
        return self.value is not None

    def ci_text(self, digits: int = 3, joiner: str = ", ") -> str:
        """`0.440, 0.600` (or with another joiner), or "" without an interval."""
        return f"{self.ci[0]:.{digits}f}{joiner}{self.ci[1]:.{digits}f}" if self.ci else ""

    def text(self, digits: int = 3) -> str:
        """`0.520 [0.440, 0.600]`, `0.520` without a CI, or the status saying why it is undefined."""
        if self.value is None:
            return self.status
        return f"{self.value:.{digits}f}" + (f" [{self.ci_text(digits)}]" if self.ci else "")

    def to_dict(self) -> dict[str, Any]:
        """The report's JSON C: {"value", "ci", "status"}."""
        return {"value": self.value, "ci": list(self.ci) if self.ci else None, "status": self.status}


@dataclass(frozen=True)
class Boundary:
    """A cut of the scale (grade ≥ cut vs below) with its binarised α: the boundary annotators blur."""

    cut: str
    alpha: float

    @property
    def label(self) -> str:
        """'1|2' for the cut at ≥ 2: the two grades it separates."""
        return f"{int(self.cut) - 1}|{self.cut}"


@dataclass(frozen=True)
class KappaPair:
    """Cohen's κ of two annotators on the pairs both graded, for every weighting, with their confusion matrix."""

    a: str
    b: str
    n: int
    kappa: dict[str, Coefficient]
    confusion: list[list[int]]

    def to_dict(self) -> dict[str, Any]:
        """{"a", "b", "n", "unweighted": C, "linear": C, "quadratic": C, "confusion"}."""
        return {
            "a": self.a,
            "b": self.b,
            "n": self.n,
            **{w: c.to_dict() for w, c in self.kappa.items()},
            "confusion": self.confusion,
        }


@dataclass(frozen=True)
class LeaveOneOut:
    """α without one annotator's grades and its change against all (positive: they pull agreement down)."""

    annotator: str
    n_grades: int
    alpha: Coefficient
    delta: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON row."""
        return {
            "annotator": self.annotator,
            "n_grades": self.n_grades,
            "alpha": self.alpha.to_dict(),
            "delta": self.delta,
        }


@dataclass(frozen=True)
class GradeBias:
    """An annotator's mean grade against the mean of the others on the same pairs."""

    annotator: str
    n_shared: int
    mean_grade: float
    others_mean: float
    bias: float

    def to_dict(self) -> dict[str, Any]:
        """JSON row."""
        return {
            "annotator": self.annotator,
            "n_shared": self.n_shared,
            "mean_grade": self.mean_grade,
            "others_mean": self.others_mean,
            "bias": self.bias,
        }


@dataclass(frozen=True)
class DisputedPair:
    """A (query, fragment) pair with a wide grade spread, with every grade (None = can't judge) and note."""

    query_id: str
    fragment_id: str
    spread: int
    grades: dict[str, int | None]
    notes: dict[str, str] | None = None

    @property
    def key(self) -> tuple[str, str]:
        """(query id, fragment id)."""
        return self.query_id, self.fragment_id

    def to_dict(self) -> dict[str, Any]:
        """JSON row; "notes" only when the judgments carry a note column."""
        out: dict[str, Any] = {
            "query_id": self.query_id,
            "fragment_id": self.fragment_id,
            "spread": self.spread,
            "grades": self.grades,
        }
        if self.notes is not None:
            out["notes"] = self.notes
        return out


@dataclass(frozen=True)
class DisputedQuery:
    """A query by how far its pairs' grades spread."""

    query_id: str
    n_pairable: int
    mean_spread: float
    n_spread_2_plus: int

    def to_dict(self) -> dict[str, Any]:
        """JSON row."""
        return {
            "query_id": self.query_id,
            "n_pairable": self.n_pairable,
            "mean_spread": self.mean_spread,
            "n_spread_2_plus": self.n_spread_2_plus,
        }


@dataclass(frozen=True)
class GroupAlpha:
    """α within one group of judgments (a query, a category, a guideline version)."""

    group: str
    n_units: int
    n_pairable: int
    alpha: Coefficient

    def to_dict(self) -> dict[str, Any]:
        """JSON row."""
        return {
            "group": self.group,
            "n_units": self.n_units,
            "n_pairable": self.n_pairable,
            "alpha": self.alpha.to_dict(),
        }


@dataclass(frozen=True)
class Diagnostics:
    """Where disagreement lives; `by_field`/`by` only with a breakdown, `guidelines` only with versions."""

    leave_one_out: list[LeaveOneOut]
    bias: list[GradeBias]
    disputed_pairs: list[DisputedPair]
    disputed_queries: list[DisputedQuery]
    by_field: str | None = None
    by: list[GroupAlpha] | None = None
    guidelines: list[GroupAlpha] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape.

        {"leave_one_out", "bias", "disputed_pairs", "disputed_queries", "by"?: {"field", "groups"}, "guidelines"?}.
        """
        out: dict[str, Any] = {
            "leave_one_out": [r.to_dict() for r in self.leave_one_out],
            "bias": [r.to_dict() for r in self.bias],
            "disputed_pairs": [r.to_dict() for r in self.disputed_pairs],
            "disputed_queries": [r.to_dict() for r in self.disputed_queries],
        }
        if self.by is not None:
            out["by"] = {"field": self.by_field, "groups": [g.to_dict() for g in self.by]}
        if self.guidelines is not None:
            out["guidelines"] = [g.to_dict() for g in self.guidelines]
        return out


@dataclass(frozen=True)
class GuidelineVerdict:
    """One guideline version judged by the same rule as the whole set."""

    guideline: str
    alpha: Coefficient
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        """JSON row."""
        return {"guideline": self.guideline, "alpha": self.alpha.to_dict(), "verdict": self.verdict}


@dataclass(frozen=True)
class Assessment:
    """The verdict on α against the threshold, Krippendorff's band, and reasons a lead can act on."""

    threshold: float
    verdict: str
    band: str | None
    reasons: list[str]
    guidelines: list[GuidelineVerdict] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """{"threshold", "verdict", "band", "reasons", "guidelines"?}."""
        out: dict[str, Any] = {
            "threshold": self.threshold,
            "verdict": self.verdict,
            "band": self.band,
            "reasons": self.reasons,
        }
        if self.guidelines:
            out["guidelines"] = [g.to_dict() for g in self.guidelines]
        return out


@dataclass(frozen=True)
class Bootstrap:
    """How the CIs were made: replicates resampling `cluster`, seed and confidence level."""

    replicates: int
    seed: int
    confidence: float
    cluster: str = "query_id"
    status: str = OK  # or why there are no CIs (e.g. too few queries to resample)

    def to_dict(self) -> dict[str, Any]:
        """JSON object."""
        return {
            "replicates": self.replicates,
            "seed": self.seed,
            "confidence": self.confidence,
            "cluster": self.cluster,
            "status": self.status,
        }


@dataclass(frozen=True)
class AgreementReport:
    """Everything `qrelkit agreement` reports; `light_kappa` (mean pairwise Cohen's κ) and `weakest` are
    typed-only conveniences the JSON leaves out (its shape is fixed)."""

    n_units: int
    n_annotators: int
    n_judgments: int
    n_grades: int
    n_cant_judge: int
    n_queries: int
    n_pairable_units: int
    scale: tuple[int, int]
    level: str
    bootstrap: Bootstrap
    raw_agreement: Coefficient
    prevalence: dict[str, float | None]
    alpha: dict[str, Coefficient]
    fleiss_kappa: Coefficient
    ac1: Coefficient
    ac2: dict[str, Coefficient]
    kappa: list[KappaPair]
    light_kappa: dict[str, Coefficient]
    cuts: dict[str, Coefficient]
    weakest: Boundary | None
    diagnostics: Diagnostics
    assessment: Assessment

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `qrelkit agreement --format json` (raw agreement as a bare number plus its CI)."""
        return {
            "n_units": self.n_units,
            "n_annotators": self.n_annotators,
            "n_judgments": self.n_judgments,
            "n_grades": self.n_grades,
            "n_cant_judge": self.n_cant_judge,
            "n_queries": self.n_queries,
            "n_pairable_units": self.n_pairable_units,
            "scale": list(self.scale),
            "level": self.level,
            "bootstrap": self.bootstrap.to_dict(),
            "raw_agreement": self.raw_agreement.value,
            "raw_agreement_ci": list(self.raw_agreement.ci) if self.raw_agreement.ci else None,
            "prevalence": self.prevalence,
            "alpha": {lv: c.to_dict() for lv, c in self.alpha.items()},
            "fleiss_kappa": self.fleiss_kappa.to_dict(),
            "ac1": self.ac1.to_dict(),
            "ac2": {w: c.to_dict() for w, c in self.ac2.items()},
            "kappa": [k.to_dict() for k in self.kappa],
            "cuts": {label: c.to_dict() for label, c in self.cuts.items()},
            "diagnostics": self.diagnostics.to_dict(),
            "assessment": self.assessment.to_dict(),
        }

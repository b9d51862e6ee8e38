"""Recompute α and κ with the reference libraries, so a lead can see them vouch for qrelkit's numbers.

`krippendorff.alpha` gets the annotators × units matrix (its orientation; transposed it is silently wrong),
the level named explicitly (its default is interval) and `value_domain` = the whole scale;
`sklearn.metrics.cohen_kappa_score` gets `labels` = the whole scale (otherwise an unused grade changes
the weights). Both are optional (`pip install qrelkit[reference]`; krippendorff is GPL-3.0).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from eval_core.agreement.coefficients import LEVELS, WEIGHTS
from eval_core.agreement.data import encode
from eval_core.agreement.types import AgreementReport, Coefficient

REFERENCE_EXTRA = "pip install qrelkit[reference]"
TOLERANCE = 1e-9


@dataclass(frozen=True)
class ReferenceCheck:
    """One coefficient recomputed by a reference library: the largest |ours - theirs| over its instances."""

    coefficient: str
    library: str
    compared: int
    largest_difference: float
    worst: str
    mismatched: int

    @property
    def agrees(self) -> bool:
        """Every instance within TOLERANCE, and defined on both sides or on neither."""
        return self.mismatched == 0 and self.largest_difference <= TOLERANCE

    def to_dict(self) -> dict[str, Any]:
        """JSON row."""
        return {
            "coefficient": self.coefficient,
            "library": self.library,
            "compared": self.compared,
            "largest_difference": self.largest_difference,
            "worst": self.worst,
            "mismatched": self.mismatched,
            "agrees": self.agrees,
        }


def reference_libraries() -> tuple[Any, Any]:
    """(krippendorff.alpha, sklearn.metrics.cohen_kappa_score); ImportError naming the extra if missing."""
    try:
        from krippendorff import alpha
        from sklearn.metrics import cohen_kappa_score
    except ImportError as exc:
        raise ImportError(f"the reference cross-check needs krippendorff and scikit-learn: {REFERENCE_EXTRA}") from exc
    return alpha, cohen_kappa_score


def reliability_matrix(judgments: pd.DataFrame, scale: tuple[int, int]) -> tuple[np.ndarray, list[str]]:
    """Annotators × units grades (NaN = not graded or can't judge) and the annotators' names, row order."""
    enc = encode(judgments, scale)
    matrix = np.full((len(enc.annotators), len(enc.units)), np.nan)
    valid = enc.grade >= 0
    matrix[enc.annotator[valid], enc.unit[valid]] = enc.grade[valid] + scale[0]
    return matrix, enc.annotators


def _difference(ours: Coefficient, theirs: float) -> float | None:
    """|ours - theirs|, 0 when both are undefined, None when only one side is."""
    if ours.value is None or not np.isfinite(theirs):
        return 0.0 if ours.value is None and not np.isfinite(theirs) else None
    return abs(ours.value - theirs)


def _summary(coefficient: str, library: str, diffs: list[tuple[str, float | None]]) -> ReferenceCheck:
    """Largest difference over the defined instances and the count where only one side is defined."""
    defined = [(where, d) for where, d in diffs if d is not None]
    worst, largest = max(defined, key=lambda item: item[1]) if defined else ("", 0.0)
    return ReferenceCheck(coefficient, library, len(diffs), float(largest), worst, sum(d is None for _, d in diffs))


def cross_check(judgments: pd.DataFrame, scale: tuple[int, int], report: AgreementReport) -> list[ReferenceCheck]:
    """α at every level with krippendorff.alpha and every pair's κ with cohen_kappa_score, against the report."""
    alpha, cohen_kappa_score = reference_libraries()
    matrix, annotators = reliability_matrix(judgments, scale)
    domain = list(range(scale[0], scale[1] + 1))
    out = []
    for level in LEVELS:
        try:
            with np.errstate(divide="ignore", invalid="ignore"):
                theirs = float(alpha(matrix, level_of_measurement=level, value_domain=domain))
        except (ValueError, ZeroDivisionError):  # one annotator, or nothing pairable: undefined
            theirs = np.nan
        out.append(
            _summary(
                f"Krippendorff's α ({level})", "krippendorff.alpha", [("", _difference(report.alpha[level], theirs))]
            )
        )
    rows = {name: i for i, name in enumerate(annotators)}
    for weight in WEIGHTS:
        diffs = []
        for pair in report.kappa:
            a, b = matrix[rows[pair.a]], matrix[rows[pair.b]]
            both = ~np.isnan(a) & ~np.isnan(b)
            theirs = np.nan
            if both.any():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    theirs = float(
                        cohen_kappa_score(
                            a[both], b[both], labels=domain, weights=None if weight == "unweighted" else weight
                        )
                    )
            diffs.append((f"{pair.a} × {pair.b}", _difference(pair.kappa[weight], theirs)))
        out.append(_summary(f"Cohen's κ ({weight})", "sklearn.metrics.cohen_kappa_score", diffs))
    return out

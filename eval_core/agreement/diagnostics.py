"""Where disagreement lives: α without each annotator, grade bias, the most disputed pairs and queries."""

from __future__ import annotations

import numpy as np
import pandas as pd

from eval_core.agreement.coefficients import (
    UNDEFINED_VARIATION,
    alpha_from_coincidence,
    coef,
    multi_status,
)
from eval_core.agreement.data import Encoded, row_matrix
from eval_core.agreement.types import Coefficient, DisputedPair, DisputedQuery, GradeBias, LeaveOneOut


def _alpha_coef(o: np.ndarray, level: str, status: str) -> Coefficient:
    """α of one coincidence matrix, or why it is undefined."""
    if status != "ok":
        return coef(None, status)
    value = float(alpha_from_coincidence(o, level))
    return coef(value) if np.isfinite(value) else coef(None, UNDEFINED_VARIATION)


def leave_one_out(enc: Encoded, counts: np.ndarray, level: str, full: float | None) -> list[LeaveOneOut]:
    """α with each annotator's grades removed, and the change: who pulls agreement down.

    All annotators at once: removing grade g from a unit with counts n (m grades) turns its coincidences
    A/(m-1), A = nnᵀ - diag(n), into (A - n e_gᵀ - e_g nᵀ + 2 diag(e_g))/(m-2); the changes are summed per
    annotator with two sparse products instead of recomputing α from the judgments per annotator.
    """
    k, n_units, n_annot = enc.k, len(enc.units), len(enc.annotators)
    m = counts.sum(axis=1)
    pair_mass = (counts[:, :, None] * counts[:, None, :]).reshape(n_units, k * k)
    pair_mass[:, np.arange(k) * (k + 1)] -= counts
    w1 = np.divide(1.0, m - 1, out=np.zeros(n_units), where=m >= 2)
    w2 = np.divide(1.0, m - 2, out=np.zeros(n_units), where=m >= 3)
    o_full = (w1 @ pair_mass).reshape(k, k)
    valid = enc.grade >= 0
    u, g, a = enc.unit[valid], enc.grade[valid], enc.annotator[valid]
    by_annotator = row_matrix(a, u, (w2 - w1)[u], (n_annot, n_units))
    by_grade = row_matrix(a * k + g, u, w2[u], (n_annot * k, n_units))
    change = np.asarray(by_annotator @ pair_mass).reshape(n_annot, k, k)
    cross = np.asarray(by_grade @ counts).reshape(n_annot, k, k)  # [a, g, c] = Σ w2 n_c over a's grade-g units
    diag = np.bincount(a * k + g, weights=2.0 * w2[u], minlength=n_annot * k).reshape(n_annot, k)
    o = o_full + change - cross - cross.transpose(0, 2, 1)
    o[:, np.arange(k), np.arange(k)] += diag
    n_grades = np.bincount(a, minlength=n_annot)
    lost_pairable = np.bincount(a[m[u] == 2], minlength=n_annot)
    n_pairable = int((m >= 2).sum())
    graders = np.flatnonzero(n_grades)
    rows = []
    for i in graders:
        status = multi_status(len(graders) - 1, n_pairable - int(lost_pairable[i]))
        alpha = _alpha_coef(o[i], level, status)
        delta = None if alpha.value is None or full is None else alpha.value - full
        rows.append(LeaveOneOut(enc.annotators[i], int(n_grades[i]), alpha, delta))
    return sorted(rows, key=lambda r: -(r.delta if r.delta is not None else -np.inf))


def grade_bias(enc: Encoded, counts: np.ndarray, low: int) -> list[GradeBias]:
    """Each annotator's mean grade vs the mean of the others on the same pairs (positive = grades higher)."""
    m = counts.sum(axis=1)
    total = counts @ np.arange(enc.k)
    valid = enc.grade >= 0
    shared = valid & (m[enc.unit] >= 2)
    u, g, a = enc.unit[shared], enc.grade[shared].astype(float), enc.annotator[shared]
    others = (total[u] - g) / (m[u] - 1)
    n_annot = len(enc.annotators)
    n = np.bincount(a, minlength=n_annot)
    own = np.bincount(a, weights=g, minlength=n_annot)
    other = np.bincount(a, weights=others, minlength=n_annot)
    rows = []
    for i in np.flatnonzero(n):
        rows.append(
            GradeBias(
                enc.annotators[i],
                int(n[i]),
                float(own[i] / n[i] + low),
                float(other[i] / n[i] + low),
                float((own[i] - other[i]) / n[i]),
            )
        )
    return sorted(rows, key=lambda r: -abs(r.bias))


def unit_spread(counts: np.ndarray) -> np.ndarray:
    """Highest minus lowest grade per unit (0 when fewer than two grades)."""
    present = counts > 0
    k = counts.shape[1]
    hi = np.where(present.any(axis=1), k - 1 - np.argmax(present[:, ::-1], axis=1), 0)
    lo = np.where(present.any(axis=1), np.argmax(present, axis=1), 0)
    return np.where(counts.sum(axis=1) >= 2, hi - lo, 0)


def disputed_pairs(enc: Encoded, counts: np.ndarray, judgments: pd.DataFrame, low: int, top: int) -> list[DisputedPair]:
    """The `top` pairs with the widest grade spread (then most pairwise disagreement), with every grade and note."""
    spread = unit_spread(counts)
    m = counts.sum(axis=1)
    grades = np.arange(enc.k, dtype=float)
    mean = np.divide(counts @ grades, m, out=np.zeros(len(m)), where=m > 0)
    var = np.divide(counts @ grades**2, m, out=np.zeros(len(m)), where=m > 0) - mean**2
    candidates = np.flatnonzero(spread > 0)
    order = candidates[np.lexsort((candidates, -var[candidates], -spread[candidates]))][:top]
    chosen = judgments[np.isin(enc.unit, order)]
    chosen_units = enc.unit[np.isin(enc.unit, order)]
    has_note = "note" in judgments.columns
    rows = []
    for u in order:
        sub = chosen[chosen_units == u]
        grade_map = {
            str(a): (None if pd.isna(g) else int(g)) for a, g in zip(sub["annotator"], sub["grade"], strict=True)
        }
        notes = (
            {
                str(a): str(n)
                for a, n in zip(sub["annotator"], sub["note"], strict=True)
                if n is not None and not pd.isna(n) and str(n) != ""
            }
            if has_note
            else None
        )
        rows.append(
            DisputedPair(
                str(enc.units.at[u, "query_id"]), str(enc.units.at[u, "fragment_id"]), int(spread[u]), grade_map, notes
            )
        )
    return rows


def disputed_queries(enc: Encoded, counts: np.ndarray, top: int) -> list[DisputedQuery]:
    """Queries whose pairs disagree most: mean grade spread over their pairs with ≥ 2 grades."""
    spread = unit_spread(counts).astype(float)
    pairable = counts.sum(axis=1) >= 2
    n_queries = len(enc.queries)
    n = np.bincount(enc.unit_query[pairable], minlength=n_queries)
    total = np.bincount(enc.unit_query[pairable], weights=spread[pairable], minlength=n_queries)
    wide = np.bincount(enc.unit_query[pairable], weights=(spread[pairable] >= 2), minlength=n_queries)
    has = np.flatnonzero(n)
    mean = total[has] / n[has]
    order = has[np.lexsort((has, -wide[has], -mean))][:top]
    return [
        DisputedQuery(enc.queries[q], int(n[q]), float(total[q] / n[q]), int(wide[q])) for q in order if total[q] > 0
    ]

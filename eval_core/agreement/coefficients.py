"""Agreement coefficients from small count matrices, batched, so one code path serves estimates and bootstrap.

Conventions follow the reference implementations the tests compare against: Krippendorff's α as the
`krippendorff` package (coincidence matrix, value domain = the full scale), Cohen's κ as scikit-learn's
`cohen_kappa_score(labels=scale)`, Fleiss' κ, Gwet's AC1/AC2 and percent agreement as the irrCAC R package
(Gwet 2014), where π_k averages each unit's category shares over all units with at least one grade.
Internal functions return NaN where a coefficient is undefined; the public ones return a `Coefficient`
(value, ci, status) and never NaN.
"""

from __future__ import annotations

import numpy as np

from eval_core.agreement.types import OK, Coefficient

LEVELS = ("ordinal", "nominal", "interval")
WEIGHTS = ("unweighted", "linear", "quadratic")
UNDEFINED_ONE = "undefined: one annotator"
UNDEFINED_OVERLAP = "undefined: no overlapping pairs"
UNDEFINED_VARIATION = "undefined: no variation"


KAPPA_NAMES = {"unweighted": "unweighted κ", "linear": "linear-weighted κ", "quadratic": "quadratic-weighted κ"}


def kappa_name(weights: str) -> str:
    """Cohen's κ named by its weighting, as every label, caption and report line writes it (KAPPA_NAMES): never
    weighted without saying linear or quadratic (tests/test_docs.py guards code and docs)."""
    if weights not in KAPPA_NAMES:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    return KAPPA_NAMES[weights]


def coef(value: float | None, status: str = OK, ci: tuple[float, float] | None = None) -> Coefficient:
    """A Coefficient whose value and CI are None unless it is defined (a non-finite value: no variation)."""
    if status != OK or value is None or not np.isfinite(value):
        return Coefficient(None, None, status if status != OK else UNDEFINED_VARIATION)
    return Coefficient(float(value), ci, OK)


def agreement_weights(k: int, kind: str) -> np.ndarray:
    """Gwet's agreement weights on k equally spaced grades: identity, 1-|d|/(k-1) or 1-(d/(k-1))²."""
    if kind not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {kind!r}")
    d = np.abs(np.subtract.outer(np.arange(k), np.arange(k))) / (k - 1)
    if kind == "unweighted":
        return np.eye(k)
    return 1.0 - (d if kind == "linear" else d**2)


def kappa_from_confusion(conf: np.ndarray, kind: str = "unweighted") -> np.ndarray:
    """Cohen's κ for confusion matrices (..., K, K): 1 - Σ w·observed / Σ w·expected (scikit-learn's weights)."""
    k = conf.shape[-1]
    disagree = 1.0 - agreement_weights(k, kind)
    n = conf.sum(axis=(-2, -1))
    rows, cols = conf.sum(axis=-1), conf.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[..., :, None] * cols[..., None, :] / n[..., None, None]
        observed_d = (conf * disagree).sum(axis=(-2, -1))
        expected_d = (expected * disagree).sum(axis=(-2, -1))
        value = 1.0 - observed_d / expected_d
    return np.where((n > 0) & (expected_d > 1e-12 * np.maximum(n, 1)), value, np.nan)


def kappa_status(conf: np.ndarray, kind: str = "unweighted") -> str:
    """Why one pair's κ is undefined, or "ok"."""
    if conf.sum() == 0:
        return UNDEFINED_OVERLAP
    return "ok" if np.isfinite(kappa_from_confusion(conf, kind)) else UNDEFINED_VARIATION


def unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices (U, K, K): n_uc (n_uk - [c=k]) / (m_u - 1); zero for units with < 2 grades."""
    m = counts.sum(axis=1)
    outer = counts[:, :, None] * counts[:, None, :]
    idx = np.arange(counts.shape[1])
    outer[:, idx, idx] -= counts
    scale = np.zeros(len(m), dtype=float)
    np.divide(1.0, m - 1, out=scale, where=m >= 2)
    return outer * scale[:, None, None]


def squared_distances(totals: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's δ² for each pair of grades (..., K, K); the ordinal metric depends on the grade totals."""
    k = totals.shape[-1]
    idx = np.arange(k)
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(k), (*totals.shape[:-1], k, k))
    if level == "interval":
        return np.broadcast_to(np.subtract.outer(idx, idx) ** 2.0, (*totals.shape[:-1], k, k))
    if level != "ordinal":
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
    cum = np.cumsum(totals, axis=-1)
    span = cum[..., hi] - cum[..., lo] + (totals[..., lo] - totals[..., hi]) / 2.0
    return span**2


def alpha_from_coincidence(o: np.ndarray, level: str = "ordinal") -> np.ndarray:
    """Krippendorff's α for coincidence matrices (..., K, K): 1 - (n-1) Σ o·δ² / Σ n_c n_k δ²."""
    totals = o.sum(axis=-1)
    n = totals.sum(axis=-1)
    d2 = squared_distances(totals, level)
    observed = (o * d2).sum(axis=(-2, -1))
    expected = (totals[..., :, None] * totals[..., None, :] * d2).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        value = 1.0 - (n - 1.0) * observed / expected
    return np.where((n > 1) & (expected > 1e-12 * np.maximum(n, 1) ** 2), value, np.nan)


def binarise_coincidence(o: np.ndarray, cut: int) -> np.ndarray:
    """Collapse (..., K, K) coincidences to (..., 2, 2) for grade index < cut vs ≥ cut (a cut of the scale)."""
    low, high = slice(0, cut), slice(cut, None)
    blocks = [[o[..., a, b].sum(axis=(-2, -1)) for b in (low, high)] for a in (low, high)]
    return np.stack([np.stack(row, axis=-1) for row in blocks], axis=-2)


def gwet_unit_terms(counts: np.ndarray) -> dict[str, np.ndarray]:
    """Per-unit sums that add up (over units, then queries) to Gwet's pa and π_k for every weighting."""
    k = counts.shape[1]
    m = counts.sum(axis=1)
    graded = m >= 1
    pairable = m >= 2
    denom = np.where(pairable, m * (m - 1), 1.0)
    terms = {}
    for kind in WEIGHTS:
        weighted = counts @ agreement_weights(k, kind).T
        terms[f"pa_{kind}"] = np.where(pairable, (counts * (weighted - 1.0)).sum(axis=1) / denom, 0.0)
    terms["n2"] = pairable.astype(float)
    terms["pi"] = np.where(graded[:, None], counts / np.where(graded, m, 1.0)[:, None], 0.0)
    terms["n1"] = graded.astype(float)
    return terms


def gwet_from_sums(
    pa_sum: np.ndarray, n2: np.ndarray, pi_sum: np.ndarray, n1: np.ndarray, kind: str
) -> dict[str, np.ndarray]:
    """Percent agreement, AC1/AC2 and Fleiss' κ (unweighted only) from summed unit terms (batched)."""
    k = pi_sum.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = np.where(n2 > 0, pa_sum / n2, np.nan)
        pi = pi_sum / n1[..., None]
        pe_ac = agreement_weights(k, kind).sum() * (pi * (1.0 - pi)).sum(axis=-1) / (k * (k - 1))
        ac = (pa - pe_ac) / (1.0 - pe_ac)
        out = {"pa": pa, "ac": np.where(pe_ac < 1 - 1e-12, ac, np.nan)}
        if kind == "unweighted":
            pe_f = (pi**2).sum(axis=-1)
            out["fleiss"] = np.where(pe_f < 1 - 1e-12, (pa - pe_f) / (1.0 - pe_f), np.nan)
    return out


# ---- public functions on plain arrays (annotators × units, NaN = missing / can't judge) ----


def value_counts(reliability_data: np.ndarray, scale: tuple[int, int] = (0, 3)) -> np.ndarray:
    """Units × grades counts from an annotators × units matrix (NaN = no grade); rejects off-scale values."""
    data = np.asarray(reliability_data, dtype=float)
    if data.ndim != 2:
        raise ValueError("reliability data must be a 2-D annotators × units matrix")
    low, high = scale
    seen = ~np.isnan(data)
    values = data[seen]
    if ((values != np.round(values)) | (values < low) | (values > high)).any():
        raise ValueError(f"grades must be integers in {low}-{high}")
    k = high - low + 1
    unit = np.broadcast_to(np.arange(data.shape[1]), data.shape)[seen]
    return np.bincount(unit * k + (values - low).astype(int), minlength=data.shape[1] * k).reshape(-1, k)


def multi_status(n_annotators: int, n_pairable: int) -> str:
    """Why a multi-annotator coefficient cannot be computed, or "ok" (variation is checked on the value)."""
    if n_annotators < 2:
        return UNDEFINED_ONE
    if n_pairable == 0:
        return UNDEFINED_OVERLAP
    return "ok"


def _multi_status(data: np.ndarray, counts: np.ndarray) -> str:
    """multi_status of an annotators × units matrix."""
    graders = int((~np.isnan(np.asarray(data, dtype=float))).any(axis=1).sum())
    return multi_status(graders, int((counts.sum(axis=1) >= 2).sum()))


def krippendorff_alpha(
    reliability_data: np.ndarray, level: str = "ordinal", scale: tuple[int, int] = (0, 3)
) -> Coefficient:
    """Krippendorff's α of an annotators × units matrix (the `krippendorff` package's orientation)."""
    counts = value_counts(reliability_data, scale)
    status = _multi_status(reliability_data, counts)
    if status != "ok":
        return coef(None, status)
    return coef(float(alpha_from_coincidence(unit_coincidences(counts).sum(axis=0), level)))


def cohen_kappa(
    a: np.ndarray, b: np.ndarray, weights: str = "unweighted", scale: tuple[int, int] = (0, 3)
) -> Coefficient:
    """Cohen's κ of two annotators on the units both graded, over the full scale (never the observed labels)."""
    counts = value_counts(np.vstack([a, b]), scale)
    data = np.vstack([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    both = ~np.isnan(data).any(axis=0)
    k = counts.shape[1]
    low = scale[0]
    conf = np.bincount(
        (data[0, both] - low).astype(int) * k + (data[1, both] - low).astype(int), minlength=k * k
    ).reshape(k, k)
    status = kappa_status(conf, weights)
    return coef(float(kappa_from_confusion(conf, weights)) if status == "ok" else None, status)


def _gwet(reliability_data: np.ndarray, kind: str, scale: tuple[int, int]) -> tuple[str, dict]:
    counts = value_counts(reliability_data, scale).astype(float)
    status = _multi_status(reliability_data, counts)
    terms = gwet_unit_terms(counts)
    sums = gwet_from_sums(
        terms[f"pa_{kind}"].sum(), terms["n2"].sum(), terms["pi"].sum(axis=0), terms["n1"].sum(), kind
    )
    return status, sums


def gwet_ac(reliability_data: np.ndarray, weights: str = "unweighted", scale: tuple[int, int] = (0, 3)) -> Coefficient:
    """Gwet's AC1 (unweighted) or AC2 (linear / quadratic weights), as irrCAC's gwet.ac1.raw."""
    status, sums = _gwet(reliability_data, weights, scale)
    return coef(sums["ac"][()] if status == "ok" else None, status)


def fleiss_kappa(reliability_data: np.ndarray, scale: tuple[int, int] = (0, 3)) -> Coefficient:
    """Fleiss' κ generalised to missing grades, as irrCAC's fleiss.kappa.raw."""
    status, sums = _gwet(reliability_data, "unweighted", scale)
    return coef(sums["fleiss"][()] if status == "ok" else None, status)


def percent_agreement(reliability_data: np.ndarray, scale: tuple[int, int] = (0, 3)) -> Coefficient:
    """Gwet's percent agreement: mean over units with ≥ 2 grades of the share of agreeing grade pairs."""
    status, sums = _gwet(reliability_data, "unweighted", scale)
    return coef(sums["pa"][()] if status == "ok" else None, status)


def cut_points(scale: tuple[int, int]) -> list[tuple[str, int]]:
    """Each cut of the scale as (label, grade index): grade ≥ label is the 'positive' side."""
    low, high = scale
    return [(str(g), g - low) for g in range(low + 1, high + 1)]

"""Discriminative power (Sakai): the share of run pairs whose difference is significant after a correction
for testing every pair, and the achieved significance level (ASL) of each pair."""

from __future__ import annotations

from enum import StrEnum

import numpy as np
from scipy import stats

CHUNK = 50  # resamples permuted at once (bounds memory at CHUNK × runs × queries)


class Correction(StrEnum):
    """How a pair's p-value accounts for the other pairs tested alongside it."""

    TUKEY_HSD = "tukey-hsd"  # Sakai's randomised Tukey HSD: the max − min run mean under permutation
    HOLM = "holm"  # Holm's step-down adjustment of paired t-test p-values

    @property
    def label(self) -> str:
        """How the output names the correction."""
        return {Correction.TUKEY_HSD: "randomised Tukey HSD", Correction.HOLM: "paired t-tests, Holm-adjusted"}[self]


def run_pairs(n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j of runs, in the order the ASLs are given."""
    i, j = np.triu_indices(n_runs, 1)
    return i, j


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values: the k-th smallest times (m − k + 1), made monotone, capped at 1."""
    order = np.argsort(p, kind="stable")
    m = len(p)
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adjusted
    return out


def paired_t_holm(scores: np.ndarray) -> np.ndarray:
    """Holm-adjusted two-sided paired t-test p-values for every run pair (rows of `scores` are runs).
    A pair with no difference on any query gets p = 1 (the t statistic is undefined)."""
    i, j = run_pairs(scores.shape[0])
    diff = scores[i] - scores[j]
    sd = diff.std(1, ddof=1)
    n = scores.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = diff.mean(1) / (sd / np.sqrt(n))
    p = np.where(sd > 0, 2 * stats.t.sf(np.abs(t), n - 1), 1.0)
    p = np.where((sd == 0) & (diff.mean(1) != 0), 0.0, p)
    return holm(p)


def randomised_tukey_hsd(scores: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Sakai's randomised Tukey HSD: each resample permutes every query's scores among the runs; a pair's ASL is
    the share of resamples whose largest minus smallest run mean reaches the pair's observed mean difference.
    Seeded: the same seed gives the same ASLs."""
    m, n = scores.shape
    i, j = run_pairs(m)
    observed = np.abs(scores.mean(1)[i] - scores.mean(1)[j])
    rng = np.random.default_rng(seed)
    ranges = np.empty(resamples)
    for start in range(0, resamples, CHUNK):
        rows = min(CHUNK, resamples - start)
        perm = np.argsort(rng.random((rows, m, n)), axis=1)
        means = np.take_along_axis(np.broadcast_to(scores, (rows, m, n)), perm, axis=1).mean(2)
        ranges[start : start + rows] = means.max(1) - means.min(1)
    ranges.sort()
    # ties within float noise count as reaching the observed difference
    reached = resamples - np.searchsorted(ranges, observed - 1e-12, side="left")
    return reached / resamples


def achieved_significance(scores: np.ndarray, correction: Correction, resamples: int, seed: int) -> np.ndarray:
    """Every run pair's ASL under `correction` (pairs in `run_pairs` order)."""
    if correction is Correction.HOLM:
        return paired_t_holm(scores)
    return randomised_tukey_hsd(scores, resamples, seed)

"""Ranking stability: Kendall's τ between the run rankings on two random halves of the queries (Voorhees &
Buckley's split-half test); a golden set whose halves order the runs differently cannot be trusted to."""

from __future__ import annotations

import numpy as np

from eval_core.reliability.discrimination import run_pairs


def half_masks(n_queries: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples × queries) booleans, each row a random half (⌊n/2⌋ queries) of the queries; seeded."""
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((resamples, n_queries)), axis=1)
    masks = np.zeros((resamples, n_queries), dtype=bool)
    np.put_along_axis(masks, order[:, : n_queries // 2], True, axis=1)
    return masks


def split_half_taus(scores: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between the runs' mean on each mask's queries and on the other queries, one per mask
    (NaN where a half ranks every run equal)."""
    weights = masks.astype(np.float64)
    first = weights @ scores.T / weights.sum(1, keepdims=True)
    second = (1 - weights) @ scores.T / (1 - weights).sum(1, keepdims=True)
    i, j = run_pairs(scores.shape[0])
    sa, sb = np.sign(first[:, i] - first[:, j]), np.sign(second[:, i] - second[:, j])
    num = (sa * sb).sum(1)
    den = np.sqrt((sa != 0).sum(1) * (sb != 0).sum(1).astype(np.float64))
    return np.divide(num, den, out=np.full(len(num), np.nan), where=den > 0)

"""Topic set size design (Sakai): how many queries a two-sided paired t-test needs to detect a difference δ
with power 1 − β at level α, and the smallest δ the current queries detect — from one variance estimate."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

MAX_QUERIES = 10**7  # the search bound for a topic set size; a larger need is reported as beyond it


def t_test_power(effect_size: float, n: float, alpha: float) -> float:
    """Power of the two-sided one-sample (paired) t-test with n observations for a standardised effect δ/σ:
    P(|T| > t_{1−α/2, n−1}) with T noncentral t (n − 1 df, noncentrality δ/σ·√n); both tails, as statsmodels'
    TTestPower computes it."""
    df = n - 1
    crit = stats.t.isf(alpha / 2, df)
    nc = effect_size * math.sqrt(n)
    upper, lower = float(stats.nct.sf(crit, df, nc)), float(stats.nct.cdf(-crit, df, nc))
    # scipy's noncentral t gives NaN far in a tail, where that tail is below print precision
    return (1.0 if math.isnan(upper) else upper) + (0.0 if math.isnan(lower) else lower)


def topic_set_size(delta: float, variance: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The (fractional) number of queries at which the paired t-test reaches `power` for a true mean
    difference `delta` when per-query differences have `variance`; round it up for a count. `inf` when even
    MAX_QUERIES do not suffice; 2 is the least a t-test can use."""
    _check(alpha, power)
    if delta <= 0:
        raise ValueError(f"delta must be positive, got {delta}")
    if variance <= 0:
        return 2.0
    effect = delta / math.sqrt(variance)
    if t_test_power(effect, 2, alpha) >= power:
        return 2.0
    z = stats.norm.isf(alpha / 2) + stats.norm.isf(1 - power)
    low, high = 2.0, max(4.0, (z / effect) ** 2 + 4)  # the normal approximation, a little above the answer
    while t_test_power(effect, high, alpha) < power:
        if high >= MAX_QUERIES:
            return math.inf
        low, high = high, min(2 * high, MAX_QUERIES)
    return float(optimize.brentq(lambda n: t_test_power(effect, n, alpha) - power, low, high, xtol=1e-10, rtol=1e-12))


def minimum_detectable_difference(n: int, variance: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true mean difference the paired t-test on n queries detects with `power` (0 for no
    variance; `inf` for fewer than 2 queries)."""
    _check(alpha, power)
    if n < 2:
        return math.inf
    if variance <= 0:
        return 0.0
    high = 1.0
    while t_test_power(high, n, alpha) < power:
        high *= 2
    effect = optimize.brentq(lambda d: t_test_power(d, n, alpha) - power, 0.0, high, xtol=1e-12, rtol=1e-12)
    return float(effect * math.sqrt(variance))


def residual_variance(scores: np.ndarray) -> float:
    """The residual mean square of the two-way ANOVA without replication over runs × queries (Sakai's V_E):
    Σ (x_ij − x̄_i· − x̄_·j + x̄··)² / ((runs − 1)(queries − 1)). NaN with fewer than 2 runs or queries."""
    m, n = scores.shape
    if m < 2 or n < 2:
        return math.nan
    resid = scores - scores.mean(1, keepdims=True) - scores.mean(0, keepdims=True) + scores.mean()
    return float((resid**2).sum() / ((m - 1) * (n - 1)))


def _check(alpha: float, power: float) -> None:
    """ValueError for an α or a power outside (0, 1)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    if not 0 < power < 1:
        raise ValueError(f"power must be between 0 and 1, got {power}")

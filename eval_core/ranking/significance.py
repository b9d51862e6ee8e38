"""Paired significance tests between runs on the same queries: did the change help, or is it noise?"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from eval_core.io.formats import read_qrels
from eval_core.ranking.evaluation import evaluate
from eval_core.ranking.paired_tests import TEST_NAMES, TESTS

# Per-query differences this small are float noise (1/3 summed two ways), not a changed query.
UNCHANGED_TOL = 1e-12
# Rows of sign flips (or resamples) generated at once: bounds memory at ~32 MB per batch.
_BATCH_CELLS = 4_000_000


def randomization_test(diff: np.ndarray, n_permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided sign-flip p-value of the mean paired difference, (hits + 1) / (permutations + 1)."""
    d = np.asarray(diff, dtype=np.float64)
    n = d.size
    if n == 0:
        return 1.0
    total = float(d.sum())
    observed = abs(total)
    tol = UNCHANGED_TOL * max(1.0, float(np.abs(d).sum()))
    rng = np.random.default_rng(seed)
    rows = max(1, _BATCH_CELLS // n)
    hits = 0
    done = 0
    while done < n_permutations:
        b = min(rows, n_permutations - done)
        # One random bit per query (drawn a byte at a time): kept (+1) or flipped (−1); Σ±d = 2·Σkept − Σd.
        kept = np.unpackbits(rng.integers(0, 256, size=(b, (n + 7) // 8), dtype=np.uint8), axis=1, count=n)
        hits += int(np.count_nonzero(np.abs(2.0 * (kept @ d) - total) >= observed - tol))
        done += b
    return (hits + 1) / (n_permutations + 1)


def paired_t_test(a: np.ndarray, b: np.ndarray) -> float:
    """scipy's paired t-test p-value; 1.0 when the runs agree on every query (scipy would say NaN)."""
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if not np.any(np.abs(d) > UNCHANGED_TOL):
        return 1.0
    from scipy import stats  # here: ≈ 0.6 s CPU of start-up that the default (randomization) test never needs

    return float(stats.ttest_rel(b, a).pvalue)


def wilcoxon_test(a: np.ndarray, b: np.ndarray) -> float:
    """scipy's Wilcoxon signed-rank p-value; zero differences are dropped (zero_method="wilcox")."""
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    d = np.where(np.abs(d) > UNCHANGED_TOL, d, 0.0)
    if not np.any(d):
        return 1.0
    from scipy import stats

    return float(stats.wilcoxon(d, zero_method="wilcox").pvalue)


def bootstrap_ci(diff: np.ndarray, n_bootstrap: int = 10_000, confidence: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean difference, resampling queries with replacement."""
    d = np.asarray(diff, dtype=np.float64)
    n = d.size
    if n == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    rows = max(1, _BATCH_CELLS // n)
    means = np.empty(n_bootstrap)
    for start in range(0, n_bootstrap, rows):
        b = min(rows, n_bootstrap - start)
        means[start:start + b] = d[rng.integers(0, n, size=(b, n), dtype=np.int32)].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return (float(low), float(high))


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (same as statsmodels multipletests(method="holm"))."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def change_counts(diff: np.ndarray) -> tuple[int, int, int]:
    """Queries improved, worsened and unchanged (|difference| <= UNCHANGED_TOL counts as unchanged)."""
    d = np.asarray(diff, dtype=np.float64)
    better = int(np.count_nonzero(d > UNCHANGED_TOL))
    worse = int(np.count_nonzero(d < -UNCHANGED_TOL))
    return better, worse, d.size - better - worse


def format_p(p: float) -> str:
    """p-value as people quote it: three decimals, or "< 0.001"."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def run_names(runs: Sequence[Any] | Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(name, run) pairs: mapping keys, file names, or run1, run2… for in-memory runs; names made unique."""
    if isinstance(runs, Mapping):
        return [(str(name), run) for name, run in runs.items()]
    named: list[tuple[str, Any]] = []
    seen: dict[str, int] = {}
    for i, run in enumerate(runs, start=1):
        name = Path(run).name if isinstance(run, str | Path) else f"run{i}"
        seen[name] = seen.get(name, 0) + 1
        named.append((name if seen[name] == 1 else f"{name}#{seen[name]}", run))
    return named


def compare_scores(scores: Mapping[str, pd.DataFrame], metrics: Sequence[str], test: str = "randomization", *,
                   baseline: str | None = None, alpha: float = 0.05, confidence: float = 0.95,
                   n_permutations: int = 10_000, n_bootstrap: int = 10_000, seed: int = 0) -> Comparison:
    """Paired tests on per-query tables (run name → DataFrame indexed by query, a column per metric).

    Pairs are every run against every later run, or each run against `baseline` when given; with more
    than one pair, Holm's correction is applied per metric across that metric's pairs.
    """
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}: expected one of {', '.join(TESTS)}")
    names = list(scores)
    if len(names) < 2:
        raise ValueError("compare needs at least two runs")
    if baseline is not None and baseline not in scores:
        raise ValueError(f"baseline {baseline!r} is not one of the runs: {', '.join(names)}")
    warnings: list[str] = []
    for metric in metrics:
        lacking = [n for n in names if metric not in scores[n].columns]
        if lacking:
            raise ValueError(f"metric {metric!r} was not computed for run(s) {', '.join(lacking)}")
    queries = scores[names[0]].index
    for name in names[1:]:
        if not scores[name].index.equals(queries):
            queries = queries.union(scores[name].index)
            warnings.append(f"runs were scored on different query sets; {name} scores 0 on queries it lacks")
    table = {n: scores[n].reindex(queries).fillna(0.0) for n in names}
    if baseline is None:
        pairs = list(itertools.combinations(names, 2))
    else:
        pairs = [(baseline, n) for n in names if n != baseline]
    correction = "holm" if len(pairs) > 1 else "none"
    results: list[PairComparison] = []
    for metric in metrics:
        found = []
        for a_name, b_name in pairs:
            a = table[a_name][metric].to_numpy(dtype=np.float64)
            b = table[b_name][metric].to_numpy(dtype=np.float64)
            d = b - a
            if test == "randomization":
                p = randomization_test(d, n_permutations, seed)
            elif test == "t":
                p = paired_t_test(a, b)
            else:
                p = wilcoxon_test(a, b)
            low, high = bootstrap_ci(d, n_bootstrap, confidence, seed)
            better, worse, same = change_counts(d)
            found.append(PairComparison(
                metric=metric, run_a=a_name, run_b=b_name, mean_a=float(a.mean()) if a.size else 0.0,
                mean_b=float(b.mean()) if b.size else 0.0, diff=float(d.mean()) if d.size else 0.0,
                ci_low=low, ci_high=high, confidence=confidence, test=test, p_value=p, p_adjusted=None,
                alpha=alpha, n_queries=int(d.size), better=better, worse=worse, unchanged=same))
        if correction == "holm":
            for result, adjusted in zip(found, holm([r.p_value for r in found]), strict=True):
                result.p_adjusted = float(adjusted)
        results.extend(found)
    if len(queries) < 2:
        warnings.append(f"only {len(queries)} quer{'y' if len(queries) == 1 else 'ies'}: no test can detect a difference")
    means = {n: {m: float(table[n][m].mean()) if len(queries) else 0.0 for m in metrics} for n in names}
    return Comparison(runs=names, metrics=list(metrics), test=test, alpha=alpha, baseline=baseline,
                      correction=correction, n_queries=len(queries), means=means, pairs=results,
                      warnings=warnings)


def compare(qrels: Any, runs: Sequence[Any] | Mapping[str, Any], metrics: Sequence[str] = ("ndcg@10",),
            test: str = "randomization", *, baseline: str | None = None, alpha: float = 0.05,
            confidence: float = 0.95, n_permutations: int = 10_000, n_bootstrap: int = 10_000, seed: int = 0,
            rel_level: int | None = None, scale: tuple[int, int] | None = None,
            progress: bool = False) -> Comparison:
    """Evaluate two or more runs (files, DataFrames or dicts; a list or a name → run mapping) and test each pair.

    Every run is scored on the same qrels queries (missing ones score 0, as trec_eval -c); `rel_level` and
    `scale` as for `evaluate`; see `compare_scores` for the pairs and the correction.
    """
    named = run_names(runs)
    if len(named) < 2:
        raise ValueError("compare needs at least two runs")
    qdf = read_qrels(qrels)
    scores: dict[str, pd.DataFrame] = {}
    warnings: list[str] = []
    for name, run in tqdm(named, desc="evaluating", unit="run", file=sys.stderr, disable=not progress):
        ev = evaluate(qdf, run, metrics=list(metrics), rel_level=rel_level, name=name, scale=scale)
        scores[name] = ev.per_query
        warnings += [f"{name}: {w}" for w in ev.warnings]
    columns = list(scores[named[0][0]].columns)  # metric names as expanded by evaluate (ndcg@k → ndcg@1 …)
    result = compare_scores(scores, columns, test, baseline=baseline, alpha=alpha,
                            confidence=confidence, n_permutations=n_permutations, n_bootstrap=n_bootstrap,
                            seed=seed)
    result.warnings = warnings + result.warnings
    return result


@dataclass
class PairComparison:
    """One metric, one pair of runs: means, the difference with its CI, the test and the counts."""

    metric: str
    run_a: str
    run_b: str
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    confidence: float
    test: str
    p_value: float
    p_adjusted: float | None
    alpha: float
    n_queries: int
    better: int
    worse: int
    unchanged: int

    @property
    def p_decisive(self) -> float:
        """The p-value the decision uses: Holm-adjusted when a correction applied."""
        return self.p_value if self.p_adjusted is None else self.p_adjusted

    @property
    def significant(self) -> bool:
        """True when the (corrected) p-value is below alpha."""
        return self.p_decisive < self.alpha

    def sentence(self) -> str:
        """The result as a person would say it, honest when the difference is not significant."""
        conf = f"{round(self.confidence * 100):d}% CI"
        p_text = format_p(self.p_value)
        if self.p_adjusted is not None:
            p_text += f", Holm-adjusted {format_p(self.p_adjusted).removeprefix('p ')}"
        if not self.significant:
            changed = self.better + self.worse
            return (f"No significant difference between {self.run_b} and {self.run_a} on {self.metric}: "
                    f"{self.run_b} − {self.run_a} = {self.diff:+.3f} ({conf} [{self.ci_low:.3f}, "
                    f"{self.ci_high:.3f}], {p_text}; {self.better} queries better, {self.worse} worse, "
                    f"{self.unchanged} unchanged). {changed} of {self.n_queries} queries changed; "
                    f"at alpha = {self.alpha:g} this difference cannot be told apart from noise.")
        if self.diff >= 0:
            win, lose, diff, low, high, better, worse = (self.run_b, self.run_a, self.diff, self.ci_low,
                                                         self.ci_high, self.better, self.worse)
        else:
            win, lose, diff, low, high, better, worse = (self.run_a, self.run_b, -self.diff, -self.ci_high,
                                                         -self.ci_low, self.worse, self.better)
        tail = f", {self.unchanged} unchanged" if self.unchanged else ""
        return (f"{win} beats {lose} on {self.metric} by {diff:+.3f} ({conf} [{low:.3f}, {high:.3f}], "
                f"{p_text}; {better} queries better, {worse} worse{tail})")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, with the decision and the sentence."""
        return {**asdict(self), "significant": self.significant, "sentence": self.sentence()}


@dataclass
class Comparison:
    """Every pair × metric result of one compare() call, with how the pairs and correction were chosen."""

    runs: list[str]
    metrics: list[str]
    test: str
    alpha: float
    baseline: str | None
    correction: str
    n_queries: int
    means: dict[str, dict[str, float]]
    pairs: list[PairComparison]
    warnings: list[str] = field(default_factory=list)

    def sentences(self) -> list[str]:
        """One readable sentence per pair and metric."""
        return [p.sentence() for p in self.pairs]

    def to_frame(self) -> pd.DataFrame:
        """One row per pair and metric, for tables and CSV."""
        return pd.DataFrame([{k: v for k, v in p.to_dict().items() if k != "sentence"} for p in self.pairs])

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for the CLI, the app and the store."""
        return {"runs": self.runs, "metrics": self.metrics, "test": self.test, "test_name": TEST_NAMES[self.test],
                "alpha": self.alpha, "baseline": self.baseline, "correction": self.correction,
                "n_queries": self.n_queries, "means": self.means,
                "pairs": [p.to_dict() for p in self.pairs], "warnings": self.warnings}

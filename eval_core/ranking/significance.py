"""Paired significance tests between runs on the same queries: did the change help, or is it noise?"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval_core.io.formats import qrels_scale, read_qrels
from eval_core.progress import bar as progress_bar
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


def bootstrap_ci(
    diff: np.ndarray, n_bootstrap: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
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
        means[start : start + b] = d[rng.integers(0, n, size=(b, n), dtype=np.int32)].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return (float(low), float(high))


@dataclass(frozen=True)
class Interval:
    """A confidence interval of the difference, said with what it estimates and how it was made."""

    low: float
    high: float
    method: str  # "t", "hodges-lehmann exact", "hodges-lehmann normal", "bootstrap percentile"
    estimate: float  # the point it is centred on: the mean difference, or the Hodges–Lehmann shift
    note: str = ""  # why it may disagree with the test, or the confidence it actually reaches


BOOTSTRAP_NOTE = (
    "a percentile bootstrap interval of the mean difference over queries, not derived from the "
    "randomization test: the two can disagree, most on few queries, where the bootstrap is too "
    "narrow (it never sees a difference the queries do not show)"
)
# Exact signed-rank distribution up to this many non-zero differences without ties (as scipy's wilcoxon).
EXACT_SIGNED_RANK = 50


def t_interval(diff: np.ndarray, confidence: float = 0.95) -> Interval:
    """The paired t-test's interval: mean ± t(n−1) · sd / √n (scipy.stats.t.interval)."""
    d = np.asarray(diff, dtype=np.float64)
    mean = float(d.mean()) if d.size else 0.0
    if d.size < 2:
        return Interval(
            mean,
            mean,
            "t",
            mean,
            f"undefined on {d.size} quer{'y' if d.size == 1 else 'ies'}: the t interval needs two",
        )
    from scipy import stats

    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return Interval(mean, mean, "t", mean, "every query moved by the same amount: zero-width")
    half = float(stats.t.ppf(0.5 + confidence / 2.0, d.size - 1)) * sd / np.sqrt(d.size)
    return Interval(mean - half, mean + half, "t", mean)


def signed_rank_counts(n: int) -> np.ndarray:
    """How many of the 2^n sign patterns give each signed-rank sum T+ = 0 … n(n+1)/2 (no ties)."""
    counts = np.zeros(n * (n + 1) // 2 + 1, dtype=np.float64)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return counts


def hodges_lehmann(diff: np.ndarray, confidence: float = 0.95) -> Interval:
    """The Wilcoxon signed-rank test's interval: Walsh averages (d_i + d_j)/2, i ≤ j, of the non-zero
    differences sorted; estimate their median; interval [W_(k), W_(M+1−k)] with k the test's critical count
    (exact signed-rank distribution up to EXACT_SIGNED_RANK differences without ties, else the normal
    approximation). When no k reaches `confidence` (too few queries), the widest interval and the confidence
    it does reach."""
    d = np.asarray(diff, dtype=np.float64)
    d = d[np.abs(d) > UNCHANGED_TOL]
    n = d.size
    if n == 0:
        return Interval(0.0, 0.0, "hodges-lehmann exact", 0.0, "no query changed")
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2.0)
    m = walsh.size
    tail = (1.0 - confidence) / 2.0
    ties = np.unique(np.abs(d)).size < n
    if n <= EXACT_SIGNED_RANK and not ties:
        cdf = np.cumsum(signed_rank_counts(n)) / 2.0**n
        k = int(np.searchsorted(cdf, tail + 1e-12, side="right"))  # P(T+ ≤ k−1) ≤ tail
        method = "hodges-lehmann exact"
    else:
        from scipy import stats

        sd = np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        k = int(np.floor(m / 2.0 - float(stats.norm.ppf(1.0 - tail)) * sd))
        method = "hodges-lehmann normal"
    estimate = float(np.median(walsh))
    if k < 1:
        reached = 1.0 - 2.0 / 2.0**n
        return Interval(
            float(walsh[0]),
            float(walsh[-1]),
            method,
            estimate,
            f"{n} changed queries cannot give a {confidence:.0%} interval: the widest one, all "
            f"Walsh averages, covers {reached:.1%}",
        )
    return Interval(float(walsh[k - 1]), float(walsh[m - k]), method, estimate)


def min_p_value(test: str, diff: np.ndarray, n_permutations: int = 10_000) -> float | None:
    """The smallest p the test can give on these differences, or None when it has no floor: a sign-flip
    randomization test (and the exact Wilcoxon test) on n changed queries cannot go below 2/2^n, since only
    the observed signs and their mirror are as extreme; a Monte Carlo estimate not below 1/(permutations+1).
    The t-test has no floor (with two or more queries)."""
    d = np.asarray(diff, dtype=np.float64)
    n = int(np.count_nonzero(np.abs(d) > UNCHANGED_TOL))
    if test == "randomization":
        return max(2.0 / 2.0**n, 1.0 / (n_permutations + 1)) if n < 1024 else 1.0 / (n_permutations + 1)
    if test == "wilcoxon":
        ties = np.unique(np.abs(d[np.abs(d) > UNCHANGED_TOL])).size < n
        return 2.0 / 2.0**n if n <= EXACT_SIGNED_RANK and not ties else None
    return None if d.size >= 2 else 1.0


def _interval(test: str, diff: np.ndarray, n_bootstrap: int, confidence: float, seed: int) -> Interval:
    """The interval that belongs to the test: t for the t-test, Hodges–Lehmann for Wilcoxon, and for the
    randomization test a bootstrap interval named as one (see BOOTSTRAP_NOTE)."""
    if test == "t":
        return t_interval(diff, confidence)
    if test == "wilcoxon":
        return hodges_lehmann(diff, confidence)
    low, high = bootstrap_ci(diff, n_bootstrap, confidence, seed)
    return Interval(low, high, "bootstrap percentile", float(np.mean(diff)) if len(diff) else 0.0, BOOTSTRAP_NOTE)


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


def compare_scores(
    scores: Mapping[str, pd.DataFrame],
    metrics: Sequence[str],
    test: str = "randomization",
    *,
    baseline: str | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_permutations: int = 10_000,
    n_bootstrap: int = 10_000,
    seed: int = 0,
) -> Comparison:
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
            interval = _interval(test, d, n_bootstrap, confidence, seed)
            better, worse, same = change_counts(d)
            found.append(
                PairComparison(
                    metric=metric,
                    run_a=a_name,
                    run_b=b_name,
                    mean_a=float(a.mean()) if a.size else 0.0,
                    mean_b=float(b.mean()) if b.size else 0.0,
                    diff=float(d.mean()) if d.size else 0.0,
                    ci_low=interval.low,
                    ci_high=interval.high,
                    confidence=confidence,
                    test=test,
                    p_value=p,
                    p_adjusted=None,
                    alpha=alpha,
                    n_queries=int(d.size),
                    better=better,
                    worse=worse,
                    unchanged=same,
                    ci_method=interval.method,
                    ci_estimate=interval.estimate,
                    ci_note=interval.note,
                    min_p=min_p_value(test, d, n_permutations),
                )
            )
        if correction == "holm":
            for result, adjusted in zip(found, holm([r.p_value for r in found]), strict=True):
                result.p_adjusted = float(adjusted)
        results.extend(found)
    if len(queries) < 2:
        warnings.append(
            f"only {len(queries)} quer{'y' if len(queries) == 1 else 'ies'}: no test can detect a difference"
        )
    unreachable = [r for r in results if r.min_p is not None and r.min_p >= alpha]
    if unreachable:
        worst = max(unreachable, key=lambda r: r.min_p or 0.0)
        warnings.append(
            f"too few queries to reach alpha = {alpha:g}: with {worst.changed} changed quer"
            f"{'y' if worst.changed == 1 else 'ies'} the {TEST_NAMES[test]} cannot go below "
            f"p = {worst.min_p:.4f} ({len(unreachable)} of {len(results)} comparison(s)); "
            "no difference can be significant here"
        )
    means = {n: {m: float(table[n][m].mean()) if len(queries) else 0.0 for m in metrics} for n in names}
    return Comparison(
        runs=names,
        metrics=list(metrics),
        test=test,
        alpha=alpha,
        baseline=baseline,
        correction=correction,
        n_queries=len(queries),
        means=means,
        pairs=results,
        warnings=warnings,
    )


def compare(
    qrels: Any,
    runs: Sequence[Any] | Mapping[str, Any],
    metrics: Sequence[str] = ("ndcg@10",),
    test: str = "randomization",
    *,
    baseline: str | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_permutations: int = 10_000,
    n_bootstrap: int = 10_000,
    seed: int = 0,
    rel_level: int | None = None,
    scale: tuple[int, int] | None = None,
    progress: bool = False,
    missing: str = "zero",
    trec_eval_version: int = 10,
) -> Comparison:
    """Evaluate two or more runs (files, DataFrames or dicts; a list or a name → run mapping) and test each pair.

    Every run is scored on the same qrels queries (missing ones score 0, as trec_eval -c); `rel_level` and
    `scale` as for `evaluate`; see `compare_scores` for the pairs and the correction. `missing` and
    `trec_eval_version` as for `evaluate`: with `skip` the runs are compared on the queries all of them have.
    """
    named = run_names(runs)
    if len(named) < 2:
        raise ValueError("compare needs at least two runs")
    scale = qrels_scale(qrels, scale)  # a release's JSONL/CSV names its scale
    qdf = read_qrels(qrels)
    scores: dict[str, pd.DataFrame] = {}
    warnings: list[str] = []
    for name, run in progress_bar(named, desc="evaluating", unit="run", show=progress):
        ev = evaluate(
            qdf,
            run,
            metrics=list(metrics),
            rel_level=rel_level,
            name=name,
            scale=scale,
            missing=missing,
            trec_eval_version=trec_eval_version,
        )
        scores[name] = ev.per_query
        warnings += [f"{name}: {w}" for w in ev.warnings]
    if ev.missing == "skip":
        common = scores[named[0][0]].index
        for frame in scores.values():
            common = common.intersection(frame.index, sort=False)
        if any(len(frame) != len(common) for frame in scores.values()):
            warnings.append(f"--missing skip: the runs are compared on the {len(common)} queries every run has")
        scores = {n: frame.loc[common] for n, frame in scores.items()}
    columns = list(scores[named[0][0]].columns)  # metric names as expanded by evaluate (ndcg@k → ndcg@1 …)
    result = compare_scores(
        scores,
        columns,
        test,
        baseline=baseline,
        alpha=alpha,
        confidence=confidence,
        n_permutations=n_permutations,
        n_bootstrap=n_bootstrap,
        seed=seed,
    )
    result.warnings = warnings + result.warnings
    result.missing, result.trec_eval_version = str(ev.missing), ev.trec_eval_version
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
    ci_method: str = "bootstrap percentile"
    ci_estimate: float | None = None
    ci_note: str = ""
    min_p: float | None = None

    @property
    def changed(self) -> int:
        """Queries whose value moved."""
        return self.better + self.worse

    @property
    def ci_text(self) -> str:
        """The interval as printed: confidence, what kind, bounds (and the Hodges–Lehmann shift it is
        centred on, which is not the mean difference)."""
        conf = f"{round(self.confidence * 100):d}% CI"
        kind = {"t": "t", "bootstrap percentile": "bootstrap"}.get(self.ci_method, "Hodges–Lehmann")
        text = f"{conf} ({kind}) [{self.ci_low:.3f}, {self.ci_high:.3f}]"
        if self.ci_method.startswith("hodges-lehmann") and self.ci_estimate is not None:
            text = f"Hodges–Lehmann shift {self.ci_estimate:+.3f}, {text}"
        return text

    def caveats(self) -> list[str]:
        """What the reader must know beside the verdict: the interval disagreeing with the test (and why), an
        interval that cannot reach its confidence, a query set too small to reach alpha."""
        out = []
        excludes_zero = self.ci_low > 0 or self.ci_high < 0
        if excludes_zero != self.significant and self.changed:
            why = {"bootstrap percentile": BOOTSTRAP_NOTE}.get(self.ci_method, "")
            if not why and self.p_adjusted is not None:
                why = "the interval is not adjusted for the Holm correction, the p-value is"
            elif not why and self.ci_method.startswith("hodges-lehmann"):
                why = (
                    "the interval is for the Hodges–Lehmann shift; the p-value comes from scipy's test, "
                    "which may use another approximation"
                )
            elif not why:
                why = "the interval and the test use different approximations"
            out.append(
                f"the interval {'excludes' if excludes_zero else 'includes'} 0 although the test "
                f"{'does not reject' if excludes_zero else 'rejects'}: {why}"
            )
        if self.ci_note and self.ci_method != "bootstrap percentile":
            out.append(self.ci_note)
        if self.min_p is not None and self.min_p >= self.alpha:
            out.append(
                f"with {self.changed} changed quer{'y' if self.changed == 1 else 'ies'} this test cannot "
                f"go below p = {self.min_p:.4f}, so alpha = {self.alpha:g} is out of reach"
            )
        return out

    @property
    def p_decisive(self) -> float:
        """The p-value the decision uses: Holm-adjusted when a correction applied."""
        return self.p_value if self.p_adjusted is None else self.p_adjusted

    @property
    def significant(self) -> bool:
        """True when the (corrected) p-value is below alpha."""
        return self.p_decisive < self.alpha

    def sentence(self) -> str:
        """The result as a person would say it, honest when the difference is not significant, with the
        interval of the test's own kind and every caveat."""
        p_text = format_p(self.p_value)
        if self.p_adjusted is not None:
            p_text += f", Holm-adjusted {format_p(self.p_adjusted).removeprefix('p ')}"
        caveats = "".join(f" Note: {c}." for c in self.caveats())
        if not self.significant:
            return (
                f"No significant difference between {self.run_b} and {self.run_a} on {self.metric}: "
                f"{self.run_b} − {self.run_a} = {self.diff:+.3f} ({self.ci_text}, {p_text}; {self.better} "
                f"queries better, {self.worse} worse, {self.unchanged} unchanged). {self.changed} of "
                f"{self.n_queries} queries changed; at alpha = {self.alpha:g} this difference cannot be "
                f"told apart from noise.{caveats}"
            )
        win, lose, diff, better, worse = (
            (self.run_b, self.run_a, self.diff, self.better, self.worse)
            if self.diff >= 0
            else (self.run_a, self.run_b, -self.diff, self.worse, self.better)
        )
        tail = f", {self.unchanged} unchanged" if self.unchanged else ""
        return (
            f"{win} beats {lose} on {self.metric} by {diff:+.3f} ({self.run_b} − {self.run_a}: "
            f"{self.ci_text}, {p_text}; {better} queries better, {worse} worse{tail}).{caveats}"
        )

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
    missing: str = "zero"  # how qrels queries a run lacks were averaged (evaluate's `missing`)
    trec_eval_version: int = 10  # whose ranking rules (evaluate's `trec_eval_version`)

    def sentences(self) -> list[str]:
        """One readable sentence per pair and metric."""
        return [p.sentence() for p in self.pairs]

    def to_frame(self) -> pd.DataFrame:
        """One row per pair and metric, for tables and CSV."""
        return pd.DataFrame([{k: v for k, v in p.to_dict().items() if k != "sentence"} for p in self.pairs])

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for the CLI, the app and the store."""
        return {
            "runs": self.runs,
            "metrics": self.metrics,
            "test": self.test,
            "test_name": TEST_NAMES[self.test],
            "alpha": self.alpha,
            "baseline": self.baseline,
            "correction": self.correction,
            "n_queries": self.n_queries,
            "missing": self.missing,
            "trec_eval_version": self.trec_eval_version,
            "means": self.means,
            "pairs": [p.to_dict() for p in self.pairs],
            "warnings": self.warnings,
        }

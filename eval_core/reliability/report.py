"""`reliability()`: is a golden set good enough to decide with? Per metric, from the runs' per-query scores:
the topic set size for δ, the smallest difference the queries detect, discriminative power with the ASL of
every run pair, split-half ranking stability, and the pool bias an unpooled run may suffer."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval_core.io.formats import qrels_scale, read_qrels, read_run
from eval_core.ranking.evaluation import evaluate
from eval_core.ranking.metrics import parse_metrics
from eval_core.reliability.discrimination import Correction, achieved_significance, run_pairs
from eval_core.reliability.pool_bias import Pairs, PoolBias, leave_one_run_out, top_pairs
from eval_core.reliability.power import minimum_detectable_difference, residual_variance, topic_set_size
from eval_core.reliability.stability import half_masks, split_half_taus

DEFAULT_METRIC = "ndcg@10"
ANOVA_VARIANCE = "2 × residual variance of the two-way ANOVA (runs × queries)"
PAIR_VARIANCE = "variance of the per-query differences of the two runs"


@dataclass(frozen=True)
class Settings:
    """What was asked: δ to detect, α, the power 1 − β, the correction, resamples and seed."""

    delta: float = 0.02
    alpha: float = 0.05
    power: float = 0.8
    correction: Correction = Correction.TUKEY_HSD
    resamples: int = 1000
    seed: int = 0
    judged_k: int = 10

    def __post_init__(self) -> None:
        """Accept the correction by name ('holm'), and refuse resamples that cannot estimate anything."""
        object.__setattr__(self, "correction", Correction(self.correction))
        if self.resamples < 1:
            raise ValueError(f"resamples must be at least 1, got {self.resamples}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "delta": self.delta,
            "alpha": self.alpha,
            "power": self.power,
            "correction": str(self.correction),
            "resamples": self.resamples,
            "seed": self.seed,
            "judged_k": self.judged_k,
        }


@dataclass(frozen=True)
class PairAsl:
    """One pair of runs: their mean difference and its achieved significance level after the correction."""

    a: str
    b: str
    difference: float
    asl: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {"a": self.a, "b": self.b, "difference": self.difference, "asl": self.asl}


@dataclass(frozen=True)
class MetricReliability:
    """Everything reliability says about one metric over the runs and queries."""

    metric: str
    n_queries: int
    means: dict[str, float]
    query_variance: dict[str, float]  # each run's variance of its per-query scores (ddof 1)
    variance: float  # the variance of a per-query difference the sizes come from
    variance_source: str  # which estimate `variance` is
    topic_set_size: float  # queries needed for δ (fractional; inf if beyond reach)
    detectable: float  # the smallest difference the current queries detect
    pairs: list[PairAsl]
    tau: np.ndarray = field(repr=False)  # split-half τ per resample (NaN where a half ties every run)
    pool_bias: list[PoolBias]
    judged: dict[str, float]  # judged@k per run
    alpha: float  # the level a pair's ASL is compared with

    @property
    def needed(self) -> int | None:
        """The topic set size as a count of queries (None when no finite number suffices)."""
        return None if math.isinf(self.topic_set_size) else math.ceil(self.topic_set_size - 1e-9)

    @property
    def discriminative_power(self) -> float | None:
        """Share of run pairs significantly different (ASL < α) — None with fewer than 2 runs."""
        return None if not self.pairs else self.significant / len(self.pairs)

    @property
    def significant(self) -> int:
        """How many run pairs are significantly different."""
        return sum(p.asl < self.alpha for p in self.pairs)

    @property
    def tau_summary(self) -> dict[str, float | None]:
        """Mean, standard deviation and 5th/95th percentiles of the split-half τ."""
        taus = self.tau[~np.isnan(self.tau)]
        if not len(taus):
            return {"mean": None, "sd": None, "p5": None, "p95": None}
        return {
            "mean": float(taus.mean()),
            "sd": float(taus.std(ddof=1)) if len(taus) > 1 else 0.0,
            "p5": float(np.percentile(taus, 5)),
            "p95": float(np.percentile(taus, 95)),
        }

    @property
    def underrating(self) -> PoolBias | None:
        """The pooled run that loses most without its own pairs (the expected underrating of a new run)."""
        return max(self.pool_bias, key=lambda b: b.drop, default=None)

    def asl_curve(self) -> pd.DataFrame:
        """Pairs sorted by ASL (rank 1 = most significant): the curve Sakai plots to compare metrics."""
        rows = sorted(self.pairs, key=lambda p: p.asl)
        return pd.DataFrame(
            {"rank": range(1, len(rows) + 1), "pair": [f"{p.a} – {p.b}" for p in rows], "asl": [p.asl for p in rows]}
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (infinite sizes as null)."""
        worst = self.underrating
        return {
            "metric": self.metric,
            "queries": self.n_queries,
            "means": self.means,
            "query_variance": self.query_variance,
            "variance": self.variance,
            "variance_source": self.variance_source,
            "topic_set_size": None if math.isinf(self.topic_set_size) else self.topic_set_size,
            "needed": self.needed,
            "detectable": None if math.isinf(self.detectable) else self.detectable,
            "discriminative_power": self.discriminative_power,
            "significant_pairs": self.significant,
            "pairs": [p.to_dict() for p in self.pairs],
            "split_half_tau": self.tau_summary,
            "pool_bias": [b.to_dict() for b in self.pool_bias],
            "max_drop": None if worst is None else worst.drop,
            "judged": self.judged,
        }


@dataclass(frozen=True)
class ReliabilityReport:
    """The reliability of one golden set (a release or qrels file) against a set of runs."""

    runs: list[str]
    settings: Settings
    metrics: list[MetricReliability]
    pooled: list[str]  # runs whose contributions the pool bias could be measured for
    notes: list[str] = field(default_factory=list)
    source: str = "qrels"  # what was measured: a qrels file's name, or a release

    def sentence(self, which: int = 0) -> str:
        """One metric's verdict in words (the first metric's by default): what the queries detect, what δ needs,
        and how much an unpooled run may be underrated."""
        return sentence(self.metrics[which], self.settings)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for `qrelkit reliability --format json`."""
        return {
            "source": self.source,
            "runs": self.runs,
            "settings": self.settings.to_dict(),
            "pooled": self.pooled,
            "metrics": [m.to_dict() | {"sentence": sentence(m, self.settings)} for m in self.metrics],
            "notes": list(self.notes),
        }


def _number(x: float) -> str:
    """A difference as the sentence prints it: three decimals without trailing zeros (0.05, 0.013)."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


def sentence(m: MetricReliability, s: Settings) -> str:
    """E.g. "40 queries detect 0.05 ndcg@10 with power 0.8; 0.02 needs about 210. Runs lose up to 0.013 when
    their own pairs are left out: an unpooled run may be underrated by that much." """
    if m.n_queries < 2 or math.isnan(m.variance):
        queries = "1 query" if m.n_queries == 1 else f"{m.n_queries} queries"
        first = f"{queries} and {len(m.means)} run(s) are too few to size a paired t-test for {m.metric}."
    else:
        needed = "more queries than can be counted" if m.needed is None else f"about {m.needed}"
        verdict = (
            f"{_number(s.delta)} needs {needed}"
            if m.needed is None or m.needed > m.n_queries
            else f"{_number(s.delta)} needs only {m.needed}"
        )
        first = f"{m.n_queries} queries detect {_number(m.detectable)} {m.metric} with power {s.power:g}; {verdict}."
    worst = m.underrating
    if worst is None:
        return first
    if worst.drop <= 0:
        return first + " No pooled run loses anything when its own pairs are left out."
    return (
        f"{first} Runs lose up to {_number(worst.drop)} when their own pairs are left out: an unpooled run "
        "may be underrated by that much."
    )


def score_matrix(
    qrels: pd.DataFrame, runs: Mapping[str, pd.DataFrame], metrics: Sequence[str], **options: Any
) -> tuple[dict[str, np.ndarray], list[str], dict[str, dict[str, float]]]:
    """Per metric a runs × queries matrix of per-query scores (every qrels query, missing ones 0, as evaluate
    scores them); the queries; and each run's mean per metric."""
    results = evaluate(qrels, dict(runs), list(metrics), **options)
    first = next(iter(results.values()))
    queries = [str(q) for q in first.per_query.index]
    columns = list(first.per_query.columns)
    matrices = {c: np.vstack([results[r].per_query[c].to_numpy(np.float64) for r in runs]) for c in columns}
    return matrices, queries, {r: results[r].mean for r in runs}


def metric_reliability(
    metric: str,
    scores: np.ndarray,
    runs: Sequence[str],
    settings: Settings,
    pool_bias: list[PoolBias] | None = None,
    judged: dict[str, float] | None = None,
) -> MetricReliability:
    """Reliability of one metric from its runs × queries score matrix (rows in `runs` order)."""
    m, n = scores.shape
    if m == 2:
        diff = scores[0] - scores[1]
        variance, source = (float(diff.var(ddof=1)) if n > 1 else math.nan), PAIR_VARIANCE
    else:
        variance, source = 2 * residual_variance(scores), ANOVA_VARIANCE
    if math.isnan(variance):
        size, detectable = math.inf, math.inf
    else:
        size = topic_set_size(settings.delta, variance, settings.alpha, settings.power)
        detectable = minimum_detectable_difference(n, variance, settings.alpha, settings.power)
    pairs: list[PairAsl] = []
    taus = np.array([])
    if m >= 2 and n >= 2:
        asl = achieved_significance(scores, settings.correction, settings.resamples, settings.seed)
        means = scores.mean(1)
        pairs = [
            PairAsl(runs[a], runs[b], float(means[a] - means[b]), float(p))
            for a, b, p in zip(*run_pairs(m), asl, strict=True)
        ]
        taus = split_half_taus(scores, half_masks(n, settings.resamples, settings.seed))
    return MetricReliability(
        metric,
        n,
        {r: float(v) for r, v in zip(runs, scores.mean(1), strict=True)},
        {r: float(v) for r, v in zip(runs, scores.var(1, ddof=1) if n > 1 else np.full(m, np.nan), strict=True)},
        variance,
        source,
        size,
        detectable,
        pairs,
        taus,
        pool_bias or [],
        judged or {},
        settings.alpha,
    )


def reliability(
    qrels: Any,
    runs: Mapping[str, Any],
    metrics: Sequence[str] = (DEFAULT_METRIC,),
    *,
    settings: Settings | None = None,
    pooled: Mapping[str, Pairs] | None = None,
    pool_depth: int = 10,
    rel_level: int | None = None,
    scale: tuple[int, int] | None = None,
    source: str | None = None,
) -> ReliabilityReport:
    """The reliability of `qrels` (path or frame) against `runs` (name → path or frame) on each metric.

    `pooled` names, per run that built the pool, the (query, fragment) pairs it contributed (the store knows
    them); without it every run is taken to have contributed its top `pool_depth` (TREC depth-k pooling).
    `rel_level` and `scale` are evaluate()'s; `source` names the golden set (default: the qrels file's name).
    """
    settings = settings or Settings()
    if not runs:
        raise ValueError("reliability needs at least one run")
    scale = qrels_scale(qrels, scale)  # a release's JSONL/CSV names its scale
    frame = read_qrels(qrels)
    run_frames = {name: read_run(r) for name, r in runs.items()}
    options: dict[str, Any] = {"rel_level": rel_level, "scale": scale}
    judged_metric = f"judged@{settings.judged_k}"
    for metric in metrics:
        if len(parse_metrics([metric])) != 1:
            raise ValueError(f"give each metric with its cutoff, e.g. ndcg@10, not {metric!r}")
    matrices, _, means = score_matrix(frame, run_frames, [*metrics, judged_metric], **options)
    names = list(run_frames)
    pooled = pooled if pooled is not None else {n: top_pairs(f, pool_depth) for n, f in run_frames.items()}
    notes = []
    if len(names) < 2:
        notes.append("one run: discriminative power and ranking stability need two or more")
    judged = {r: means[r][judged_metric] for r in names}
    out = []
    for metric, column in zip(metrics, matrices, strict=False):
        bias = leave_one_run_out(frame, run_frames, pooled, metric, **options)
        out.append(metric_reliability(column, matrices[column], names, settings, bias, judged))
    label = source or (Path(qrels).name if isinstance(qrels, str | Path) else "qrels")
    return ReliabilityReport(names, settings, out, sorted(n for n in pooled if n in run_frames), notes, label)

"""Can a model judge stand in for people? The runs ranked under people's and the judge's labels (Kendall's τ, τ_ap,
top-k overlap, the pairs whose order flips against the paired test's noise), the judge's leniency (Bland–Altman on
per-query values, the grade confusion), agreement per query, and the hybrid estimate when people judged only some
of the queries: PPI++ (Angelopoulos, Duchi & Zrnic 2023) with the power-tuned λ, as ppi_py computes it.

Every metric value comes from the one evaluation engine (`eval_core.ranking.evaluation.evaluate`), every κ from the
agreement core, every paired interval from `eval_core.ranking.significance`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from eval_core.agreement.coefficients import cohen_kappa
from eval_core.io.columns import Columns
from eval_core.io.formats import load_run, read_qrels
from eval_core.ranking.evaluation import evaluate
from eval_core.ranking.metrics import parse_metrics
from eval_core.ranking.significance import UNCHANGED_TOL, t_interval

DEFAULT_METRIC = "ndcg@10"
DEFAULT_TOP = 5
CONFIDENCE = 0.95
LIMITS_Z = 1.96  # Bland & Altman's 95% limits of agreement: bias ± 1.96 sd
BATCH_ROWS = 4_000_000  # run lines held at once (~40 bytes each read)


@dataclass(frozen=True)
class RunScore:
    """One run's mean on the shared queries under people's and under the judge's labels."""

    run: str
    human: float
    judge: float
    human_rank: int  # 1 = best
    judge_rank: int


@dataclass(frozen=True)
class Flip:
    """Two runs the judge orders the other way round from people; `noise` when people's own paired interval of
    the difference (t, CONFIDENCE) holds 0: people could not tell them apart either, so it is not a flip."""

    better: str  # the run people rank higher
    worse: str
    human_difference: float  # better − worse under people's labels (> 0)
    judge_difference: float  # better − worse under the judge's labels (< 0)
    human_ci: tuple[float, float]
    n_queries: int

    @property
    def noise(self) -> bool:
        """True when people's interval of the difference holds 0."""
        return self.human_ci[0] <= 0.0 <= self.human_ci[1]


@dataclass(frozen=True)
class Ranking:
    """How the judge ranks the runs against people: τ-b (scipy's), τ_ap with people's ranking as the truth,
    the overlap of the top k and the flips."""

    n_runs: int
    n_queries: int
    runs: list[RunScore]
    tau: float | None
    tau_ap: float | None
    top_k: int
    top_overlap: int  # runs in both top-k lists
    flips: list[Flip]

    @property
    def real_flips(self) -> list[Flip]:
        """Flips people's paired interval says are real (not noise)."""
        return [f for f in self.flips if not f.noise]

    @property
    def top_flips(self) -> list[Flip]:
        """Real flips that touch the top k: either run is in people's top k or the judge's, so the judge reorders
        people's top k or lets a run into it (a run people rank 9th that the judge ranks 3rd counts)."""
        top = {s.run for s in self.runs if s.human_rank <= self.top_k or s.judge_rank <= self.top_k}
        return [f for f in self.real_flips if f.better in top or f.worse in top]


@dataclass(frozen=True)
class Leniency:
    """Bland–Altman on per-query metric values (judge − human, every run × shared query) and the grades."""

    n_values: int
    bias: float | None
    sd: float | None
    limits: tuple[float, float] | None
    n_pairs: int  # pairs graded by both
    confusion: list[list[int]]  # rows: people's grade, columns: the judge's (scale order)
    up: float | None  # share of pairs the judge grades higher than people
    down: float | None


@dataclass(frozen=True)
class QueryAgreement:
    """κ of the judge against people on one query's pairs (the report's weights: linear, quadratic or none)."""

    query_id: str
    n: int
    kappa: float | None
    status: str


@dataclass(frozen=True)
class Hybrid:
    """One run's mean from people on n queries and the judge on all: PPI++ point and interval (power-tuned λ),
    beside people's own interval on their n queries and the judge-only mean on every query."""

    run: str
    n_human: int
    n_judge_only: int
    lam: float
    estimate: float
    ci: tuple[float, float]
    human_mean: float
    human_ci: tuple[float, float]
    judge_mean: float


@dataclass(frozen=True)
class TrustReport:
    """The judge-trust report (typed; `to_dict()` is the JSON edge)."""

    metric: str
    scale: tuple[int, int]
    weights: str
    ranking: Ranking
    leniency: Leniency
    per_query: list[QueryAgreement]
    hybrid: list[Hybrid]
    target_width: float | None
    queries_needed: int | None  # people-judged queries for every hybrid interval to be ≤ target_width
    warnings: list[str] = field(default_factory=list)
    verdict: str = ""
    values: pd.DataFrame | None = field(default=None, repr=False, compare=False)  # run, query_id, human, judge

    def to_dict(self) -> dict[str, Any]:
        """JSON object (per-query values left out: `values` is for the plot)."""
        out = asdict(replace(self, values=None))
        del out["values"]
        out["ranking"]["flips"] = [{**asdict(f), "noise": f.noise} for f in self.ranking.flips]
        return out


# ---------------------------------------------------------------------------------------------- ranking


def tau_ap(truth: Sequence[str], estimate: Sequence[str]) -> float | None:
    """Yilmaz, Aslam & Robertson's (2008) AP rank correlation of `estimate` against `truth` (both best first, the
    same items, no ties): 2/(N−1) · Σ_{i=2..N} C(i)/(i−1) − 1, walking the estimated list, C(i) the items above
    rank i there that `truth` also puts above the item at rank i. None for fewer than two items."""
    n = len(estimate)
    if n < 2:
        return None
    position = {item: p for p, item in enumerate(truth)}
    ranks = np.array([position[item] for item in estimate])
    total = 0.0
    for i in range(1, n):
        total += int(np.count_nonzero(ranks[:i] < ranks[i])) / i
    return 2.0 * total / (n - 1) - 1.0


def _order(values: Mapping[str, float]) -> list[str]:
    """Runs best first; ties keep the given order."""
    return sorted(values, key=lambda r: -values[r])


def ranking(
    human: pd.DataFrame, judge: pd.DataFrame, top: int = DEFAULT_TOP, confidence: float = CONFIDENCE
) -> Ranking:
    """Rankings of the runs (columns of two query × run frames over the same queries) and where they differ."""
    h_mean, j_mean = human.mean(), judge.mean()
    runs = list(human.columns)
    h_order, j_order = _order(h_mean.to_dict()), _order(j_mean.to_dict())
    h_rank = {r: i + 1 for i, r in enumerate(h_order)}
    j_rank = {r: i + 1 for i, r in enumerate(j_order)}
    scores = [RunScore(str(r), float(h_mean[r]), float(j_mean[r]), h_rank[r], j_rank[r]) for r in h_order]
    tau = None
    if len(runs) >= 2:
        value = stats.kendalltau(h_mean[runs].to_numpy(), j_mean[runs].to_numpy()).statistic
        tau = None if not np.isfinite(value) else float(value)
    flips = []
    for a, b in itertools.combinations(h_order, 2):  # a ranked above b by people
        dh, dj = float(h_mean[a] - h_mean[b]), float(j_mean[a] - j_mean[b])
        if dh > UNCHANGED_TOL and dj < -UNCHANGED_TOL:
            interval = t_interval((human[a] - human[b]).to_numpy(), confidence)
            flips.append(Flip(str(a), str(b), dh, dj, (interval.low, interval.high), len(human)))
    k = min(top, len(runs))
    return Ranking(
        len(runs),
        len(human),
        scores,
        tau,
        tau_ap(h_order, j_order),
        k,
        len(set(h_order[:k]) & set(j_order[:k])),
        flips,
    )


# --------------------------------------------------------------------------------------------- leniency


def bland_altman(human: np.ndarray, judge: np.ndarray) -> tuple[float | None, float | None, tuple[float, float] | None]:
    """(bias, sd, limits) of judge − human: mean difference, its sample sd, bias ± 1.96 sd."""
    d = np.asarray(judge, dtype=float) - np.asarray(human, dtype=float)
    if d.size == 0:
        return None, None, None
    bias = float(d.mean())
    if d.size < 2:
        return bias, None, None
    sd = float(d.std(ddof=1))
    return bias, sd, (bias - LIMITS_Z * sd, bias + LIMITS_Z * sd)


def _pairs(human: pd.DataFrame, judge: pd.DataFrame) -> pd.DataFrame:
    """Pairs graded by both: query_id, doc_id, human, judge."""
    return human.merge(judge, on=["query_id", "doc_id"], suffixes=("_human", "_judge")).rename(
        columns={"grade_human": "human", "grade_judge": "judge"}
    )


def leniency(
    human_values: pd.DataFrame, judge_values: pd.DataFrame, pairs: pd.DataFrame, scale: tuple[int, int]
) -> Leniency:
    """Bland–Altman over every run × shared query, and the grade confusion on pairs graded by both."""
    bias, sd, limits = bland_altman(human_values.to_numpy().ravel(), judge_values.to_numpy().ravel())
    low, high = scale
    k = high - low + 1
    h, j = pairs["human"].to_numpy(dtype=int), pairs["judge"].to_numpy(dtype=int)
    confusion = np.bincount((h - low) * k + (j - low), minlength=k * k).reshape(k, k)
    n = len(pairs)
    return Leniency(
        human_values.size,
        bias,
        sd,
        limits,
        n,
        confusion.tolist(),
        float(np.mean(j > h)) if n else None,
        float(np.mean(j < h)) if n else None,
    )


def per_query(pairs: pd.DataFrame, scale: tuple[int, int], weights: str) -> list[QueryAgreement]:
    """κ (`weights`: unweighted, linear or quadratic) per query on its pairs graded by both, worst first; undefined
    ones last, with the reason."""
    out = []
    for qid, part in pairs.groupby("query_id", sort=True):
        c = cohen_kappa(part["human"].to_numpy(dtype=float), part["judge"].to_numpy(dtype=float), weights, scale)
        out.append(QueryAgreement(str(qid), len(part), c.value, c.status))
    return sorted(out, key=lambda q: (q.kappa is None, q.kappa if q.kappa is not None else 0.0, q.query_id))


# ----------------------------------------------------------------------------------------------- hybrid


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def ppi_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """PPI++'s power-tuned λ for a mean (ppi_py's `_calc_lam_glm`, one dimension, clipped to [0, 1]):
    Cov(Y, Ŷ) / ((1 + n/N) · Var(Ŷ over labelled and unlabelled)), covariance over n, variance over n + N − 1."""
    n, big_n = len(y), len(yhat_unlabeled)
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    var = float(np.var(np.concatenate([yhat, yhat_unlabeled]), ddof=1))
    if var == 0.0:
        return 0.0
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def ppi_mean(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float, tuple[float, float]]:
    """(λ, PPI++ mean, its normal interval) as ppi_py's ppi_mean_pointestimate / ppi_mean_ci with lam=None:
    λ·mean(Ŷ_unlabelled) + mean(Y − λŶ), standard error √(λ²·var(Ŷ_u)/N + var(Y − λŶ)/n), variances over n."""
    y, yhat, yu = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    lam = ppi_lambda(y, yhat, yu)
    estimate = float(lam * yu.mean() + (y - lam * yhat).mean())
    se = float(np.sqrt((lam * yu).std() ** 2 / len(yu) + (y - lam * yhat).std() ** 2 / len(y)))
    z = _z(confidence)
    return lam, estimate, (estimate - z * se, estimate + z * se)


def classical_mean(y: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, tuple[float, float]]:
    """People's mean on their queries with its normal interval (ppi_py's classical_mean_ci)."""
    y = np.asarray(y, dtype=float)
    mean, half = float(y.mean()), _z(confidence) * float(y.std()) / np.sqrt(len(y))
    return mean, (mean - half, mean + half)


def width_at(
    y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray, n: Any, total: int, confidence: float
) -> np.ndarray:
    """The PPI++ interval's width with n people-judged queries of `total` (the rest judge-only; n may be an
    array), from the variances and covariance measured now and λ tuned for that n; n = total: people's own
    interval."""
    n = np.asarray(n, dtype=float)
    z = _z(confidence)
    big_n = np.maximum(total - n, 1.0)
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    var_hat = float(np.var(yhat_all, ddof=1))
    lam = np.zeros_like(n) if var_hat == 0.0 else np.clip(cov / ((1.0 + n / big_n) * var_hat), 0.0, 1.0)
    rect = np.maximum(float(np.var(y)) - 2.0 * lam * cov + lam * lam * float(np.var(yhat)), 0.0)
    width = 2.0 * z * np.sqrt(lam * lam * float(np.var(yhat_all)) / big_n + rect / n)
    return np.where(n >= total, 2.0 * z * float(np.std(y)) / np.sqrt(total), width)


def queries_needed(
    samples: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], total: int, target: float, confidence: float
) -> int | None:
    """The fewest people-judged queries (of `total`) that make every run's PPI++ interval ≤ `target` wide;
    None when even all of them would not."""
    n = np.arange(2, total + 1)
    ok = np.ones(len(n), dtype=bool)
    for y, yh, ya in samples:
        ok &= width_at(y, yh, ya, n, total, confidence) <= target
    hits = np.flatnonzero(ok)
    return int(n[hits[0]]) if len(hits) else None


# ---------------------------------------------------------------------------------------------- report


def model_family(model: str) -> str:
    """A model's family: its name without vendor prefix, up to the first digit or separator (`gpt-4o-mini` →
    `gpt`, `openai/gpt-4.1` → `gpt`, `Llama-3.1-8B` → `llama`, `qwen2.5-7b` → `qwen`)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    match = re.match(r"[a-z]+", name)
    return match.group(0) if match else name


def circularity(judge_model: str | None, produced_by: Mapping[str, str | None]) -> list[str]:
    """A warning per run produced with a model of the judge's family: recorded (`import run --produced-by`), or,
    when nothing is recorded, named in the run's name (its tag): the family as a word start, e.g. `rerank-gpt4o`
    for a gpt judge (families shorter than three letters are not guessed from names)."""
    if not judge_model:
        return []
    family = model_family(judge_model)
    out = []
    for run, model in produced_by.items():
        if model and model_family(model) == family:
            out.append(
                f"run {run} was produced with {model}, of the judge's model family ({family}): the judge grades "
                "its own family's output, and may favour it"
            )
        elif not model and len(family) >= 3 and re.search(rf"(?<![a-z]){re.escape(family)}", run.lower()):
            out.append(
                f"run {run} names the judge's model family ({family}) and may have been produced with it: the "
                "judge may favour it (record the model with `import run --produced-by`)"
            )
    return out


def _n(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def verdict(report: TrustReport) -> str:
    """The report in one plain paragraph, every number with its n."""
    r, le = report.ranking, report.leniency
    parts = []
    if r.tau is None:
        parts.append(f"with {_n(r.n_runs, 'run')} there is no ranking to compare")
    else:
        same = "as people do" if r.tau >= 0.9 else "close to how people do" if r.tau >= 0.8 else "unlike people"
        parts.append(
            f"the judge ranks {_n(r.n_runs, 'run')} {same} (τ {r.tau:.2f}, τ_ap {r.tau_ap:.2f}; "
            f"{_n(r.n_queries, 'query')})".replace("querys", "queries")
        )
    if le.bias is not None:
        limits = f"limits {le.limits[0]:+.2f} … {le.limits[1]:+.2f}; " if le.limits else ""
        n = f"n {le.n_values} run × query values"
        if round(le.bias, 2) == 0.0:  # shown as ±0.00: saying "up" or "down" would be read as a bias
            parts.append(f"it grades neither up nor down on balance (bias 0.00 {report.metric}; {limits}{n})")
        else:
            way = "up" if le.bias > 0 else "down"
            limits = f" ({limits}" if limits else " ("
            parts.append(f"it grades {way} by {le.bias:+.2f} {report.metric}{limits}{n})")
    if le.n_pairs and le.up is not None and le.down is not None:  # a metric normalised by the judge's own ideal
        parts.append(  # hides a judge that grades everything up: the grades themselves say it
            f"it grades {le.up:.0%} of {_n(le.n_pairs, 'pair')} higher than people and {le.down:.0%} lower"
        )
    real, top_real = r.real_flips, r.top_flips
    overlap = f"top-{r.top_k} overlap {r.top_overlap}/{r.top_k}"
    if not r.flips:
        parts.append("no pair of runs changes order")
    else:
        verb = "changes" if len(r.flips) == 1 else "change"
        touching = f" ({len(top_real)} touching the top {r.top_k}" + (f", {overlap})" if top_real else ")")
        parts.append(
            f"{_n(len(r.flips), 'pair')} of runs {verb} order, {len(real)} beyond people's own noise"
            + (touching if real else "")
        )
    if not top_real and r.n_runs > 1:
        parts.append(f"no real flip touches the top {r.top_k} ({overlap})")
    if report.hybrid and report.target_width is not None:
        h = report.hybrid[0]
        total, now = h.n_human + h.n_judge_only, h.n_human
        parts.append(
            f"hybrid intervals {report.target_width:g} wide need {report.queries_needed} people-judged queries of "
            f"{total} ({now} now)"
            if report.queries_needed is not None
            else f"hybrid intervals {report.target_width:g} wide are out of reach with {total} queries"
        )
    text = "; ".join(parts) + "."
    if report.warnings:
        text += " Warnings: " + " ".join(report.warnings)
    return text[0].upper() + text[1:]


def _per_query_values(
    human: pd.DataFrame, judge: pd.DataFrame, runs: Mapping[str, Any], metric: str, scale: tuple[int, int]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """query × run values of `metric` under people's and the judge's qrels (each over its own queries) from the
    one evaluation engine. Each run is read once and scored under both; runs are read in batches of about
    BATCH_ROWS lines, so memory follows a batch, not the sum of the runs (100 runs × 1,000 queries of up to 1,000
    lines are 55 M lines: 2.2 GB read at once)."""
    values: tuple[dict[str, pd.Series], dict[str, pd.Series]] = ({}, {})
    batch: dict[str, Columns] = {}

    def score() -> None:
        for qrels, out in zip((human, judge), values, strict=True):
            results = evaluate(qrels, list(batch.values()), metrics=[metric], scale=scale)
            out.update({name: res.per_query[metric] for name, res in zip(batch, results, strict=True)})
        batch.clear()

    for name, run in runs.items():
        batch[name] = load_run(run)
        if sum(len(c.qcode) for c in batch.values()) >= BATCH_ROWS:
            score()
    if batch:
        score()
    return pd.DataFrame(values[0]), pd.DataFrame(values[1])


def _qrels_frame(src: Any) -> pd.DataFrame:
    """Qrels as query_id, doc_id, grade (read once, merged for the grade confusion)."""
    return read_qrels(src)


def judge_trust(
    human: Any,
    judge: Any,
    runs: Mapping[str, Any],
    metric: str = DEFAULT_METRIC,
    scale: tuple[int, int] = (0, 3),
    weights: str = "linear",
    top: int = DEFAULT_TOP,
    target_width: float | None = None,
    confidence: float = CONFIDENCE,
    warnings: Sequence[str] = (),
) -> TrustReport:
    """The judge-trust report of `judge`'s labels against `human`'s (qrels: files, frames or dicts) on `runs`
    (name → run). Ranking, leniency and per-query agreement use the queries both judged; the hybrid estimate
    the judge-only queries too (when people judged a subset)."""
    specs = parse_metrics([metric])
    if len(specs) != 1:
        raise ValueError(f"give one metric with its cutoff, e.g. ndcg@10, not {metric!r}")
    if len(runs) < 1:
        raise ValueError("judge-trust needs at least one run")
    h, j = _qrels_frame(human), _qrels_frame(judge)
    hv, jv = _per_query_values(h, j, runs, metric, scale)
    shared = hv.index.intersection(jv.index)
    if len(shared) == 0:
        raise ValueError("the human and the judge labels share no query")
    notes = list(warnings)
    human_only = hv.index.difference(jv.index)
    if len(human_only):
        notes.append(f"{_n(len(human_only), 'query')} judged by people only are left out".replace("querys", "queries"))
    hs, js = hv.loc[shared], jv.loc[shared]
    pairs = _pairs(h, j)
    judge_only = jv.index.difference(hv.index)
    hybrid, samples = [], []
    if len(judge_only) and len(shared) >= 2:
        for name in hv.columns:
            y, yhat, yu = hs[name].to_numpy(), js[name].to_numpy(), jv.loc[judge_only, name].to_numpy()
            lam, est, ci = ppi_mean(y, yhat, yu, confidence)
            hm, hci = classical_mean(y, confidence)
            hybrid.append(Hybrid(str(name), len(y), len(yu), lam, est, ci, hm, hci, float(jv[name].mean())))
            samples.append((y, yhat, jv[name].to_numpy()))
    needed = queries_needed(samples, len(jv), target_width, confidence) if samples and target_width else None
    report = TrustReport(
        metric,
        (scale[0], scale[1]),
        weights,
        ranking(hs, js, top, confidence),
        leniency(hs, js, pairs, scale),
        per_query(pairs, scale, weights),
        hybrid,
        target_width,
        needed,
        notes,
    )
    values = pd.DataFrame(
        {
            "run": np.repeat(np.asarray(hs.columns, dtype=object), len(hs)),
            "query_id": np.tile(np.asarray(hs.index, dtype=object), hs.shape[1]),
            "human": hs.to_numpy().T.ravel(),
            "judge": js.to_numpy().T.ravel(),
        }
    )
    return replace(report, verdict=verdict(report), values=values)

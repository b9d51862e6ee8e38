"""Reliability of a golden set: every number against statsmodels or SciPy, pool bias on a hand-built case."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from eval_core.ranking.evaluation import evaluate
from eval_core.reliability import Settings, reliability
from eval_core.reliability.discrimination import holm, paired_t_holm, randomised_tukey_hsd
from eval_core.reliability.pool_bias import own_pairs, top_pairs
from eval_core.reliability.power import (
    minimum_detectable_difference,
    residual_variance,
    t_test_power,
    topic_set_size,
)
from eval_core.reliability.stability import half_masks, split_half_taus


def _scores(m: int, n: int, seed: int = 3) -> np.ndarray:
    """A runs × queries matrix with run effects, query effects and noise, in [0, 1]."""
    rng = np.random.default_rng(seed)
    x = 0.4 + 0.03 * np.arange(m)[:, None] + rng.normal(0, 0.15, (1, n)) + rng.normal(0, 0.1, (m, n))
    return np.clip(x, 0, 1)


@pytest.mark.parametrize(
    ("effect", "n", "alpha"), [(0.3, 40, 0.05), (0.05, 1000, 0.01), (1.5, 3, 0.1), (0.0, 20, 0.05)]
)
def test_power_is_statsmodels(effect: float, n: int, alpha: float) -> None:
    assert t_test_power(effect, n, alpha) == pytest.approx(TTestPower().power(effect, n, alpha), abs=1e-10)


@pytest.mark.parametrize(
    ("delta", "variance", "alpha", "power"),
    [(0.02, 0.03, 0.05, 0.8), (0.05, 0.01, 0.05, 0.9), (0.02, 0.2, 0.01, 0.8), (0.1, 0.002, 0.05, 0.8)],
)
def test_topic_set_size_is_statsmodels(delta: float, variance: float, alpha: float, power: float) -> None:
    expected = TTestPower().solve_power(effect_size=delta / math.sqrt(variance), alpha=alpha, power=power)
    assert topic_set_size(delta, variance, alpha, power) == pytest.approx(expected, rel=1e-6)


def test_topic_set_size_floor_and_refusals() -> None:
    assert topic_set_size(0.5, 1e-8) == 2.0  # a t-test needs two observations, however small the variance
    with pytest.raises(ValueError, match="delta"):
        topic_set_size(0.0, 0.01)
    with pytest.raises(ValueError, match="power"):
        topic_set_size(0.02, 0.01, power=1.0)


@pytest.mark.parametrize("n", [3, 40, 210, 1000])
def test_detectable_difference_reaches_the_power(n: int) -> None:
    variance = 0.03
    mdd = minimum_detectable_difference(n, variance)
    assert TTestPower().power(mdd / math.sqrt(variance), n, 0.05) == pytest.approx(0.8, abs=1e-8)
    expected = TTestPower().solve_power(nobs=n, alpha=0.05, power=0.8) * math.sqrt(variance)
    assert mdd == pytest.approx(expected, rel=1e-4)


def test_residual_variance_is_the_two_way_anova() -> None:
    x = _scores(5, 30)
    frame = pd.DataFrame({"score": x.ravel(), "run": np.repeat(np.arange(5), 30), "query": np.tile(np.arange(30), 5)})
    table = anova_lm(ols("score ~ C(run) + C(query)", data=frame).fit())
    assert residual_variance(x) == pytest.approx(table.loc["Residual", "mean_sq"], rel=1e-10)


def test_holm_is_statsmodels() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.2, 0.04])
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-12)


def test_paired_t_holm_is_scipy_and_statsmodels() -> None:
    x = _scores(4, 25)
    i, j = np.triu_indices(4, 1)
    raw = np.array([stats.ttest_rel(x[a], x[b]).pvalue for a, b in zip(i, j, strict=True)])
    assert paired_t_holm(x) == pytest.approx(multipletests(raw, method="holm")[1], abs=1e-12)


def test_tukey_hsd_on_two_runs_is_the_exact_paired_randomisation_test() -> None:
    """With two runs, permuting a query's scores between them flips the sign of its difference, and the
    range of the two means is |mean difference|: the ASL is SciPy's exact paired permutation p-value."""
    x = _scores(2, 10, seed=11)
    exact = stats.permutation_test(
        (x[0], x[1]),
        lambda a, b: abs(np.mean(a - b)),
        permutation_type="samples",
        alternative="greater",
        n_resamples=10_000,
    ).pvalue
    resamples = 20_000
    asl = randomised_tukey_hsd(x, resamples, seed=1)[0]
    assert abs(asl - exact) < 4 * math.sqrt(exact * (1 - exact) / resamples) + 1e-9
    assert randomised_tukey_hsd(x, 500, seed=1)[0] == randomised_tukey_hsd(x, 500, seed=1)[0]


def test_split_half_tau_is_scipy_kendalltau() -> None:
    x = _scores(6, 40)
    masks = half_masks(40, 25, seed=5)
    assert (masks.sum(1) == 20).all()
    assert (half_masks(40, 25, seed=5) == masks).all()
    taus = split_half_taus(x, masks)
    for mask, tau in zip(masks, taus, strict=True):
        expected = stats.kendalltau(x[:, mask].mean(1), x[:, ~mask].mean(1), variant="b").statistic
        assert tau == pytest.approx(expected, abs=1e-12)


def _hand_built() -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    qrels = pd.DataFrame(
        [("q1", "a", 2), ("q1", "b", 1), ("q1", "c", 0), ("q1", "d", 1), ("q2", "e", 1), ("q2", "f", 0)],
        columns=["query_id", "doc_id", "grade"],
    )
    run_a = pd.DataFrame(
        [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0), ("q2", "e", 2.0), ("q2", "f", 1.0)],
        columns=["query_id", "doc_id", "score"],
    )
    run_b = pd.DataFrame(
        [("q1", "a", 3.0), ("q1", "d", 2.0), ("q1", "x", 1.0), ("q2", "f", 2.0), ("q2", "g", 1.0)],
        columns=["query_id", "doc_id", "score"],
    )
    return qrels, {"A": run_a, "B": run_b}


def test_pool_bias_and_judged_on_a_hand_built_case() -> None:
    """Depth-3 pool of two runs. A ranks q1: a b c, q2: e f; B ranks q1: a d x, q2: f g (x, g unjudged).
    Qrels q1: a=2 b=1 c=0 d=1, q2: e=1 f=0. Own pairs: A {q1 b, q1 c, q2 e} (all judged: 3),
    B {q1 d, q1 x, q2 g} (judged: d only, 1).
    P@3 of A: q1 a,b hit = 2/3, q2 e = 1/3, mean 1/2; without b, c, e: q1 a = 1/3, q2 nothing relevant = 0,
    mean 1/6: drop 1/3. P@3 of B: q1 a,d = 2/3, q2 0, mean 1/3; without d: q1 1/3, mean 1/6: drop 1/6.
    The largest drop, A's 1/3, is the expected underrating. judged@3 (judged / min(3, retrieved)):
    A q1 3/3, q2 2/2 → 1; B q1 2/3 (x unjudged), q2 1/2 (g unjudged) → 7/12."""
    qrels, runs = _hand_built()
    assert own_pairs({n: top_pairs(r, 3) for n, r in runs.items()})["A"] == {("q1", "b"), ("q1", "c"), ("q2", "e")}
    report = reliability(qrels, runs, ["P@3"], settings=Settings(judged_k=3, resamples=50), pool_depth=3)
    m = report.metrics[0]
    bias = {b.run: b for b in m.pool_bias}
    assert bias["A"].full == pytest.approx(1 / 2) and bias["A"].left_out == pytest.approx(1 / 6)
    assert bias["A"].drop == pytest.approx(1 / 3) and bias["A"].own_pairs == 3
    assert bias["B"].drop == pytest.approx(1 / 6) and bias["B"].own_pairs == 1
    assert m.underrating is not None and m.underrating.run == "A"
    assert m.judged == pytest.approx({"A": 1.0, "B": 7 / 12})
    assert "Runs lose up to 0.333 when their own pairs are left out" in report.sentence()


def test_explicit_pool_contributions_override_depth() -> None:
    """With the pool named explicitly (the store's pair sources): only B pooled, so only B is measured, and
    every pair B ranked is its own: q1 a, d (x unjudged), q2 f (g unjudged) — 3 judged pairs.
    Without them B's q1 ranks no judged relevant fragment: P@3 drops from 1/3 to 0."""
    qrels, runs = _hand_built()
    pooled = {"B": {("q1", "a"), ("q1", "d"), ("q1", "x"), ("q2", "f"), ("q2", "g")}}
    report = reliability(qrels, runs, ["P@3"], settings=Settings(resamples=20), pooled=pooled)
    (b,) = report.metrics[0].pool_bias
    assert (b.run, b.own_pairs) == ("B", 3)
    assert b.drop == pytest.approx(1 / 3)
    assert report.pooled == ["B"]


def test_report_sizes_come_from_the_named_variance() -> None:
    """Two runs: the paired-difference variance; more: 2 × the ANOVA residual variance; both sized as statsmodels
    sizes a paired t-test, and the sentence prints them."""
    rng = np.random.default_rng(2)
    qrels = pd.DataFrame(
        {
            "query_id": np.repeat([f"q{i}" for i in range(60)], 8),
            "doc_id": np.tile([f"d{j}" for j in range(8)], 60),
            "grade": rng.integers(0, 4, 480),
        }
    )
    runs = {
        f"r{k}": qrels.assign(score=qrels["grade"] * (0.5 + 0.2 * k) + rng.normal(0, 1.5, 480))[
            ["query_id", "doc_id", "score"]
        ]
        for k in range(4)
    }
    settings = Settings(delta=0.05, resamples=200)
    per_query = {n: e.per_query["ndcg@10"] for n, e in evaluate(qrels, runs, ["ndcg@10"]).items()}
    for names in (["r0", "r1"], list(runs)):
        report = reliability(qrels, {n: runs[n] for n in names}, ["ndcg@10"], settings=settings)
        m = report.metrics[0]
        if len(names) == 2:
            variance = float(np.var(per_query["r0"] - per_query["r1"], ddof=1))
        else:
            frame = pd.concat(
                [pd.DataFrame({"score": per_query[n].to_numpy(), "run": n, "query": per_query[n].index}) for n in names]
            )
            variance = 2 * anova_lm(ols("score ~ C(run) + C(query)", data=frame).fit()).loc["Residual", "mean_sq"]
        assert m.variance == pytest.approx(variance, rel=1e-9)
        expected = TTestPower().solve_power(effect_size=0.05 / math.sqrt(variance), alpha=0.05, power=0.8)
        assert m.topic_set_size == pytest.approx(expected, rel=1e-6)
        assert m.needed == math.ceil(expected)
        assert f"60 queries detect {m.detectable:.3f}".rstrip("0") in report.sentence()
        assert len(m.pairs) == len(names) * (len(names) - 1) // 2
        assert m.discriminative_power == sum(p.asl < 0.05 for p in m.pairs) / len(m.pairs)
    assert m.variance_source.startswith("2 × residual variance")


def test_a_metric_needs_its_cutoff() -> None:
    qrels, runs = _hand_built()
    with pytest.raises(ValueError, match="cutoff"):
        reliability(qrels, runs, ["ndcg@k"])


def test_a_run_that_contributed_every_judged_pair_drops_to_zero() -> None:
    """One pooled run holding every judged pair: left out, the release has no judged pair, so every query scores 0
    and the drop is the run's whole mean (here P@1 = 1 on both queries: drop 1.0); no error on an empty qrels."""
    import pandas as pd

    from eval_core.reliability.pool_bias import leave_one_run_out

    qrels = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "grade": [1, 1]})
    run = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "score": [1.0, 1.0]})
    (only,) = leave_one_run_out(qrels, {"r": run}, {"r": {("q1", "a"), ("q2", "b")}}, "P@1")
    assert (only.full, only.left_out, only.drop, only.own_pairs) == (1.0, 0.0, 1.0, 2)

"""Paired tests between runs, checked against scipy, statsmodels, exact enumeration and a published example."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from eval_core.ranking.significance import (
    bootstrap_ci,
    change_counts,
    compare,
    compare_scores,
    holm,
    paired_t_test,
    randomization_test,
    wilcoxon_test,
)


def exact_sign_flip_p(d: np.ndarray) -> float:
    """Reference: the two-sided p over all 2^n sign flips, enumerated one by one."""
    observed = abs(d.sum())
    hits = sum(abs(np.dot(signs, d)) >= observed - 1e-12 for signs in itertools.product((-1, 1), repeat=d.size))
    return hits / 2**d.size


def paired_scores(n: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, n)
    return a, np.clip(a + rng.normal(shift, 0.15, n), 0, 1)


@pytest.mark.parametrize("seed,shift", [(1, 0.0), (2, 0.05), (3, 0.12)])
def test_t_and_wilcoxon_equal_scipy_on_the_same_arrays(seed: int, shift: float) -> None:
    a, b = paired_scores(40, shift, seed)
    # Reference: scipy.stats.ttest_rel / scipy.stats.wilcoxon (zero_method="wilcox") directly.
    assert paired_t_test(a, b) == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-12)
    assert wilcoxon_test(a, b) == pytest.approx(stats.wilcoxon(b, a).pvalue, rel=1e-12)


def test_wilcoxon_drops_zero_differences_like_scipy_default() -> None:
    # 20 queries, four unchanged: beyond n = 13 scipy uses the normal approximation, where dropping the zeros
    # ("wilcox") and ranking them ("pratt") give different p-values.
    a, b = paired_scores(20, 0.05, 21)
    b[[2, 7, 11, 15]] = a[[2, 7, 11, 15]]
    expected = stats.wilcoxon(b, a, zero_method="wilcox").pvalue
    assert wilcoxon_test(a, b) == pytest.approx(expected, rel=1e-12)
    assert wilcoxon_test(a, b) != pytest.approx(stats.wilcoxon(b, a, zero_method="pratt").pvalue, rel=1e-6)


def test_identical_runs_give_p_one_for_every_test() -> None:
    a = np.array([0.1, 0.5, 0.9, 0.0])
    assert paired_t_test(a, a) == 1.0
    assert wilcoxon_test(a, a) == 1.0
    assert randomization_test(a - a, 1000, seed=0) == 1.0


@pytest.mark.parametrize("seed,shift", [(4, 0.0), (5, 0.06), (6, 0.2)])
def test_randomization_p_matches_exact_enumeration_within_monte_carlo_error(seed: int, shift: float) -> None:
    a, b = paired_scores(12, shift, seed)  # 2^12 = 4096 sign flips, enumerated exactly
    d = b - a
    exact = exact_sign_flip_p(d)
    n_perm = 20_000
    got = randomization_test(d, n_perm, seed=11)
    se = np.sqrt(exact * (1 - exact) / n_perm)
    assert abs(got - exact) <= 4 * se + 1 / (n_perm + 1)


def test_randomization_is_reproducible_with_a_seed_and_varies_without() -> None:
    a, b = paired_scores(30, 0.04, 7)
    d = b - a
    assert randomization_test(d, 5000, seed=3) == randomization_test(d, 5000, seed=3)
    assert len({randomization_test(d, 5000, seed=s) for s in range(5)}) > 1


def test_randomization_on_many_queries_is_batched_and_tiny_for_a_clear_effect() -> None:
    # 3000 queries × 10,000 flips spans several batches; a +0.1 shift on sd 0.15 is unmistakable,
    # so the p-value is the smallest the estimator can give: 1 / (10,000 + 1).
    a, b = paired_scores(3000, 0.1, 8)
    assert randomization_test(b - a, 10_000, seed=0) == pytest.approx(1 / 10_001)


def test_holm_matches_statsmodels() -> None:
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    rng = np.random.default_rng(9)
    for m in (1, 2, 5, 13):
        p = rng.uniform(0, 0.2, m)
        np.testing.assert_allclose(holm(p), multipletests(p, method="holm")[1], rtol=1e-12)


def test_holm_published_example() -> None:
    # Wikipedia, "Holm–Bonferroni method", example: p = 0.01, 0.04, 0.03, 0.005 at alpha 0.05 rejects
    # H1 and H4 only; adjusted values: 4·0.005 = 0.02, 3·0.01 = 0.03, max(0.03, 2·0.03) = 0.06, max(0.06, 0.04).
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])


def test_bootstrap_ci_agrees_with_scipy_percentile_bootstrap() -> None:
    a, b = paired_scores(60, 0.03, 10)
    d = b - a
    low, high = bootstrap_ci(d, 20_000, 0.95, seed=1)
    ref = stats.bootstrap(
        (d,),
        np.mean,
        n_resamples=20_000,
        method="percentile",
        confidence_level=0.95,
        random_state=np.random.default_rng(2),
    ).confidence_interval
    # Different resampling streams: the two estimates agree within Monte-Carlo error of the quantiles.
    width = ref.high - ref.low
    assert abs(low - ref.low) < 0.05 * width
    assert abs(high - ref.high) < 0.05 * width
    assert bootstrap_ci(d, 2000, 0.95, seed=4) == bootstrap_ci(d, 2000, 0.95, seed=4)


def test_change_counts_ignore_float_noise() -> None:
    d = np.array([0.1, -0.2, 0.0, 1e-17, -1e-16, 0.3])
    assert change_counts(d) == (2, 1, 3)


def frame(values: dict[str, list[float]], metric: str = "ndcg@10") -> dict[str, pd.DataFrame]:
    index = pd.Index([f"q{i}" for i in range(len(next(iter(values.values()))))], name="query_id")
    return {name: pd.DataFrame({metric: v}, index=index) for name, v in values.items()}


def test_compare_scores_two_runs_sentence_and_json() -> None:
    a, b = paired_scores(60, 0.08, 12)
    result = compare_scores(frame({"A": list(a), "B": list(b)}), ["ndcg@10"], test="t")
    (pair,) = result.pairs
    assert result.correction == "none" and pair.p_adjusted is None
    assert pair.p_value == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-12)
    assert pair.diff == pytest.approx(np.mean(b - a))
    assert pair.significant
    better, worse = int(np.sum(b > a)), int(np.sum(b < a))
    assert pair.sentence().startswith(f"B beats A on ndcg@10 by +{np.mean(b - a):.3f} (B − A: 95% CI (t) [")
    assert f"{better} queries better, {worse} worse" in pair.sentence()
    json.dumps(result.to_dict())


def test_compare_scores_not_significant_is_said_plainly() -> None:
    a, b = paired_scores(20, 0.0, 13)
    result = compare_scores(frame({"A": list(a), "B": list(b)}), ["ndcg@10"], test="wilcoxon")
    (pair,) = result.pairs
    assert not pair.significant
    assert pair.sentence().startswith("No significant difference between B and A on ndcg@10")


def test_compare_scores_loser_second_reads_from_the_winner() -> None:
    a, b = paired_scores(60, 0.1, 14)
    (pair,) = compare_scores(frame({"A": list(b), "B": list(a)}), ["ndcg@10"]).pairs
    assert pair.diff < 0 and pair.significant
    assert pair.sentence().startswith(f"A beats B on ndcg@10 by +{-pair.diff:.3f}")


def test_compare_scores_holm_over_all_pairs_and_against_a_baseline() -> None:
    a, b = paired_scores(30, 0.05, 15)
    c = np.clip(a + np.random.default_rng(16).normal(0.02, 0.1, a.size), 0, 1)
    runs = frame({"A": list(a), "B": list(b), "C": list(c)})
    everyone = compare_scores(runs, ["ndcg@10"], test="t")
    assert [(p.run_a, p.run_b) for p in everyone.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    assert everyone.correction == "holm"
    raw = [p.p_value for p in everyone.pairs]
    np.testing.assert_allclose([p.p_adjusted for p in everyone.pairs], holm(raw))
    first = everyone.pairs[0]
    assert f"p = {first.p_value:.3f}, Holm-adjusted = {first.p_adjusted:.3f}" in first.sentence()
    assert first.significant == (first.p_adjusted < 0.05)
    against = compare_scores(runs, ["ndcg@10"], test="t", baseline="C")
    assert [(p.run_a, p.run_b) for p in against.pairs] == [("C", "A"), ("C", "B")]


def test_compare_scores_rejects_unknown_test_and_missing_metric() -> None:
    runs = frame({"A": [0.1, 0.2], "B": [0.2, 0.3]})
    with pytest.raises(ValueError, match="unknown test"):
        compare_scores(runs, ["ndcg@10"], test="anova")
    with pytest.raises(ValueError, match="not computed"):
        compare_scores(runs, ["map"])


def synthetic_runs(n_queries: int = 30, seed: int = 17) -> tuple[dict, dict, dict]:
    """Graded qrels and two runs with distinct scores (so every evaluator ranks them the same way)."""
    rng = np.random.default_rng(seed)
    qrels, run_a, run_b = {}, {}, {}
    for i in range(n_queries):
        q = f"q{i:02d}"
        docs = [f"d{j}" for j in range(40)]
        qrels[q] = {d: int(rng.integers(0, 4)) for d in rng.choice(docs, 12, replace=False)}
        run_a[q] = {d: float(s) for d, s in zip(docs, rng.permutation(40) + rng.uniform(0, 0.5, 40), strict=True)}
        # B: A's scores nudged toward the graded fragments.
        run_b[q] = {d: s + 6.0 * qrels[q].get(d, 0) * rng.uniform(0, 1) for d, s in run_a[q].items()}
    return qrels, run_a, run_b


def test_compare_end_to_end_matches_pytrec_eval_and_scipy() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run_a, run_b = synthetic_runs()
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    a = np.array([v["ndcg_cut_10"] for _, v in sorted(ref.evaluate(run_a).items())])
    b = np.array([v["ndcg_cut_10"] for _, v in sorted(ref.evaluate(run_b).items())])
    result = compare(qrels, {"A": run_a, "B": run_b}, metrics=["ndcg@10"], test="t")
    (pair,) = result.pairs
    assert pair.mean_a == pytest.approx(a.mean(), abs=1e-9) and pair.mean_b == pytest.approx(b.mean(), abs=1e-9)
    assert pair.p_value == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-6)
    assert (pair.better, pair.worse) == (int(np.sum(b > a + 1e-12)), int(np.sum(b < a - 1e-12)))
    wil = compare(qrels, {"A": run_a, "B": run_b}, metrics=["ndcg@10"], test="wilcoxon").pairs[0]
    assert wil.p_value == pytest.approx(stats.wilcoxon(b, a).pvalue, rel=1e-6)


def write_run_file(path, run: dict) -> str:
    path.write_text(
        "".join(
            f"{q} Q0 {d} {i} {s:.6f} sys\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), start=1)
        )
    )
    return str(path)


def test_cli_compare_json_and_table(tmp_path, capsys) -> None:
    from annotator.cli import main

    qrels, run_a, run_b = synthetic_runs()
    qp = tmp_path / "qrels.txt"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    ra, rb = write_run_file(tmp_path / "a.run", run_a), write_run_file(tmp_path / "b.run", run_b)
    rc = write_run_file(tmp_path / "c.run", {q: {d: -s for d, s in docs.items()} for q, docs in run_a.items()})
    assert (
        main(["compare", str(qp), ra, rb, "--metric", "ndcg@10", "--metric", "recall@5,mrr", "--format", "json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["runs"] == ["a.run", "b.run"] and out["metrics"] == ["ndcg@10", "recall@5", "mrr"]
    assert out["correction"] == "none" and len(out["pairs"]) == 3
    assert out["pairs"][0]["sentence"].startswith("b.run beats a.run on ndcg@10")
    assert main(["compare", str(qp), ra, rb, rc, "--test", "t", "--baseline", "a.run"]) == 0
    text = capsys.readouterr().out
    assert "Holm-corrected per metric, each run against a.run" in text
    assert "b.run beats a.run on ndcg@10" in text
    assert main(["compare", str(qp), ra]) == 2
    assert main(["compare", str(qp), ra, rb, "--metric", "nope@3"]) == 2
    assert "unknown metric" in capsys.readouterr().err


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=25), st.randoms())
def test_tests_are_symmetric_in_the_runs_and_blind_to_query_order(pairs, rnd) -> None:
    # Wilcoxon is left out: with ties scipy switches to a slow permutation null; its symmetry is scipy's.
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    perm = np.array(rnd.sample(range(len(pairs)), len(pairs)))
    for p_ab, p_ba, p_perm in [
        (randomization_test(b - a, 500, 1), randomization_test(a - b, 500, 1), None),
        (paired_t_test(a, b), paired_t_test(b, a), paired_t_test(a[perm], b[perm])),
    ]:
        assert 0 <= p_ab <= 1  # the t-test gives 0 when every query moves by the same amount
        assert p_ab == pytest.approx(p_ba, rel=1e-9, abs=1e-12)
        if p_perm is not None:
            assert p_ab == pytest.approx(p_perm, rel=1e-9, abs=1e-12)


def _walsh_hl(d: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Reference Hodges–Lehmann by hand: every Walsh average (d_i + d_j)/2, i <= j, sorted; the signed-rank
    null distribution by enumerating all 2^n sign patterns; k = how many T+ values have P(T+ <= t) <= tail;
    interval [W_(k), W_(M+1-k)] (1-indexed)."""
    d = d[d != 0]
    n = d.size
    walsh = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
    sums = sorted(
        sum(r for r, keep in zip(range(1, n + 1), signs, strict=True) if keep)
        for signs in itertools.product((0, 1), repeat=n)
    )
    tail = (1 - confidence) / 2
    k = 0
    while sum(1 for t in sums if t <= k) / 2**n <= tail:
        k += 1
    return float(np.median(walsh)), walsh[k - 1], walsh[len(walsh) - k]


def test_each_test_prints_its_own_interval() -> None:
    a, b = paired_scores(10, 0.1, 7)
    d = b - a
    t = compare_scores(frame({"A": list(a), "B": list(b)}), ["ndcg@10"], test="t").pairs[0]
    # Reference: scipy.stats.t.interval around the mean with the standard error (ttest_rel's own interval).
    low, high = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    assert (t.ci_low, t.ci_high, t.ci_method) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12), "t")
    assert "95% CI (t)" in t.sentence()
    w = compare_scores(frame({"A": list(a), "B": list(b)}), ["ndcg@10"], test="wilcoxon").pairs[0]
    estimate, low, high = _walsh_hl(d, 0.95)
    assert w.ci_method == "hodges-lehmann exact"
    assert (w.ci_estimate, w.ci_low, w.ci_high) == (pytest.approx(estimate), pytest.approx(low), pytest.approx(high))
    assert f"Hodges–Lehmann shift {estimate:+.3f}" in w.sentence()
    r = compare_scores(frame({"A": list(a), "B": list(b)}), ["ndcg@10"]).pairs[0]
    assert r.ci_method == "bootstrap percentile" and "(bootstrap)" in r.sentence()


def test_five_queries_cannot_reach_alpha_and_say_so() -> None:
    # 5 queries, all worse: the sign-flip test's smallest p is 2/2^5 = 0.0625 (the observed signs and their
    # mirror), so p >= 0.05 however large the drop, while the bootstrap interval of the mean excludes 0.
    a = np.array([0.6, 0.5, 0.7, 0.4, 0.55])
    b = a - np.array([0.05, 0.1, 0.04, 0.08, 0.06])
    result = compare_scores(frame({"A": list(a), "B": list(b)}), ["ndcg@10"])
    pair = result.pairs[0]
    assert pair.min_p == pytest.approx(2 / 32)
    assert pair.p_value >= 0.05 and not pair.significant and pair.ci_high < 0
    text = pair.sentence()
    assert text.startswith("No significant difference")
    assert "excludes 0 although the test does not reject" in text and "bootstrap" in text
    assert "cannot go below p = 0.0625" in text
    assert any("too few queries to reach alpha = 0.05" in w for w in result.warnings)
    # Wilcoxon on the same 5: exact min p is 2/32 too, and no 95% Hodges–Lehmann interval exists
    # (P(T+ = 0) = 1/32 > 0.025): the widest interval, every Walsh average, covers 1 - 2/32 = 93.75%.
    w = compare_scores(frame({"A": list(a), "B": list(b)}), ["ndcg@10"], test="wilcoxon").pairs[0]
    d = b - a
    assert (w.ci_low, w.ci_high) == (pytest.approx(d.min()), pytest.approx(d.max()))
    assert "covers 93.8%" in w.sentence() and w.min_p == pytest.approx(2 / 32)
    # The t-test has no floor: with 5 queries it can reject, and its interval agrees with it.
    t = compare_scores(frame({"A": list(a), "B": list(b)}), ["ndcg@10"], test="t").pairs[0]
    assert t.min_p is None and t.significant and t.ci_high < 0 and "Note:" not in t.sentence()

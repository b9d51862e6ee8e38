"""judge-trust against references: pytrec_eval for every metric value, scipy for τ and the paired t interval, τ_ap
derived by hand, numpy for Bland–Altman, scikit-learn for the confusion and weighted κ, ppi_py for PPI++."""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval
from scipy import stats
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from eval_core.judges.trust import (
    bland_altman,
    circularity,
    judge_trust,
    model_family,
    ppi_mean,
    queries_needed,
    tau_ap,
    width_at,
)
from tests.helpers import lenient, swapping, trust_collection

RUNS = [f"r{i}" for i in range(6)]


def _one(value) -> float:
    """ppi_py returns one-element arrays."""
    return float(np.asarray(value).ravel()[0])


def per_query(qrels: dict, runs: dict) -> dict[str, dict[str, float]]:
    """{run: {qid: ndcg@10}} from pytrec_eval (the reference)."""
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    return {name: {q: v["ndcg_cut_10"] for q, v in ev.evaluate(run).items()} for name, run in runs.items()}


def test_tau_ap_by_hand():
    # truth A B C D; estimate B A C D: i=2 (A): B above it, truth puts B below A → C=0, 0/1; i=3 (C): B, A above,
    # both above C in truth → 2/2; i=4 (D): 3/3. Σ = 2, τ_ap = 2/3 · 2 − 1 = 1/3 (Kendall's τ is 2/3).
    assert tau_ap("ABCD", "BACD") == pytest.approx(1 / 3)
    # estimate A B D C: 1/1 + 2/2 + 2/3 (D above C is wrong) = 8/3, τ_ap = 2/3 · 8/3 − 1 = 7/9: a swap at the bottom
    # costs less than one at the top, for the same τ.
    assert tau_ap("ABCD", "ABDC") == pytest.approx(7 / 9)
    assert tau_ap("ABCD", "ABCD") == pytest.approx(1.0)
    assert tau_ap("ABCD", "DCBA") == pytest.approx(-1.0)
    assert tau_ap("A", "A") is None


def test_swapping_judge_flips_exactly_the_two_mid_runs():
    qrels, runs = trust_collection()
    judge = swapping(qrels, "r2", "r3")
    report = judge_trust(qrels, judge, runs)
    human, jud = per_query(qrels, runs), per_query(judge, runs)
    h_mean = {r: np.mean(list(human[r].values())) for r in RUNS}
    j_mean = {r: np.mean(list(jud[r].values())) for r in RUNS}
    assert sorted(RUNS, key=lambda r: -h_mean[r]) == RUNS  # the collection's design: r0 best … r5 worst
    for score in report.ranking.runs:
        assert score.human == pytest.approx(h_mean[score.run], abs=1e-12)
        assert score.judge == pytest.approx(j_mean[score.run], abs=1e-12)
    assert report.ranking.tau == pytest.approx(
        stats.kendalltau([h_mean[r] for r in RUNS], [j_mean[r] for r in RUNS])[0]
    )
    assert report.ranking.tau == pytest.approx(13 / 15)  # one discordant pair of 15
    # walking the judge's list r0 r1 r3 r2 r4 r5: 1/1 + 2/2 + 2/3 + 4/4 + 5/5 = 14/3; τ_ap = 2/5 · 14/3 − 1 = 13/15
    assert report.ranking.tau_ap == pytest.approx(13 / 15)
    assert report.ranking.top_overlap == 5 and report.ranking.top_k == 5
    (flip,) = report.ranking.flips
    assert (flip.better, flip.worse) == ("r2", "r3")
    d = np.array([human["r2"][q] - human["r3"][q] for q in sorted(human["r2"])])
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert flip.human_ci == pytest.approx((low, high))
    assert flip.human_difference == pytest.approx(d.mean())
    assert flip.judge_difference == pytest.approx(-d.mean())
    assert flip.noise == (low <= 0 <= high)
    assert flip.n_queries == 30


def test_lenient_judge_bland_altman_confusion_and_per_query_kappa():
    qrels, runs = trust_collection()
    judge = lenient(qrels)
    report = judge_trust(qrels, judge, runs)
    human, jud = per_query(qrels, runs), per_query(judge, runs)
    diffs = np.array([jud[r][q] - human[r][q] for r in RUNS for q in human[r]])
    bias, sd = diffs.mean(), diffs.std(ddof=1)
    le = report.leniency
    assert le.n_values == len(diffs) == 180
    assert le.bias == pytest.approx(bias)
    assert le.sd == pytest.approx(sd)
    assert le.limits == pytest.approx((bias - 1.96 * sd, bias + 1.96 * sd))
    pairs = [(g, judge[q][d]) for q, docs in qrels.items() for d, g in docs.items()]
    h, j = np.array(pairs).T
    assert le.confusion == confusion_matrix(h, j, labels=[0, 1, 2, 3]).tolist()
    assert le.up == pytest.approx(np.mean(h < 3)) and le.down == 0.0  # the rule: every grade below 3 goes up
    assert le.n_pairs == len(pairs)
    # per query: linear-weighted κ as scikit-learn computes it, worst first
    expected = {}
    for q, docs in qrels.items():
        hq = [docs[d] for d in docs]
        jq = [judge[q][d] for d in docs]
        expected[q] = cohen_kappa_score(hq, jq, labels=[0, 1, 2, 3], weights="linear")
    got = [(a.query_id, a.kappa, a.n) for a in report.per_query]
    assert [k for _, k, _ in got] == sorted(k for _, k, _ in got)
    for q, kappa, n in got:
        assert kappa == pytest.approx(expected[q]) and n == 60
    assert "grades up by +" in report.verdict and "n 180" in report.verdict


@pytest.mark.parametrize("batch_rows", [1, 1000])
def test_runs_read_in_batches_score_as_pytrec_eval(monkeypatch, batch_rows):
    # runs of 30 queries × 10 lines: a batch of one run (any limit up to 300 lines), or of four (1,000 is passed
    # on the fourth run's lines) and the last two; every run × query value under both labels is pytrec_eval's
    monkeypatch.setattr("eval_core.judges.trust.BATCH_ROWS", batch_rows)
    qrels, runs = trust_collection()
    judge = lenient(qrels)
    report = judge_trust(qrels, judge, runs)
    human, jud = per_query(qrels, runs), per_query(judge, runs)
    values = report.values
    assert values is not None and len(values) == 6 * 30
    for row in values.itertuples(index=False):
        assert row.human == pytest.approx(human[row.run][row.query_id], abs=1e-12)
        assert row.judge == pytest.approx(jud[row.run][row.query_id], abs=1e-12)
    assert [s.run for s in report.ranking.runs] == RUNS


def test_verdict_says_no_bias_when_it_rounds_to_zero_and_down_when_harsh():
    qrels, runs = trust_collection()
    # the swapping judge only trades r2's and r3's values: judge − people sums to exactly 0 over run × query
    report = judge_trust(qrels, swapping(qrels, "r2", "r3"), runs)
    assert report.leniency.bias == pytest.approx(0.0, abs=1e-12)
    assert "it grades neither up nor down on balance (bias 0.00 ndcg@10; limits " in report.verdict
    assert "grades up" not in report.verdict and "grades down" not in report.verdict
    # a harsh judge (every grade one down, 0 stays 0): its bias from pytrec_eval's values, worded by its sign
    harsh = {q: {d: max(0, g - 1) for d, g in docs.items()} for q, docs in qrels.items()}
    human, jud = per_query(qrels, runs), per_query(harsh, runs)
    bias = np.mean([jud[r][q] - human[r][q] for r in RUNS for q in human[r]])
    assert bias < -0.005
    assert f"it grades down by {bias:+.2f} ndcg@10 (limits " in judge_trust(qrels, harsh, runs).verdict


def test_a_real_flip_that_lets_a_run_into_the_judges_top_k_touches_the_top():
    qrels, runs = trust_collection()
    # swapping r1 (people's 2nd) and r4 (5th): the judge ranks r0 r4 r2 r3 r1 r5, so its top 2 is r0 r4 and the
    # flipped pairs are r1>r2, r1>r3, r1>r4, r2>r4, r3>r4: each holds r1 (people's top 2) or r4 (the judge's)
    report = judge_trust(qrels, swapping(qrels, "r1", "r4"), runs, top=2)
    human = per_query(qrels, runs)
    flipped = [("r1", "r2"), ("r1", "r3"), ("r1", "r4"), ("r2", "r4"), ("r3", "r4")]
    assert sorted((f.better, f.worse) for f in report.ranking.flips) == flipped
    real = []
    for a, b in flipped:
        d = np.array([human[a][q] - human[b][q] for q in sorted(human[a])])
        low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
        if not low <= 0 <= high:
            real.append((a, b))
    assert ("r1", "r4") in real  # people's 2nd and 5th are far apart
    assert sorted((f.better, f.worse) for f in report.ranking.top_flips) == real
    assert report.ranking.top_overlap == 1
    # the judge's top 2 is r0 r4, people's r0 r1: one in both
    assert (
        f"{len(real)} beyond people's own noise ({len(real)} touching the top 2, top-2 overlap 1/2)" in report.verdict
    )
    assert "no real flip touches the top" not in report.verdict


def test_bland_altman_edges():
    assert bland_altman(np.array([]), np.array([])) == (None, None, None)
    assert bland_altman(np.array([0.5]), np.array([0.7]))[0] == pytest.approx(0.2)


def test_hybrid_equals_ppi_py():
    ppi_py = pytest.importorskip("ppi_py")
    qrels, runs = trust_collection(queries=40)
    judge = lenient(qrels)
    people = {q: docs for q, docs in qrels.items() if int(q[1:]) < 15}  # people judged 15 of 40 queries
    report = judge_trust(people, judge, runs, target_width=0.1)
    human, jud = per_query(people, runs), per_query(judge, runs)
    labelled = sorted(people)
    unlabelled = sorted(set(qrels) - set(people))
    assert len(report.hybrid) == 6
    for h in report.hybrid:
        y = np.array([human[h.run][q] for q in labelled])
        yhat = np.array([jud[h.run][q] for q in labelled])
        yu = np.array([jud[h.run][q] for q in unlabelled])
        assert h.estimate == pytest.approx(_one(ppi_py.ppi_mean_pointestimate(y, yhat, yu)), abs=1e-12)
        low, high = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05)
        assert h.ci == pytest.approx((_one(low), _one(high)), abs=1e-12)
        c_low, c_high = ppi_py.classical_mean_ci(y, alpha=0.05)
        assert h.human_ci == pytest.approx((_one(c_low), _one(c_high)), abs=1e-12)
        assert h.human_mean == pytest.approx(y.mean())
        assert h.judge_mean == pytest.approx(np.mean([jud[h.run][q] for q in qrels]))
        assert (h.n_human, h.n_judge_only) == (15, 25)
    # the queries people would need: the smallest n whose interval (measured variances, λ tuned for n) is narrow
    # enough for every run, so one fewer is not
    n = report.queries_needed
    assert n is not None and report.target_width == 0.1
    samples = []
    for h in report.hybrid:
        y = np.array([human[h.run][q] for q in labelled])
        yhat = np.array([jud[h.run][q] for q in labelled])
        samples.append((y, yhat, np.array([jud[h.run][q] for q in sorted(qrels)])))
    assert f"hybrid intervals 0.1 wide need {n} people-judged queries of 40 (15 now)" in report.verdict
    assert all(width_at(*s, n, 40, 0.95) <= 0.1 for s in samples)
    assert any(width_at(*s, n - 1, 40, 0.95) > 0.1 for s in samples)
    assert queries_needed(samples, 40, 1e-6, 0.95) is None


def test_ppi_mean_clips_lambda_and_matches_ppi_py_on_an_anti_correlated_judge():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(3)
    y = rng.random(20)
    yhat = 1 - y + rng.normal(0, 0.05, 20)  # anti-correlated: λ clips to 0, the estimate is people's mean
    yu = rng.random(50)
    lam, est, ci = ppi_mean(y, yhat, yu)
    assert lam == 0.0
    assert est == pytest.approx(_one(ppi_py.ppi_mean_pointestimate(y, yhat, yu)))
    assert ci == pytest.approx(tuple(_one(v) for v in ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05)))


def test_circularity_warns_on_the_judges_family():
    assert model_family("gpt-4o-mini") == model_family("openai/GPT-4.1") == "gpt"
    assert model_family("Llama-3.1-8B") == "llama" and model_family("qwen2.5-7b") == "qwen"
    warnings = circularity("gpt-4o", {"a": "gpt-4.1-mini", "b": "llama-3", "c": None})
    assert len(warnings) == 1 and "run a" in warnings[0] and "gpt" in warnings[0]
    assert circularity(None, {"a": "gpt-4"}) == []
    # no recorded model: the run's name (its tag) may name the family, as a word start
    named = circularity("gpt-4o", {"bm25+gpt4o-rerank": None, "chatgpt": None, "bm25": None, "x": "llama"})
    assert len(named) == 1 and named[0].startswith("run bm25+gpt4o-rerank names the judge's model family (gpt)")
    assert circularity("o1", {"o1-run": None}) == []  # too short a family to guess from a name


def test_refusals():
    qrels, runs = trust_collection(queries=3, runs=2)
    with pytest.raises(ValueError, match="one metric"):
        judge_trust(qrels, qrels, runs, metric="ndcg@k")
    other = {"zz": {"d": 1}}
    with pytest.raises(ValueError, match="share no query"):
        judge_trust(qrels, other, runs)

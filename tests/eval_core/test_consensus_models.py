"""Dawid–Skene, MACE and GLAD against crowd-kit (the reference) on crowds with a known truth, the ordinal
decision, known truth, and the spammer flag."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eval_core.consensus import consensus, decide
from eval_core.consensus.annotators import annotator_report
from eval_core.consensus.models import Crowd, _Glad, _softplus_pair, dawid_skene, glad, mace
from eval_core.consensus.simulate import simulate_crowd

crowdkit = pytest.importorskip("crowdkit.aggregation")

KINDS = ["good", "good", "good", "lenient", "harsh", "spammer"]


def _crowd(n_pairs: int, seed: int = 1) -> tuple[pd.DataFrame, Crowd, pd.Index, pd.Index, pd.Index]:
    """crowd-kit's frame (task, worker, label) and the same judgments as codes (sorted names and grades).

    crowd-kit's MACE numbers workers and labels in order of first appearance but reads its strategy counts
    back from a groupby sorted by worker and label; rows sorted by (label, worker) make the two orders the same
    (asserted), so the comparison is not of that mismatch."""
    judgments, _ = simulate_crowd(n_pairs, KINDS, per_pair=4, seed=seed)
    df = judgments.rename(columns={"fragment_id": "task", "annotator": "worker", "grade": "label"})
    df = df[["task", "worker", "label"]].sort_values(["label", "worker"], kind="stable").reset_index(drop=True)
    assert list(pd.unique(df["worker"])) == sorted(df["worker"].unique())
    assert list(pd.unique(df["label"])) == sorted(df["label"].unique())
    t, tasks = pd.factorize(df["task"], sort=True)
    w, workers = pd.factorize(df["worker"], sort=True)
    lab, labels = pd.factorize(df["label"], sort=True)
    return df, Crowd.of(t, w, lab, len(tasks), len(workers), len(labels)), tasks, workers, labels


def _probas(frame: pd.DataFrame, tasks: pd.Index, labels: pd.Index) -> np.ndarray:
    return frame.reindex(index=tasks, columns=labels).to_numpy(dtype=np.float64)


def test_dawid_skene_equals_crowdkit() -> None:
    df, crowd, tasks, workers, labels = _crowd(300)
    ref = crowdkit.DawidSkene(n_iter=100, tol=1e-5)
    expected = _probas(ref.fit_predict_proba(df), tasks, labels)
    fit = dawid_skene(crowd)
    assert fit.iterations == len(ref.loss_history_)
    np.testing.assert_allclose(fit.posterior, expected, rtol=0, atol=1e-6)
    assert (fit.posterior.argmax(axis=1) == expected.argmax(axis=1)).all()
    assert fit.posterior.min() >= 1e-10  # clipped as crowd-kit clips
    assert fit.confusion is not None
    for w, name in enumerate(workers):
        errors = ref.errors_.loc[name]  # rows: the label given, columns: the true label
        for given in errors.index:
            for true in errors.columns:
                g, c = labels.get_loc(given), labels.get_loc(true)
                assert fit.confusion[w, c, g] == pytest.approx(errors.loc[given, true], abs=1e-6)


def test_dawid_skene_with_known_truth_equals_crowdkit_true_labels() -> None:
    df, crowd, tasks, _, labels = _crowd(300, seed=2)
    gold = pd.Series(df.drop_duplicates("task").set_index("task")["label"]).iloc[:40]
    ref = crowdkit.DawidSkene(n_iter=100, tol=1e-5)
    expected = _probas(ref.fit_predict_proba(df, true_labels=gold), tasks, labels)
    truth = np.full(len(tasks), -1)
    truth[tasks.get_indexer(gold.index)] = labels.get_indexer(gold.to_numpy())
    fit = dawid_skene(crowd.with_truth(truth))
    np.testing.assert_allclose(fit.posterior, expected, rtol=0, atol=1e-6)
    known = tasks.get_indexer(gold.index)
    assert (fit.posterior[known].argmax(axis=1) == labels.get_indexer(gold.to_numpy())).all()


@pytest.mark.slow
def test_mace_equals_crowdkit() -> None:
    """Defaults: 10 restarts (all seeded alike), 50 iterations, variational Bayes, random_state 0."""
    df, crowd, tasks, _, labels = _crowd(80, seed=3)
    ref = crowdkit.MACE()
    expected = _probas(ref.fit_predict_proba(df), tasks, labels)
    fit = mace(crowd)
    np.testing.assert_allclose(fit.posterior, expected, rtol=0, atol=1e-6)
    assert fit.competence is not None
    np.testing.assert_allclose(fit.competence, ref.spamming_[:, 1], rtol=0, atol=1e-6)


@pytest.mark.slow
def test_glad_equals_crowdkit() -> None:
    """Same model, same settings; the tolerances are what crowd-kit's own answer allows.

    - One EM step (one CG M-step): equal to 1e-8.
    - Defaults (25 CG steps per M-step at gtol 1e-2, EM stopped when Q per cell gains < 1e-5): the fit stops
      far from the optimum (Q still climbs ~1e-5 a step), and the cut CG turns last-bit differences of the
      sums into ~1e-3 in a posterior. crowd-kit alone shows it: the same rows in three other orders moved its
      posteriors by 1.2e-3, 1.3e-3 and 2.2e-3 (one order is re-run below, its spread asserted > 1e-4). Ours
      (one fixed summation order) was 1.4e-3 from it, so the bound is 5e-3, about twice crowd-kit's own
      spread, with the same labels and the stopping step at most one apart.
    - Matched settings at tight tolerance (CG up to 500 steps, gtol 1e-9): both reach the same optimum.
      Measured: posteriors 6.5e-8 apart, abilities 9.3e-8, difficulties 4.9e-8, and our own fit moved by
      up to 1e-7 when its sums were taken in another order, the optimizer's floor; 1e-6 is ten times that."""
    df, crowd, tasks, workers, labels = _crowd(40, seed=4)
    one = crowdkit.GLAD(n_iter=1)
    np.testing.assert_allclose(
        glad(crowd, n_iter=1).posterior, _probas(one.fit_predict_proba(df), tasks, labels), rtol=0, atol=1e-8
    )
    ref = crowdkit.GLAD()
    expected = _probas(ref.fit_predict_proba(df), tasks, labels)
    reordered = _probas(crowdkit.GLAD().fit_predict_proba(df.sample(frac=1.0, random_state=0)), tasks, labels)
    assert np.abs(reordered - expected).max() > 1e-4  # crowd-kit's own answer depends on the row order
    fit = glad(crowd)
    assert abs(fit.iterations - len(ref.loss_history_)) <= 1  # the drift can cross the stopping rule a step apart
    assert (fit.posterior.argmax(axis=1) == expected.argmax(axis=1)).all()
    np.testing.assert_allclose(fit.posterior, expected, rtol=0, atol=5e-3)
    converged = crowdkit.GLAD(m_step_max_iter=500, m_step_tol=1e-9)
    expected = _probas(converged.fit_predict_proba(df), tasks, labels)
    fit = glad(crowd, m_step_max_iter=500, m_step_tol=1e-9)
    assert fit.iterations == len(converged.loss_history_)
    np.testing.assert_allclose(fit.posterior, expected, rtol=0, atol=1e-6)
    assert fit.ability is not None and fit.difficulty is not None
    np.testing.assert_allclose(fit.ability, converged.alphas_.reindex(workers).to_numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(fit.difficulty, converged.betas_.reindex(tasks).to_numpy(), rtol=0, atol=1e-6)


def test_glad_softplus_is_crowdkits_with_its_cut() -> None:
    """One exponential gives softplus(−x), softplus(x) and e^(−x); crowd-kit's softplus is the reference, on
    both sides of its cut at ±30 and far past where e^x overflows. softplus(x) is taken as softplus(−x) + x, so
    near x = −30 it loses the tiny value's relative precision (9.24e-14 for 9.36e-14) but keeps the absolute
    one (~1e-15, an ulp of 30): these are log likelihoods added to sums of order one and more."""
    x = np.array([-800.0, -710.0, -30.5, -30.0, -29.9, -5.0, -1e-9, 0.0, 0.3, 12.0, 30.0, 30.5, 710.0, 800.0])
    negative, positive, e = _softplus_pair(x)
    np.testing.assert_allclose(negative, crowdkit.GLAD._softplus(-x), rtol=1e-15, atol=1e-14)
    np.testing.assert_allclose(positive, crowdkit.GLAD._softplus(x), rtol=1e-15, atol=1e-14)
    assert negative[0] == 800.0 and positive[0] == 0.0 and negative[-1] == 0.0 and positive[-1] == 800.0
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(e, np.exp(-x))


def test_glad_gradient_is_the_derivative_of_its_objective() -> None:
    """The M-step's gradient against central differences of its value, at a point away from the start (the
    hand-derived ∂Q/∂α_w = Σ e^β_t·(p_label − σ·Σp) − (α_w − 1) and ∂Q/∂β_t = Σ α_w·e^β_t·(…) − (β_t − 1) must be
    the objective's slope, or CG walks the wrong way). Step 1e-6: truncation ~1e-12, rounding ~1e-10·|Q|."""
    _, crowd, _, _, _ = _crowd(30, seed=5)
    model = _Glad(crowd)
    rng = np.random.default_rng(0)
    model.e_step(np.ones(crowd.n_workers + crowd.n_tasks))
    x = rng.normal(1.0, 0.7, size=crowd.n_workers + crowd.n_tasks)
    h = 1e-6
    numeric = np.array([(model.value(x + h * unit) - model.value(x - h * unit)) / (2 * h) for unit in np.eye(len(x))])
    np.testing.assert_allclose(model.gradient(x), numeric, rtol=0, atol=1e-6)
    assert np.abs(numeric).max() > 0.1  # not a flat point


def test_glad_fit_does_not_depend_on_the_order_of_the_rows() -> None:
    """The same judgments in another order give the same fit, bit for bit: the sums are taken in one order.
    (Summed in input order, this crowd's posteriors moved by up to 1.9e-3 between orders, see above.)"""
    _, crowd, _, _, _ = _crowd(40, seed=4)
    fit = glad(crowd)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(len(crowd.task))
        other = glad(
            Crowd.of(
                crowd.task[perm], crowd.worker[perm], crowd.label[perm], crowd.n_tasks, crowd.n_workers, crowd.n_labels
            )
        )
        assert other.iterations == fit.iterations
        np.testing.assert_array_equal(other.posterior, fit.posterior)
        assert other.ability is not None and fit.ability is not None
        np.testing.assert_array_equal(other.ability, fit.ability)


def test_glad_with_one_grade_is_certain() -> None:
    """Everyone gave the same grade: K − 1 = 0 other labels, so no log(0) enters Q; every posterior is 1."""
    _, crowd, _, _, _ = _crowd(40, seed=4)
    single = Crowd.of(crowd.task, crowd.worker, np.zeros_like(crowd.label), crowd.n_tasks, crowd.n_workers, 1)
    with np.errstate(all="raise"):
        fit = glad(single)
    np.testing.assert_array_equal(fit.posterior, 1.0)
    assert fit.ability is not None and np.isfinite(fit.ability).all()


def test_least_abs_error_is_the_posterior_lower_median() -> None:
    # cumulative 0.45, 0.50, 0.95, 1: the first grade reaching half the mass is 1 (expected |error| at 1 is
    # 0.45·1 + 0.05·0 + 0.45·1 + 0.05·2 = 1.00, at 2 it is 0.45·2 + 0.05·1 + 0 + 0.05·1 = 1.00 — a tie, lower
    # median taken; the most probable grade is 0 and 2 (tie: first)
    posterior = np.array([[0.45, 0.05, 0.45, 0.05], [0.1, 0.2, 0.3, 0.4], [0.4, 0.0, 0.0, 0.6]])
    assert decide(posterior, "least-abs-error").tolist() == [1, 2, 3]
    assert decide(posterior, "most-probable").tolist() == [0, 3, 3]


def test_models_find_more_truth_than_median_and_the_spammer_is_flagged() -> None:
    kinds = ["good"] * 4 + ["lenient"] * 2 + ["harsh"] * 2 + ["spammer"] * 2
    judgments, truth = simulate_crowd(3000, kinds, per_pair=3, hard=0.15, seed=7)
    key = truth.set_index(["query_id", "fragment_id"])["grade"]

    def accuracy(rule: str, decision: str = "most-probable") -> float:
        labels = consensus(judgments, rule=rule, decision=decision).set_index(["query_id", "fragment_id"])
        return float((labels["grade"] == key.reindex(labels.index)).mean())

    median = accuracy("median")
    for rule in ("dawid-skene", "mace", "glad"):
        assert accuracy(rule) > median, rule
    assert accuracy("dawid-skene") > median + 0.05
    report = annotator_report(judgments, replicates=200, seed=0)
    flagged = {a.annotator for a in report.annotators if a.spammer}
    assert flagged == {"spammer-008", "spammer-009"}
    spam = next(a for a in report.annotators if a.annotator == "spammer-008")
    assert spam.advice is not None and "qualification round" in spam.advice and "re-judging" in spam.advice
    good = next(a for a in report.annotators if a.annotator == "good-000")
    assert good.ci is not None and good.ci[0] > 0.5
    # the lenient annotator's estimated confusion: from a true 1, grade 2 more often than 1 (SHIFT 0.6)
    lenient = next(a for a in report.annotators if a.annotator == "lenient-004")
    assert lenient.confusion[1][2] > lenient.confusion[1][1]


def test_model_rule_posteriors_and_known_truth() -> None:
    judgments, truth = simulate_crowd(400, KINDS, per_pair=3, seed=11)
    adjudications = truth.iloc[:5][["query_id", "fragment_id", "grade"]].assign(grade=lambda f: 3 - f["grade"])
    controls = truth.iloc[5:10][["query_id", "fragment_id", "grade"]].assign(grade=lambda f: 3 - f["grade"])
    out = consensus(judgments, rule="dawid-skene", adjudications=adjudications, controls=controls)
    sums = out["posterior"].map(lambda p: sum(p.values()))
    np.testing.assert_allclose(sums.to_numpy(), 1.0, atol=1e-8)
    assert set(out["posterior"].iloc[0]) == {"0", "1", "2", "3"}
    by_pair = out.set_index(["query_id", "fragment_id"])
    for settled in (adjudications, controls):
        for q, f, g in settled.itertuples(index=False):
            assert by_pair.loc[(q, f), "grade"] == g
            assert by_pair.loc[(q, f), "posterior"][str(g)] == pytest.approx(1.0)
    assert consensus(judgments, rule="median")["posterior"].isna().all()


@pytest.mark.parametrize("rule", ["dawid-skene", "mace", "glad"])
def test_model_rules_do_not_depend_on_the_order_of_the_rows(rule: str) -> None:
    """A judgments file in another order (an export sorted otherwise, a merge) gives the same release: the
    same grade and the same posterior for every pair."""
    judgments, _ = simulate_crowd(60, KINDS, per_pair=3, seed=7)

    def labels(frame: pd.DataFrame) -> pd.DataFrame:
        out = consensus(frame, rule=rule, scale=(0, 3))
        return out.sort_values(["query_id", "fragment_id"]).reset_index(drop=True)

    first = labels(judgments)
    for seed in range(2):
        shuffled = judgments.sample(frac=1.0, random_state=seed).reset_index(drop=True)
        again = labels(shuffled)
        assert again["grade"].tolist() == first["grade"].tolist()
        for a, b in zip(again["posterior"], first["posterior"], strict=True):
            assert a.keys() == b.keys()
            assert [a[k] for k in a] == pytest.approx([b[k] for k in b], abs=1e-9)

"""Dawid–Skene, MACE and GLAD against crowd-kit (the reference) on crowds with a known truth, the ordinal
decision, known truth, and the spammer flag."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eval_core.consensus import consensus, decide
from eval_core.consensus.annotators import annotator_report
from eval_core.consensus.models import Crowd, dawid_skene, glad, mace
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
    """GLAD's M-step is SciPy's CG stopped after 25 iterations at tol 1e-2, far from converged, so it magnifies
    the last-bit differences between crowd-kit's pandas sums (Kahan-compensated groupby) and numpy's bincount:
    after one EM step the two agree to 1e-8, after several the stopping points drift apart (up to ~1e-3 in a
    posterior) while every label stays the same. Run the M-step to convergence and both reach the same
    optimum: equal to 1e-6."""
    df, crowd, tasks, workers, labels = _crowd(40, seed=4)
    one = crowdkit.GLAD(n_iter=1)
    np.testing.assert_allclose(
        glad(crowd, n_iter=1).posterior, _probas(one.fit_predict_proba(df), tasks, labels), rtol=0, atol=1e-8
    )
    ref = crowdkit.GLAD()
    expected = _probas(ref.fit_predict_proba(df), tasks, labels)
    fit = glad(crowd)
    assert abs(fit.iterations - len(ref.loss_history_)) <= 1  # the drift can cross the stopping rule a step apart
    assert (fit.posterior.argmax(axis=1) == expected.argmax(axis=1)).all()
    np.testing.assert_allclose(fit.posterior, expected, rtol=0, atol=1e-2)
    converged = crowdkit.GLAD(m_step_max_iter=500, m_step_tol=1e-9)
    expected = _probas(converged.fit_predict_proba(df), tasks, labels)
    fit = glad(crowd, m_step_max_iter=500, m_step_tol=1e-9)
    np.testing.assert_allclose(fit.posterior, expected, rtol=0, atol=1e-6)
    assert fit.ability is not None
    np.testing.assert_allclose(fit.ability, converged.alphas_.reindex(workers).to_numpy(), rtol=0, atol=1e-5)


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

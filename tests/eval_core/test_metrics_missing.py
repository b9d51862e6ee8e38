"""`missing` (zero | skip) and `trec_eval_version` (10 | 9) on evaluate(), against pytrec_eval and ranx.

pytrec_eval scores the queries both files have and its users average what it returns (the mean over the run's
queries); ranx reports the same mean. trec_eval 9 (inside pytrec_eval) compares scores as float32, so
1.00000001 and 1.0 tie there and the tie goes to the greater docid; trec_eval 10 keeps them apart.
"""

from __future__ import annotations

import pytest

from eval_core.ranking.evaluation import evaluate

pytrec_eval = pytest.importorskip("pytrec_eval")
ranx = pytest.importorskip("ranx")

QRELS = {
    "q1": {"a": 1, "b": 0, "c": 2},
    "q2": {"d": 1, "e": 1},
    "q3": {"f": 3},  # no run line: missing
}
RUN = {
    "q1": {"a": 1.0, "b": 1.00000001, "c": 0.5, "x": 0.4},  # a and b tie in float32: b ("b" > "a") first in 9
    "q2": {"y": 2.0, "d": 1.5, "e": 1.0},
}
PYTREC = {"map": "map", "P@1": "P_1", "mrr": "recip_rank", "ndcg@3": "ndcg_cut_3", "recall@2": "recall_2"}


def _pytrec_means() -> dict[str, float]:
    evaluator = pytrec_eval.RelevanceEvaluator(QRELS, set(PYTREC.values()))
    per_query = evaluator.evaluate(RUN)
    return {ours: sum(v[theirs] for v in per_query.values()) / len(per_query) for ours, theirs in PYTREC.items()}


def test_skip_and_version_9_give_pytrec_evals_means() -> None:
    ev = evaluate(QRELS, RUN, metrics=list(PYTREC), missing="skip", trec_eval_version=9)
    expected = _pytrec_means()
    for metric, value in expected.items():
        assert ev.mean[metric] == pytest.approx(value, abs=1e-9), metric
    assert list(ev.per_query.index) == ["q1", "q2"]
    assert str(ev.missing) == "skip" and ev.trec_eval_version == 9
    assert any("left out of the means" in w for w in ev.warnings)


def test_zero_averages_over_every_qrels_query() -> None:
    """zero (the default): q3 scores 0 and counts, so each mean is 2/3 of the mean over the run's queries."""
    skip = evaluate(QRELS, RUN, metrics=list(PYTREC), missing="skip", trec_eval_version=9)
    zero = evaluate(QRELS, RUN, metrics=list(PYTREC), trec_eval_version=9)
    for metric in PYTREC:
        assert zero.mean[metric] == pytest.approx(skip.mean[metric] * 2 / 3, abs=1e-12)
    assert zero.to_dict()["missing"] == "zero" and zero.to_dict()["trec_eval_version"] == 9


def test_version_10_keeps_apart_scores_float32_ties() -> None:
    """By hand: a = 1.00000001 (relevant), z = 1.0. In 10, a ranks first: P@1 = 1. In 9 they tie in float32 and
    the greater docid, z (non-relevant), ranks first: P@1 = 0, which is pytrec_eval's value."""
    qrels = {"q": {"a": 1, "z": 0}}
    run = {"q": {"a": 1.00000001, "z": 1.0}}
    v10 = evaluate(qrels, run, metrics=["P@1"]).mean["P@1"]
    v9 = evaluate(qrels, run, metrics=["P@1"], trec_eval_version=9).mean["P@1"]
    assert (v10, v9) == (1.0, 0.0)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"P_1"}).evaluate(run)["q"]["P_1"]
    assert v9 == theirs


@pytest.mark.slow  # ranx compiles its kernels with numba on first use
def test_skip_gives_ranx_means() -> None:
    """ranx's mean over the queries the run answers (the qrels cut to them, as a ranx user's pipeline does)."""
    qrels = ranx.Qrels({q: dict(QRELS[q]) for q in RUN})
    run = ranx.Run({q: dict(d) for q, d in RUN.items()})
    theirs = ranx.evaluate(qrels, run, ["map", "mrr"])
    ours = evaluate(QRELS, RUN, metrics=["map", "mrr"], missing="skip")
    assert ours.mean["map"] == pytest.approx(theirs["map"], abs=1e-9)
    assert ours.mean["mrr"] == pytest.approx(theirs["mrr"], abs=1e-9)


@pytest.mark.parametrize(("missing", "version"), [("none", 10), ("zero", 11)])
def test_bad_choices_are_refused(missing: str, version: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        evaluate(QRELS, RUN, metrics=["map"], missing=missing, trec_eval_version=version)

"""On a scale whose lowest grade is not 0 (1–3, 1–5) that lowest grade still means "not relevant": the store's
evaluations count relevance from the scale's second grade, checked against pytrec_eval's relevance_level."""

from __future__ import annotations

import pandas as pd
import pytest
import pytrec_eval

from db.evaluations import score_run
from eval_core.judgments import relevant_from

QRELS = {"q1": {"a": 1, "b": 3, "c": 2, "d": 1}, "q2": {"e": 1, "f": 1, "g": 2}}
RUN = {"q1": {"a": 9.0, "d": 8.0, "b": 7.0, "x": 6.0, "c": 5.0}, "q2": {"e": 9.0, "f": 8.0, "g": 7.0, "y": 6.0}}


def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    qrels = pd.DataFrame([(q, d, g) for q, docs in QRELS.items() for d, g in docs.items()],
                         columns=["query_id", "doc_id", "grade"])
    run = pd.DataFrame([(q, d, s) for q, docs in RUN.items() for d, s in docs.items()],
                       columns=["query_id", "doc_id", "score"])
    return qrels, run


@pytest.mark.parametrize(("scale", "expected"), [((0, 3), 1), ((1, 3), 2), ((1, 5), 2), ((2, 4), 3)])
def test_relevance_starts_at_the_second_grade(scale: tuple[int, int], expected: int) -> None:
    assert relevant_from(scale) == expected


@pytest.mark.parametrize("scale", [(0, 3), (1, 3)])
def test_stored_evaluation_counts_relevance_from_the_scales_second_grade(scale: tuple[int, int]) -> None:
    qrels, run = frames()
    result = score_run(qrels, run, "r", scale)
    reference = pytrec_eval.RelevanceEvaluator(QRELS, {"P_5", "recip_rank", "map"},
                                               relevance_level=relevant_from(scale)).evaluate(RUN)
    for metric, name in (("P@5", "P_5"), ("mrr", "recip_rank"), ("map", "map")):
        expected = sum(reference[q][name] for q in QRELS) / len(QRELS)
        assert result.mean[metric] == pytest.approx(expected, abs=1e-12), metric
    if scale == (1, 3):  # grade 1 ("off topic") no longer counts: q1's first hit is b at rank 3, q2's g at rank 3
        assert result.mean["mrr"] == pytest.approx(1 / 3)

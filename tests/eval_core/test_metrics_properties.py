"""Properties every run must satisfy (hypothesis, bounded): monotone recall, precision ceilings, order invariance."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_core import evaluate

KS = (1, 2, 3, 5, 10, 20)
DOCS = [f"d{i}" for i in range(25)]


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict, dict]:
    """Small qrels and runs with ties, unjudged docs and queries missing on either side."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(draw(st.integers(1, 6))):
        qid = f"q{q}"
        if draw(st.booleans()) or not qrels:
            judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=12, unique=True))
            qrels[qid] = {d: draw(st.integers(0, 3)) for d in judged}
        if draw(st.integers(0, 4)):
            ranked = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=25, unique=True))
            run[qid] = {d: float(draw(st.integers(0, 5))) for d in ranked}
    return qrels, run


METRICS = ["recall@k", "P@k", "P_ceiling@k", "ndcg@k", "success@k", "map", "mrr", "bpref", "ndcg", "rprec"]


@settings(max_examples=40, deadline=None)
@given(cases(), st.integers(1, 3))
def test_recall_monotone_and_precision_under_ceiling(case: tuple[dict, dict], rel_level: int) -> None:
    qrels, run = case
    pq = evaluate(qrels, run, metrics=METRICS, k=KS, rel_level=rel_level).per_query
    recall = pq[[f"recall@{k}" for k in KS]].to_numpy()
    assert (np.diff(recall, axis=1) >= -1e-12).all()
    for k in KS:
        assert (pq[f"P@{k}"] <= pq[f"P_ceiling@{k}"] + 1e-12).all()
    values = pq.to_numpy()
    assert ((values >= -1e-12) & (values <= 1 + 1e-12)).all()


@settings(max_examples=40, deadline=None)
@given(cases(), st.randoms(use_true_random=False))
def test_invariant_to_query_and_row_order(case: tuple[dict, dict], rnd: random.Random) -> None:
    """Shuffling queries and the rows inside each query (scores kept) changes nothing."""
    qrels, run = case
    before = evaluate(qrels, run, metrics=METRICS, k=KS).per_query.sort_index()

    def shuffled(d: dict) -> dict:
        keys = list(d)
        rnd.shuffle(keys)
        out = {}
        for k in keys:
            items = list(d[k].items())
            rnd.shuffle(items)
            out[k] = dict(items)
        return out

    after = evaluate(shuffled(qrels), shuffled(run), metrics=METRICS, k=KS).per_query.sort_index()
    assert before.index.equals(after.index)
    np.testing.assert_allclose(before.to_numpy(), after.to_numpy(), rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(cases())
def test_condensed_equals_scoring_the_judged_only_run(case: tuple[dict, dict]) -> None:
    """`<metric>_condensed` is defined as the metric on the run with unjudged documents removed."""
    qrels, run = case
    judged_only = {q: {d: s for d, s in docs.items() if d in qrels.get(q, {})} for q, docs in run.items()}
    judged_only = {q: docs for q, docs in judged_only.items() if docs}
    names = ["P@5", "ndcg@10", "map", "mrr", "bpref"]
    cond = evaluate(qrels, run, metrics=[f"{m}_condensed" for m in names]).per_query
    plain = evaluate(qrels, judged_only, metrics=names).per_query
    np.testing.assert_allclose(cond.to_numpy(), plain.to_numpy(), rtol=0, atol=1e-12)

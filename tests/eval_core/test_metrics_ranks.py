"""trec_eval's ranks of judged rows (score descending, ties by docid descending in byte order), worked out by
hand: a tie is met only within a query, never with the neighbouring query's equal score."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from eval_core.io.columns import columns_of
from eval_core.ranking.metrics import index_qrels, rank_run

# query a: 3 | 2 2 (docids a1 < a2: a2 ranks first); query b: 2 (no tie: a's 2 is another query's) | 1 1
LINES = [("a", "a0", 3.0), ("a", "a1", 2.0), ("a", "a2", 2.0), ("b", "b0", 2.0), ("b", "b1", 1.0), ("b", "b2", 1.0)]
RANKS = {"a0": 1, "a2": 2, "a1": 3, "b0": 1, "b2": 2, "b1": 3}


@pytest.mark.parametrize("order", [[0, 1, 2, 3, 4, 5], [5, 3, 1, 0, 4, 2]], ids=["ranked", "shuffled"])
def test_ranks_of_tied_and_untied_rows(order: list[int]) -> None:
    lines = [LINES[i] for i in order]
    q = pa.array([qid for qid, _, _ in lines], pa.large_string())
    d = pa.array([doc for _, doc, _ in lines], pa.large_string())
    run = columns_of(q, d, np.array([score for _, _, score in lines]), "<run>")
    grade = np.array([int(doc[1]) + 1 for _, doc, _ in lines], dtype=np.int64)  # a grade naming the doc
    qi = index_qrels(columns_of(q, d, grade, "<qrels>"), rel_level=1)
    ranked = rank_run(qi, run)
    got = {f"{qi.qid_list[c]}{g - 1}": int(r) for c, g, r in zip(ranked.q, ranked.grade, ranked.rank, strict=True)}
    assert got == RANKS

"""Each query's ranked relevance values as one padded matrix, the input of every trec_eval measure.

A retrieved document's value is its qrels grade, −1 when it is not in the qrels (trec_eval's
RELVALUE_NONPOOL) and −2 when the qrels list it with a negative grade (RELVALUE_UNJUDGED, in the pool but
not judged). Rows are queries in the qrels' byte order, columns ranks; cells past a query's `num_ret`
hold PAD. `levels[q, g]` counts the query's judged documents of grade g ≥ 0, retrieved or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from eval_core.ranking.trec_eval.reading import Qrels, Results, byte_key, rank_query

NONPOOL = -1
UNJUDGED = -2
PAD = -3
BOGUS_DOCID = "ceci_nest_pas_un_docno"  # trec_eval 10.0 -c: a missing query ranks this one unjudged doc


@dataclass(eq=False)
class RelMatrix:
    """What the measures read: ranked values, judged counts per grade, and which rows stand for a missing query."""

    qids: list[str]
    rels: np.ndarray       # int64 [queries, max num_ret], PAD past num_ret
    num_ret: np.ndarray    # int64 [queries]
    levels: np.ndarray     # int64 [queries, grades]
    bogus: np.ndarray      # bool [queries]: trec_eval 10.0's stand-in ranking of a query missing from the run
    rel_level: int

    @cached_property
    def valid(self) -> np.ndarray:
        return np.arange(self.rels.shape[1]) < self.num_ret[:, None]

    @cached_property
    def isrel(self) -> np.ndarray:
        """Retrieved with grade ≥ -l."""
        return self.valid & (self.rels >= self.rel_level)

    @cached_property
    def cum(self) -> np.ndarray:
        """Relevant documents at or above each rank."""
        return np.cumsum(self.isrel, axis=1, dtype=np.int32)

    @cached_property
    def num_rel(self) -> np.ndarray:
        return self.levels[:, max(self.rel_level, 0):].sum(axis=1)

    @property
    def num_rel_levels(self) -> np.ndarray:
        """trec_eval's num_rel_levels: one more than the highest grade with a judged document (0 if none)."""
        nz = self.levels > 0
        top = self.levels.shape[1] - np.argmax(nz[:, ::-1], axis=1)
        return np.where(nz.any(axis=1), top, 0)


def ranked_values(judged: dict[str, int], ranked: list[str], judged_only: bool) -> list[int]:
    """One query's values in rank order; with `judged_only` (-J) documents without a grade ≥ 0 are dropped."""
    values = [NONPOOL if (g := judged.get(d)) is None else (UNJUDGED if g < 0 else g) for d in ranked]
    return [v for v in values if v >= 0] if judged_only else values


def build(qrels: Qrels, results: Results, *, rel_level: int = 1, max_docs: int | None = None,
          judged_only: bool = False, complete: bool = False, bogus_missing: bool = True) -> RelMatrix:
    """The matrix for the queries trec_eval evaluates: every qrels query found in the run, and with
    `complete` (-c) the missing ones too — as trec_eval 10.0's one-unjudged-document stand-in when
    `bogus_missing`, else (version 9) not at all (they only count in the averages' denominators)."""
    qids: list[str] = []
    rows: list[list[int]] = []
    bogus: list[bool] = []
    for qid, judged in qrels.by_query.items():
        found = results.by_query.get(qid)
        if found is None:
            if not (complete and bogus_missing):
                continue
            rows.append(ranked_values(judged, [BOGUS_DOCID], judged_only))
            bogus.append(True)
        else:
            rows.append(ranked_values(judged, rank_query(found[0], found[1], max_docs), judged_only))
            bogus.append(False)
        qids.append(qid)
    width = max((len(r) for r in rows), default=0)
    rels = np.full((len(rows), width), PAD, dtype=np.int64)
    for i, r in enumerate(rows):
        rels[i, :len(r)] = r
    top = max((max((g for g in qrels.by_query[q].values()), default=0) for q in qids), default=0)
    levels = np.zeros((len(qids), max(top, 0) + 1), dtype=np.int64)
    for i, q in enumerate(qids):
        grades = np.fromiter((g for g in qrels.by_query[q].values() if g >= 0), dtype=np.int64)
        levels[i] = np.bincount(grades, minlength=levels.shape[1])
    return RelMatrix(qids, rels, np.array([len(r) for r in rows], dtype=np.int64), levels,
                     np.array(bogus, dtype=bool), rel_level)


def missing_queries(qrels: Qrels, results: Results) -> list[str]:
    """Qrels queries with no line in the run, in byte order."""
    return [q for q in qrels.by_query if q not in results.by_query]


__all__ = ["BOGUS_DOCID", "NONPOOL", "PAD", "UNJUDGED", "RelMatrix", "build", "byte_key", "missing_queries"]

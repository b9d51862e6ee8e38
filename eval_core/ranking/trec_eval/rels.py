"""Each query's ranked relevance values in compact form, the input of every trec_eval measure.

A retrieved document's value is its qrels grade, −1 when it is not in the qrels (trec_eval's
RELVALUE_NONPOOL) and −2 when the qrels list it with a negative grade (RELVALUE_UNJUDGED, in the pool but
not judged). Most retrieved documents of a big run are not in the qrels, so the matrix keeps only the
others ("hits"): row q holds query q's hits in rank order, `rank[q, h]` the 0-based rank of its h-th hit
and `value[q, h]` its value (PAD past the row's hits); every retrieved rank below `num_ret[q]` that no hit
names is NONPOOL. `materialized()` lists every retrieved rank instead (for -l ≤ −1 or a gain given to
level −1, where NONPOOL documents count). Rows are queries in the qrels' byte order. `levels[q, g]` counts
the query's judged documents of grade g ≥ 0, retrieved or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from eval_core.ranking.trec_eval.reading import Qrels, Results, byte_key, rank_query

NONPOOL = -1
UNJUDGED = -2
PAD = -3
PAD_RANK = 1 << 40  # the rank of a padding cell: past any cutoff
BOGUS_DOCID = "ceci_nest_pas_un_docno"  # trec_eval 10.0 -c: a missing query ranks this one unjudged doc


@dataclass(eq=False)
class RelMatrix:
    """What the measures read: ranked hits, judged counts per grade, and which rows stand for a missing query."""

    qids: list[str]
    rank: np.ndarray  # int64 [queries, max hits]: 0-based rank of each hit, PAD_RANK past the row's hits
    value: np.ndarray  # int [queries, max hits]: each hit's value, PAD past the row's hits
    num_ret: np.ndarray  # int64 [queries]
    levels: np.ndarray  # int64 [queries, grades]
    bogus: np.ndarray  # bool [queries]: trec_eval 10.0's stand-in ranking of a query missing from the run
    rel_level: int
    complete: bool = False  # every retrieved rank is a hit (NONPOOL ones too)

    @classmethod
    def from_hits(
        cls,
        qids: list[str],
        row: np.ndarray,
        rank: np.ndarray,
        value: np.ndarray,
        num_ret: np.ndarray,
        levels: np.ndarray,
        bogus: np.ndarray,
        rel_level: int,
        complete: bool = False,
    ) -> RelMatrix:
        """From flat hit arrays sorted by (row, rank)."""
        n = len(qids)
        counts = np.bincount(row, minlength=n) if len(row) else np.zeros(n, dtype=np.int64)
        width = int(counts.max(initial=0))
        starts = np.concatenate(([0], np.cumsum(counts)[:-1])) if n else np.zeros(0, dtype=np.int64)
        col = np.arange(len(row)) - starts[row] if len(row) else np.zeros(0, dtype=np.int64)
        small = len(value) == 0 or (int(value.max()) < 2**15 and int(value.min()) > -(2**15))
        ranks = np.full((n, width), PAD_RANK, dtype=np.int64)
        values = np.full((n, width), PAD, dtype=np.int16 if small else np.int64)
        ranks[row, col] = rank
        values[row, col] = value
        return cls(
            qids,
            ranks,
            values,
            np.asarray(num_ret, dtype=np.int64),
            levels,
            np.asarray(bogus, dtype=bool),
            rel_level,
            complete,
        )

    @classmethod
    def from_rows(
        cls, qids: list[str], rows: Sequence[Sequence[int]], levels: np.ndarray, bogus: np.ndarray, rel_level: int
    ) -> RelMatrix:
        """From each query's values in rank order (NONPOOL included)."""
        row_i, rank_i, value_i = [], [], []
        for i, r in enumerate(rows):
            arr = np.asarray(r, dtype=np.int64)
            keep = np.flatnonzero(arr != NONPOOL)
            row_i.append(np.full(len(keep), i, dtype=np.int64))
            rank_i.append(keep)
            value_i.append(arr[keep])

        def cat(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

        return cls.from_hits(
            qids,
            cat(row_i),
            cat(rank_i),
            cat(value_i),
            np.array([len(r) for r in rows], dtype=np.int64),
            levels,
            bogus,
            rel_level,
        )

    def materialized(self) -> RelMatrix:
        """The same matrix with every retrieved rank a hit (NONPOOL ones too)."""
        if self.complete:
            return self
        width = int(self.num_ret.max(initial=0))
        hit = self.hit
        full = np.full((len(self.qids), width), PAD, dtype=np.int64)
        full[np.arange(width) < self.num_ret[:, None]] = NONPOOL
        rows = np.nonzero(hit)[0]
        full[rows, self.rank[hit]] = self.value[hit]
        ranks = np.where(full != PAD, np.arange(width), PAD_RANK)
        return RelMatrix(self.qids, ranks, full, self.num_ret, self.levels, self.bogus, self.rel_level, True)

    @cached_property
    def hit(self) -> np.ndarray:
        """Cells holding a hit (not padding)."""
        return self.value != PAD

    @cached_property
    def isrel(self) -> np.ndarray:
        """Retrieved with grade ≥ -l."""
        return self.hit & (self.value >= self.rel_level)

    @cached_property
    def cum(self) -> np.ndarray:
        """Relevant documents at or above each hit."""
        return np.cumsum(self.isrel, axis=1, dtype=np.int32)

    @cached_property
    def num_rel(self) -> np.ndarray:
        return self.levels[:, max(self.rel_level, 0) :].sum(axis=1)

    @property
    def num_rel_levels(self) -> np.ndarray:
        """trec_eval's num_rel_levels: one more than the highest grade with a judged document (0 if none)."""
        nz = self.levels > 0
        top = self.levels.shape[1] - np.argmax(nz[:, ::-1], axis=1)
        return np.where(nz.any(axis=1), top, 0)

    def count_before(self, mask: np.ndarray, k: float | np.ndarray) -> np.ndarray:
        """Per query: the cells of `mask` (a subset of the hits) at a rank below k (a number or one per query)."""
        bound = np.asarray(k)[:, None] if np.ndim(k) else k
        return (mask & (self.rank < bound)).sum(axis=1)

    def hits_before(self, k: float | np.ndarray) -> np.ndarray:
        """Per query: the hits at a rank below k (a number, counted once per k however many kernels ask, or one
        per query)."""
        if np.ndim(k):
            return self.count_before(self.hit, k)
        before = self._hits_before.get(float(k))
        if before is None:
            before = self._hits_before[float(k)] = self.count_before(self.hit, k)
        return before

    def relevant_before(self, k: float | np.ndarray) -> np.ndarray:
        """Per query: the relevant hits at a rank below k. Each row's hits are in rank order, so those below k are
        its first `hits_before(k)`, and `cum` counts the relevant among them."""
        return self._cum_from_zero[np.arange(len(self.qids)), self.hits_before(k)]

    @cached_property
    def _hits_before(self) -> dict[float, np.ndarray]:
        """`hits_before(k)` of each number k asked so far."""
        return {}

    @cached_property
    def _cum_from_zero(self) -> np.ndarray:
        """`cum` as int64 after a column of zeros: [q, c] is the relevant documents among row q's first c hits."""
        return np.concatenate([np.zeros((len(self.qids), 1), dtype=np.int64), self.cum], axis=1)


def ranked_values(judged: dict[str, int], ranked: list[str], judged_only: bool) -> list[int]:
    """One query's values in rank order; with `judged_only` (-J) documents without a grade ≥ 0 are dropped."""
    values = [NONPOOL if (g := judged.get(d)) is None else (UNJUDGED if g < 0 else g) for d in ranked]
    return [v for v in values if v >= 0] if judged_only else values


def build(
    qrels: Qrels,
    results: Results,
    *,
    rel_level: int = 1,
    max_docs: int | None = None,
    judged_only: bool = False,
    complete: bool = False,
    bogus_missing: bool = True,
) -> RelMatrix:
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
    top = max((max((g for g in qrels.by_query[q].values()), default=0) for q in qids), default=0)
    levels = np.zeros((len(qids), max(top, 0) + 1), dtype=np.int64)
    for i, q in enumerate(qids):
        grades = np.fromiter((g for g in qrels.by_query[q].values() if g >= 0), dtype=np.int64)
        levels[i] = np.bincount(grades, minlength=levels.shape[1])
    return RelMatrix.from_rows(qids, rows, levels, np.array(bogus, dtype=bool), rel_level)


def missing_queries(qrels: Qrels, results: Results) -> list[str]:
    """Qrels queries with no line in the run, in byte order."""
    return [q for q in qrels.by_query if q not in results.by_query]


__all__ = ["BOGUS_DOCID", "NONPOOL", "PAD", "PAD_RANK", "UNJUDGED", "RelMatrix", "build", "byte_key", "missing_queries"]

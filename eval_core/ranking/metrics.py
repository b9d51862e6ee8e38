"""Ranking metrics for every query at once: order the run trec_eval's way, join grades, segment sums.

The hot path never loops over queries in Python. A run is reduced to its *judged* rows (the only
rows any metric needs, besides each query's retrieved count), each with its query code, 1-based
rank and grade; every metric is then a weighted `np.bincount` over those rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eval_core.io.columns import Columns
from eval_core.io.keys import arrow_ints, numpy_values, pair_keys
from eval_core.ranking.registry import (
    CONDENSED,
    DEFAULT_K,
    DEFAULT_METRICS,
    DEFAULT_P,
    NAME,
    REGISTRY,
    resolve_alias,
    trec_only,
)

__all__ = ["DEFAULT_K", "DEFAULT_METRICS", "KERNELS", "Spec", "compute", "index_qrels", "parse_metrics", "rank_run"]


@dataclass(frozen=True)
class Spec:
    """One parsed metric name: base, cutoff k or persistence p (or None), condensed flag."""

    name: str
    base: str
    arg: float | None
    condensed: bool


def parse_metrics(names: Iterable[str] | None, k: Sequence[int] = DEFAULT_K) -> list[Spec]:
    """Expand names (`P`, `P@k` and `P@5` alike) into specs; unknown names raise ValueError."""
    out: dict[str, Spec] = {}
    for raw in DEFAULT_METRICS if names is None else names:
        name = resolve_alias(raw.strip())
        if not name:
            continue
        m = NAME.match(name)
        if (not m or m["base"] not in REGISTRY) and trec_only(name):
            raise ValueError(
                f"metric {name!r} is a trec_eval measure qrelkit eval has no metric for; "
                f"use `qrelkit trec_eval -m {name}`"
            )
        if not m or m["base"] not in REGISTRY:
            raise ValueError(
                f"unknown metric {name!r}; known: {', '.join(sorted(REGISTRY))} "
                "(with @k cutoffs, rbp@p, and a _condensed suffix)"
            )
        base, arg, cond = m["base"], m["arg"], bool(m["cond"])
        kind = REGISTRY[base].cutoff
        suffix = CONDENSED if cond else ""
        if kind == "none" and arg is not None:
            raise ValueError(f"metric {name!r} takes no cutoff")
        if kind == "p":
            p = DEFAULT_P if arg in (None, "k") else float(arg)
            if not 0 < p < 1:
                raise ValueError(f"metric {name!r}: persistence p must be in (0, 1)")
            spec = Spec(f"{base}@{p:g}{suffix}", base, p, cond)
            out[spec.name] = spec
            continue
        if arg == "k" or (arg is None and kind == "k"):
            for cut in k:
                spec = Spec(f"{base}@{cut}{suffix}", base, int(cut), cond)
                out[spec.name] = spec
            continue
        if arg is not None and ("." in arg or int(arg) < 1):
            raise ValueError(f"metric {name!r}: cutoff must be a positive integer")
        spec = Spec(name, base, None if arg is None else int(arg), cond)
        out[spec.name] = spec
    return list(out.values())


class KeyCollision(RuntimeError):
    """Two different qrels pairs got one 64-bit key (never seen in practice; the keys are not a perfect hash)."""


@dataclass
class QrelsIndex:
    """Qrels prepared once: sorted (query, doc) pair keys with grades and docids, R and N per query."""

    qids: pa.Array
    keys: np.ndarray
    key_q: np.ndarray
    key_row: np.ndarray  # the qrels row of each sorted key, whose docid is docids[key_row]
    docids: pa.Array
    grades: np.ndarray
    n_rel: np.ndarray
    n_nonrel: np.ndarray
    rel_level: int
    bitmap: np.ndarray
    ideal: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    bucket_start: np.ndarray  # keys[bucket_start[b]:bucket_start[b + 1]] are the keys whose top bits are b
    bucket_shift: int


BITMAP_BITS = 22  # 4 MiB of flags: small enough to stay mostly in cache while 9M rows probe it


def _bucket(keys: np.ndarray) -> np.ndarray:
    """Bitmap slot of each docid key (its top bits; a view, no copy beyond the shift)."""
    return (keys >> np.uint64(64 - BITMAP_BITS)).view(np.int64)


def _buckets(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Where each bucket of the sorted `keys` starts, a bucket being the keys sharing their top bits, with
    about two buckets per key: a lookup then reads one key or a few instead of a binary search's twenty."""
    bits = min(max((2 * len(keys)).bit_length(), 4), 26)
    start = np.zeros((1 << bits) + 1, dtype=np.int64)
    np.cumsum(np.bincount((keys >> np.uint64(64 - bits)).view(np.int64), minlength=1 << bits), out=start[1:])
    return start, 64 - bits


def _find(qi: QrelsIndex, keys: np.ndarray) -> np.ndarray:
    """Position of each of `keys` in `qi.keys`, -1 where it is not there (exact on the 64-bit keys)."""
    at = np.full(len(keys), -1, dtype=np.int64)
    bucket = (keys >> np.uint64(qi.bucket_shift)).view(np.int64)
    lo = qi.bucket_start[bucket]
    count = qi.bucket_start[bucket + 1] - lo
    todo = np.flatnonzero(count)
    j = 0
    while len(todo):
        idx = lo[todo] + j
        hit = qi.keys[idx] == keys[todo]
        at[todo[hit]] = idx[hit]
        j += 1
        todo = todo[~hit & (count[todo] > j)]
    return at


def index_qrels(qrels: Columns, rel_level: int) -> QrelsIndex:
    """Encode qrels as sorted pair keys plus a docid bitmap, so run rows join by a prefilter and a binary search."""
    qc, grade = qrels.qcode, np.asarray(qrels.value, dtype=np.int64)
    keys = pair_keys(qrels.doc_keys, qc)
    order = np.argsort(keys)  # any order among equal keys: they are refused just below
    keys, key_q = keys[order], qc[order]
    if len(keys) > 1 and (keys[1:] == keys[:-1]).any():
        raise KeyCollision("64-bit key collision between two qrels pairs; please report this input")
    bitmap = np.zeros(1 << BITMAP_BITS, dtype=bool)
    bitmap[_bucket(qrels.doc_keys)] = True
    nq = len(qrels.qvalues)
    rel = grade >= rel_level
    # The ideal ranking for nDCG: every judged grade of the query, best first (negative grades gain 0).
    g = np.clip(grade, 0, None)
    top = int(g.max()) if len(g) else 0
    # One sort on (query, grade descending) packed in an int64; rows tied on both carry the same values.
    ideal_order = np.argsort((qc << 32) | (top - g)) if top < 2**31 else np.lexsort((-g, qc))
    iq = qc[ideal_order]
    ig = g[ideal_order].astype(np.float64)
    disc = 1.0 / np.log2(_within(iq) + 2.0)
    ideal = (iq, _within(iq) + 1, ig * disc, (2.0**ig - 1.0) * disc)
    return QrelsIndex(
        qrels.qvalues,
        keys,
        key_q,
        order,
        qrels.docid,
        grade[order],
        np.bincount(qc[rel], minlength=nq),
        np.bincount(qc[~rel & (grade >= 0)], minlength=nq),
        rel_level,
        bitmap,
        ideal,
        *_buckets(keys),
    )


@dataclass
class Ranked:
    """A run reduced to what metrics need: judged rows (query code, rank, grade) and counts per query."""

    q: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    num_ret: np.ndarray
    unknown_qids: list[str]


def _segment_starts(codes: np.ndarray) -> np.ndarray:
    """Start index of each run of equal adjacent codes."""
    if len(codes) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1))


def _ranked_already(q: np.ndarray, score: np.ndarray) -> bool:
    """Whether the rows come query by query (codes ascending, as first-seen codes are when each query's lines
    are together) and each query's scores descending: how runs are written, so no sort is needed."""
    if len(q) < 2:
        return True
    same = q[1:] == q[:-1]
    return bool((q[1:] >= q[:-1]).all() and not ((score[1:] > score[:-1]) & same).any())


def _bisect(score: np.ndarray, lo: np.ndarray, hi: np.ndarray, s: np.ndarray, strict: bool) -> np.ndarray:
    """For each i, the first index in [lo[i], hi[i]) whose score is not above s[i] (strict: is below s[i]); hi[i]
    if none. The scores are descending within each [lo, hi)."""
    lo, hi = lo.copy(), hi.copy()
    active = np.flatnonzero(lo < hi)
    while len(active):
        mid = (lo[active] + hi[active]) >> 1
        above = score[mid] >= s[active] if strict else score[mid] > s[active]
        lo[active] = np.where(above, mid + 1, lo[active])
        hi[active] = np.where(above, hi[active], mid)
        active = active[lo[active] < hi[active]]
    return lo


def _ranks(q: np.ndarray, score: np.ndarray, docid: pa.Array, rows: np.ndarray, per_code: np.ndarray) -> np.ndarray:
    """The 1-based trec_eval rank of each of `rows` within its query (score descending, ties by docid descending
    in byte order), touching little: the rows of its query with a higher score, found by binary search, plus
    those in its tied group with a greater docid. Only the tied groups holding one of `rows` are sorted by docid
    (a tie among unjudged documents moves no judged rank), and the whole run only when it is not already in
    query and score order. `per_code` counts each query code's rows."""
    order: np.ndarray | None = None
    if _ranked_already(q, score):
        pos = rows
    else:
        order = np.lexsort((-score, q))
        score = score[order]
        inverse = np.empty(len(order), dtype=np.int64)
        inverse[order] = np.arange(len(order))
        pos = inverse[rows]
    # in ranked order the queries are blocks in code order: the block of code c starts at first[c]
    first = np.concatenate(([0], np.cumsum(per_code)[:-1]))
    code = q[rows]
    q_first = first[code]
    s = score[pos]
    g_first = _bisect(score, q_first, pos, s, strict=False)
    g_end = _bisect(score, pos + 1, q_first + per_code[code], s, strict=True)
    rank = g_first - q_first + 1
    tied = np.flatnonzero(g_end - g_first > 1)
    if len(tied):
        rank[tied] += _greater_in_group(docid, order, g_first[tied], g_end[tied], pos[tied])
    return rank


def _greater_in_group(
    docid: pa.Array, order: np.ndarray | None, g_first: np.ndarray, g_end: np.ndarray, pos: np.ndarray
) -> np.ndarray:
    """For each ranked position `pos` in the tied group [g_first, g_end), how many of the group's docids are
    greater (bytes). Each distinct group is sorted once, however many of `pos` it holds."""
    start, at, inv = np.unique(g_first, return_index=True, return_inverse=True)
    size = g_end[at] - start
    offset = np.cumsum(size) - size  # where each group's members begin in the list of all members
    member = np.arange(int(size.sum())) + np.repeat(start - offset, size)
    group = np.repeat(np.arange(len(start)), size)
    rows = member if order is None else order[member]
    table = pa.table({"g": arrow_ints(group), "d": docid.take(arrow_ints(rows))})
    perm = numpy_values(pc.sort_indices(table, sort_keys=[("g", "ascending"), ("d", "descending")]))
    slot = np.empty(len(perm), dtype=np.int64)
    slot[perm] = np.arange(len(perm))  # each member's place once its group is sorted by docid descending
    mine = offset[inv] + (pos - start[inv])
    return slot[mine] - offset[inv]


def rank_run(qi: QrelsIndex, run: Columns) -> Ranked:
    """Order the run and keep its judged rows with their ranks; run queries absent from the qrels are ignored."""
    nq = len(qi.qids)
    to_qrels = pc.index_in(run.qvalues, value_set=qi.qids)
    unknown = sorted(run.qvalues.filter(to_qrels.is_null()).to_pylist()) if to_qrels.null_count else []
    qmap = numpy_values(to_qrels, null=-1).astype(np.int64)
    per_run_query = np.bincount(run.qcode, minlength=len(qmap))
    num_ret = np.zeros(nq, dtype=np.int64)
    num_ret[qmap[qmap >= 0]] = per_run_query[qmap >= 0]
    # Judged rows only: docid bitmap prefilter, bucketed lookup of pair keys, then confirm on the strings.
    cand = np.flatnonzero(qi.bitmap[_bucket(run.doc_keys)])
    cq = qmap[run.qcode[cand]]
    cand, cq = cand[cq >= 0], cq[cq >= 0]
    at = _find(qi, pair_keys(run.doc_keys[cand], cq))
    found = at >= 0
    rows, at, rq = cand[found], at[found], cq[found]
    same = numpy_values(pc.equal(run.docid.take(arrow_ints(rows)), qi.docids.take(arrow_ints(qi.key_row[at]))))
    ok = same & (qi.key_q[at] == rq)
    rows, grade, rq = rows[ok], qi.grades[at[ok]], rq[ok]
    rank = _ranks(run.qcode, run.value, run.docid, rows, per_run_query)
    srt = np.lexsort((rank, run.qcode[rows]))  # query by query in ranked order, best first
    return Ranked(rq[srt], rank[srt], grade[srt], num_ret, unknown)


def merge_ranked(parts: Sequence[Ranked]) -> Ranked:
    """One Ranked from runs of disjoint query sets (blocks of one file), in block order."""
    return Ranked(
        np.concatenate([p.q for p in parts]),
        np.concatenate([p.rank for p in parts]),
        np.concatenate([p.grade for p in parts]),
        np.sum([p.num_ret for p in parts], axis=0),
        sorted(q for p in parts for q in p.unknown_qids),
    )


def _within(q: np.ndarray) -> np.ndarray:
    """0-based position of each row within its block of equal query codes (rows grouped by query)."""
    starts = _segment_starts(q)
    return np.arange(len(q)) - np.repeat(starts, np.diff(np.append(starts, len(q))))


def _sum(q: np.ndarray, w: np.ndarray, nq: int) -> np.ndarray:
    return np.bincount(q, weights=w, minlength=nq)


def _div(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """a / b with 0 where b is 0 (trec_eval's convention for undefined ratios)."""
    b = np.broadcast_to(np.asarray(b, dtype=np.float64), np.shape(a))
    return np.divide(a, b, out=np.zeros(np.shape(a), dtype=np.float64), where=b != 0)


def _ideal_dcg(qi: QrelsIndex, cut: float, exp: bool) -> np.ndarray:
    """DCG of the ideal ranking: all judged grades of the query, best first."""
    q, rank, lin, expo = qi.ideal
    w = expo if exp else lin
    if cut != np.inf:
        w = np.where(rank <= cut, w, 0.0)
    return _sum(q, w, len(qi.qids))


def compute(qi: QrelsIndex, ranked: Ranked, specs: Sequence[Spec], max_grade: int = 3) -> dict[str, np.ndarray]:
    """Per-query values (aligned with `qi.qids`) for every spec, condensed variants included."""
    nq = len(qi.qids)
    out: dict[str, np.ndarray] = {}
    plain = [s for s in specs if not s.condensed]
    condensed = [s for s in specs if s.condensed]
    if plain:
        out.update(_compute(qi, ranked.q, ranked.rank, ranked.grade, ranked.num_ret, plain, max_grade, nq))
    if condensed:
        # Judged rows only, re-ranked: unjudged removed before scoring, and (as trec_eval -J does)
        # negatively graded rows too.
        keep = ranked.grade >= 0
        q, grade = ranked.q[keep], ranked.grade[keep]
        num_ret = np.bincount(q, minlength=nq)
        out.update(_compute(qi, q, _within(q) + 1, grade, num_ret, condensed, max_grade, nq))
    return {s.name: out[s.name] for s in specs}


@dataclass
class _Rows:
    """Judged rows grouped by query in rank order, with what several kernels share (computed once)."""

    qi: QrelsIndex
    q: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    num_ret: np.ndarray
    max_grade: int
    nq: int
    R: np.ndarray
    relm: np.ndarray
    rq: np.ndarray
    rr: np.ndarray
    first: np.ndarray
    cache: dict

    def hits(self, cut: float) -> np.ndarray:
        """Relevant rows at rank ≤ cut, per query."""
        if ("hits", cut) not in self.cache:
            self.cache["hits", cut] = _sum(self.rq, (self.rr <= cut).astype(np.float64), self.nq)
        return self.cache["hits", cut]

    def dcg(self, cut: float, exp: bool) -> np.ndarray:
        """Σ_{rank ≤ cut} gain / log2(rank + 1), gain = grade or 2^grade − 1 (negative grades gain 0)."""
        if ("gain", exp) not in self.cache:
            g = np.clip(self.grade, 0, None).astype(np.float64)
            self.cache["gain", exp] = ((2.0**g - 1.0) if exp else g) / np.log2(self.rank + 1.0)
        w = self.cache["gain", exp]
        return _sum(self.q, w if cut == np.inf else np.where(self.rank <= cut, w, 0.0), self.nq)


def _rows(
    qi: QrelsIndex, q: np.ndarray, rank: np.ndarray, grade: np.ndarray, num_ret: np.ndarray, max_grade: int, nq: int
) -> _Rows:
    relm = grade >= qi.rel_level
    rq, rr = q[relm], rank[relm].astype(np.float64)
    first = np.full(nq, np.inf)
    rel_starts = _segment_starts(rq)
    first[rq[rel_starts]] = rr[rel_starts]
    return _Rows(qi, q, rank, grade, num_ret, max_grade, nq, qi.n_rel.astype(np.float64), relm, rq, rr, first, {})


def _precision(x: _Rows, c: float) -> np.ndarray:
    """P@k = |rel ∩ top k| / k."""
    return x.hits(c) / c


def _p_ceiling(x: _Rows, c: float) -> np.ndarray:
    """P_ceiling@k = min(k, R) / k."""
    return np.minimum(c, x.R) / c


def _recall(x: _Rows, c: float) -> np.ndarray:
    """recall@k = |rel ∩ top k| / R (0 when R = 0)."""
    return _div(x.hits(c), x.R)


def _success(x: _Rows, c: float) -> np.ndarray:
    """success@k = 1[|rel ∩ top k| > 0]."""
    return (x.hits(c) > 0).astype(np.float64)


def _f1(x: _Rows, c: float) -> np.ndarray:
    """F1@k = 2·P@k·recall@k / (P@k + recall@k)."""
    p, r = x.hits(c) / c, _div(x.hits(c), x.R)
    return _div(2 * p * r, p + r)


def _ndcg(x: _Rows, c: float) -> np.ndarray:
    """nDCG@k = Σ_{i≤k} g_i / log2(i+1) over the same sum for the query's judged grades sorted best first."""
    return _div(x.dcg(c, False), _ideal_dcg(x.qi, c, False))


def _ndcg_exp(x: _Rows, c: float) -> np.ndarray:
    """nDCG_exp@k = Σ_{i≤k} (2^g_i − 1) / log2(i+1) over the ideal ranking's same sum."""
    return _div(x.dcg(c, True), _ideal_dcg(x.qi, c, True))


def _dcg(x: _Rows, c: float) -> np.ndarray:
    """DCG@k = Σ_{i≤k} g_i / log2(i+1)."""
    return x.dcg(c, False)


def _map(x: _Rows, c: float) -> np.ndarray:
    """AP@k = Σ_{relevant at rank r ≤ k} (hits up to r / r) / R."""
    cum_rel = _within(x.rq) + 1.0
    return _div(_sum(x.rq, np.where(x.rr <= c, cum_rel / x.rr, 0.0), x.nq), x.R)


def _mrr(x: _Rows, c: float) -> np.ndarray:
    """RR@k = 1 / rank of the first relevant row if it is ≤ k, else 0."""
    return np.where(x.first <= c, 1.0 / x.first, 0.0)


def _rprec(x: _Rows, c: float) -> np.ndarray:
    """R-prec = |rel ∩ top R| / R."""
    return _div(_sum(x.rq, (x.rr <= x.R[x.rq]).astype(np.float64), x.nq), x.R)


def _judged(x: _Rows, c: float) -> np.ndarray:
    """judged@k = |judged ∩ top k| / min(k, retrieved)."""
    return _div(_sum(x.q, (x.rank <= c).astype(np.float64), x.nq), np.minimum(x.num_ret, c))


def _bpref_kernel(x: _Rows, c: float) -> np.ndarray:
    """bpref = Σ_{retrieved relevant} (1 − min(nonrel above, R) / min(R, N)) / R."""
    return _bpref(x.q, x.grade, x.relm, x.R, x.qi.n_nonrel, x.nq)


def _err(x: _Rows, c: float) -> np.ndarray:
    """ERR@k = Σ_{r≤k} (1/r)·R_r·Π_{i<r}(1 − R_i), R_i = (2^g_i − 1) / 2^max_grade (grades clipped to the scale)."""
    g = np.clip(x.grade, 0, x.max_grade).astype(np.float64)
    m = (g > 0) & (x.rank <= c)
    sq, sr, p = x.q[m], x.rank[m].astype(np.float64), (2.0 ** g[m] - 1.0) / 2.0**x.max_grade
    logs = np.log1p(-p)
    csum = np.cumsum(logs)
    starts = _segment_starts(sq)
    before = csum - logs - np.repeat((csum - logs)[starts], np.diff(np.append(starts, len(sq))))
    return _sum(sq, np.exp(before) * p / sr, x.nq)


def _rbp(x: _Rows, p: float) -> np.ndarray:
    """RBP(p) = (1 − p)·Σ_i rel_i·p^(i−1)."""
    return (1.0 - p) * _sum(x.q[x.relm], p ** (x.rank[x.relm] - 1.0), x.nq)


def _rbp_residual(x: _Rows, p: float) -> np.ndarray:
    """RBP residual(p) = 1 − (1 − p)·Σ_{judged retrieved i} p^(i−1)."""
    return 1.0 - (1.0 - p) * _sum(x.q, p ** (x.rank - 1.0), x.nq)


# One vectorised kernel per registered metric: kernel(rows, cutoff k (inf = none) or persistence p).
KERNELS = {
    "P": _precision,
    "P_ceiling": _p_ceiling,
    "recall": _recall,
    "success": _success,
    "F1": _f1,
    "ndcg": _ndcg,
    "ndcg_exp": _ndcg_exp,
    "dcg": _dcg,
    "map": _map,
    "mrr": _mrr,
    "judged": _judged,
    "rprec": _rprec,
    "bpref": _bpref_kernel,
    "err": _err,
    "rbp": _rbp,
    "rbp_residual": _rbp_residual,
}


def _compute(
    qi: QrelsIndex,
    q: np.ndarray,
    rank: np.ndarray,
    grade: np.ndarray,
    num_ret: np.ndarray,
    specs: Sequence[Spec],
    max_grade: int,
    nq: int,
) -> dict[str, np.ndarray]:
    """Every metric from judged rows grouped by query in rank order (see `Ranked`)."""
    rows = _rows(qi, q, rank, grade, num_ret, max_grade, nq)
    return {s.name: KERNELS[s.base](rows, np.inf if s.arg is None else s.arg) for s in specs}


def _bpref(q: np.ndarray, grade: np.ndarray, relm: np.ndarray, R: np.ndarray, N: np.ndarray, nq: int) -> np.ndarray:
    """trec_eval bpref: Σ over retrieved relevant of 1 − min(nonrel above, R)/min(R, N), over R."""
    nonrel = (~relm) & (grade >= 0)
    cum_nonrel = np.cumsum(nonrel)
    starts = _segment_starts(q)
    base = np.repeat(cum_nonrel[starts] - nonrel[starts], np.diff(np.append(starts, len(q))))
    above = (cum_nonrel - nonrel - base)[relm].astype(np.float64)
    rq = q[relm]
    denom = np.minimum(R, N)[rq].astype(np.float64)
    term = np.where(denom > 0, 1.0 - _div(np.minimum(above, R[rq]), denom), 1.0)
    return _div(_sum(rq, term, nq), R)

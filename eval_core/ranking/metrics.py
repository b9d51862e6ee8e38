"""`qrelkit eval`'s metrics for every query at once: order the run trec_eval's way, join grades, call the kernels.

The hot path never loops over queries in Python. A run is reduced to its *judged* rows (the only
rows any metric needs, besides each query's retrieved count), each with its query code, 1-based
rank and grade; those become the kernels' `RelMatrix` and each metric is computed by the one kernel
the registry names for it (eval_core/ranking/kernels.py), shared with `qrelkit trec_eval`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from eval_core.io import arrow_compute as pc
from eval_core.io.columns import Columns
from eval_core.io.keys import arrow_ints, numpy_values, pair_keys
from eval_core.ranking.kernels import INF, KERNELS, PARALLEL_CELLS, Args
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
from eval_core.ranking.trec_eval.rels import UNJUDGED, RelMatrix

__all__ = ["DEFAULT_K", "DEFAULT_METRICS", "Spec", "compute", "index_qrels", "parse_metrics", "rank_run"]


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
    """Qrels prepared once: sorted (query, doc) pair keys with grades and docids, R and the grade counts per query."""

    qids: pa.Array
    keys: np.ndarray
    key_q: np.ndarray
    key_row: np.ndarray  # the qrels row of each sorted key, whose docid is docids[key_row]
    docids: pa.Array
    grades: np.ndarray
    n_rel: np.ndarray
    rel_level: int
    bitmap: np.ndarray
    bucket_start: np.ndarray  # keys[bucket_start[b]:bucket_start[b + 1]] are the keys whose top bits are b
    bucket_shift: int
    levels: np.ndarray  # [queries, grades]: judged documents of each grade ≥ 0
    qid_list: list[str] = field(default_factory=list)


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
    top = max(int(grade.max()), 0) if len(grade) else 0
    return QrelsIndex(
        qrels.qvalues,
        keys,
        key_q,
        order,
        qrels.docid,
        grade[order],
        np.bincount(qc[rel], minlength=nq),
        rel_level,
        bitmap,
        *_buckets(keys),
        _levels(qc, grade, nq, top),
        qrels.qvalues.to_pylist(),
    )


def _levels(qc: np.ndarray, grade: np.ndarray, nq: int, top: int) -> np.ndarray:
    """How many judged documents of each grade ≥ 0 each query has ([queries, top + 1])."""
    ok = grade >= 0
    flat = np.bincount(qc[ok] * (top + 1) + grade[ok], minlength=nq * (top + 1))
    return flat.reshape(nq, top + 1)


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
    in byte order), touching little: the rows of its query with a higher score (its place in the ranked rows
    when no neighbour ties with it, else found by binary search), plus those in its tied group with a greater
    docid. Only the tied groups holding one of `rows` are sorted by docid (a tie among unjudged documents moves
    no judged rank), and the whole run only when it is not already in query and score order. `per_code` counts
    each query code's rows."""
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
    q_end = q_first + per_code[code]
    s = score[pos]
    # a row whose neighbours in its query score otherwise is alone in its tied group: [pos, pos + 1)
    g_first, g_end = pos.copy(), pos + 1
    last = len(score) - 1
    alike = np.flatnonzero(
        ((pos > q_first) & (score[np.maximum(pos - 1, 0)] == s))
        | ((pos + 1 < q_end) & (score[np.minimum(pos + 1, last)] == s))
    )
    if len(alike):
        a_first, a_pos, a_s = q_first[alike], pos[alike], s[alike]
        g_first[alike] = _bisect(score, a_first, a_pos, a_s, strict=False)
        g_end[alike] = _bisect(score, a_pos + 1, q_end[alike], a_s, strict=True)
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
    table = pa.table({"g": arrow_ints(group), "d": pc.take(docid, arrow_ints(rows))})
    perm = numpy_values(pc.sort_indices(table, sort_keys=[("g", "ascending"), ("d", "descending")]))
    slot = np.empty(len(perm), dtype=np.int64)
    slot[perm] = np.arange(len(perm))  # each member's place once its group is sorted by docid descending
    mine = offset[inv] + (pos - start[inv])
    return slot[mine] - offset[inv]


def rank_run(qi: QrelsIndex, run: Columns, float32: bool = False) -> Ranked:
    """Order the run and keep its judged rows with their ranks; run queries absent from the qrels are ignored.
    `float32`: compare scores as float32 (trec_eval 9 and pytrec_eval), so scores equal in float32 tie."""
    nq = len(qi.qids)
    to_qrels = pc.index_in(run.qvalues, value_set=qi.qids)
    unknown = sorted(pc.filter(run.qvalues, pc.is_null(to_qrels)).to_pylist()) if to_qrels.null_count else []
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
    same = numpy_values(pc.equal(pc.take(run.docid, arrow_ints(rows)), pc.take(qi.docids, arrow_ints(qi.key_row[at]))))
    ok = same & (qi.key_q[at] == rq)
    rows, grade, rq = rows[ok], qi.grades[at[ok]], rq[ok]
    score = np.asarray(run.value, dtype=np.float32).astype(np.float64) if float32 else run.value
    rank = _ranks(run.qcode, score, run.docid, rows, per_run_query)
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


def compute(
    qi: QrelsIndex, ranked: Ranked, specs: Sequence[Spec], max_grade: int = 3, workers: int = 1
) -> dict[str, np.ndarray]:
    """Per-query values (aligned with `qi.qids`) for every spec, condensed variants included, each by the one
    kernel the registry names for its metric (`eval_core.ranking.kernels`), on up to `workers` threads."""
    nq = len(qi.qids)
    out: dict[str, np.ndarray] = {}
    plain = [s for s in specs if not s.condensed]
    condensed = [s for s in specs if s.condensed]
    if plain:
        rank0 = ranked.rank - 1
        out.update(_by_kernels(relmatrix(qi, ranked.q, rank0, ranked.grade, ranked.num_ret), plain, max_grade, workers))
    if condensed:
        # Judged rows only, re-ranked: unjudged removed before scoring, and (as trec_eval -J does)
        # negatively graded rows too.
        keep = ranked.grade >= 0
        q, grade = ranked.q[keep], ranked.grade[keep]
        num_ret = np.bincount(q, minlength=nq)
        out.update(_by_kernels(relmatrix(qi, q, _within(q), grade, num_ret), condensed, max_grade, workers))
    return {s.name: out[s.name] for s in specs}


def relmatrix(qi: QrelsIndex, q: np.ndarray, rank0: np.ndarray, grade: np.ndarray, num_ret: np.ndarray) -> RelMatrix:
    """The kernels' input from judged rows grouped by query in rank order (0-based ranks): a negative grade is
    trec_eval's pooled-but-unjudged value. Rows come grouped in the run's query order: ordered here by qrels
    query (stable, so each query keeps its rank order)."""
    value = np.where(grade < 0, UNJUDGED, grade)
    if len(q) > 1 and (q[1:] < q[:-1]).any():
        order = np.argsort(q, kind="stable")
        q, rank0, value = q[order], rank0[order], value[order]
    return RelMatrix.from_hits(
        qi.qid_list, q, rank0, value, num_ret, qi.levels, np.zeros(len(qi.qid_list), dtype=bool), qi.rel_level
    )


def _by_kernels(m: RelMatrix, specs: Sequence[Spec], max_grade: int, workers: int = 1) -> dict[str, np.ndarray]:
    """Every spec's per-query values: one kernel call per metric, over all of that metric's cutoffs; `workers`
    threads call them at once when the matrix is big enough to gain by it (NumPy releases the GIL)."""
    groups: dict[tuple[str, float | None], list[Spec]] = {}
    for s in specs:
        p = s.arg if REGISTRY[s.base].cutoff == "p" else None
        groups.setdefault((s.base, p), []).append(s)
    calls: list[tuple[Callable[[RelMatrix, Args], np.ndarray], Args]] = []
    for (base, p), group in groups.items():
        metric = REGISTRY[base]
        cuts = tuple(INF if (p is not None or s.arg is None) else float(s.arg) for s in group)
        named: dict[str, Any] = dict(metric.kernel_args)  # the registry's semantics flags, by Args field name
        args = replace(Args(cuts=cuts, max_grade=max_grade), **named)
        if p is not None:
            args = replace(args, p=float(p))
        calls.append((KERNELS[metric.kernel], args))
    if workers > 1 and len(calls) > 1 and m.rank.size >= PARALLEL_CELLS:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(kernel, m, args) for kernel, args in calls]
            results = [f.result() for f in futures]  # in order: the first failing kernel's error is raised
    else:
        results = [kernel(m, args) for kernel, args in calls]
    out: dict[str, np.ndarray] = {}
    for group, values in zip(groups.values(), results, strict=True):
        for j, s in enumerate(group):
            out[s.name] = values[:, 0 if values.shape[1] == 1 else j]
    return out

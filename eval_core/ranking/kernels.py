"""The one kernel of each measure both `qrelkit eval` and `qrelkit trec_eval` compute, over all queries at once.

Every kernel reads a `RelMatrix` (each query's judged retrieved documents in rank order, see trec_eval/rels.py)
and `Args`, and returns a [queries × cutoffs] array. Where qrelkit's documented semantics and trec_eval's differ
the difference is a named argument (`Args.binary` for rbp's gains, `Args.cuts` for a cutoff trec_eval lacks,
`Args.zero_without_ideal` for an nDCG whose ideal is 0), never a second implementation: `KERNELS` is the table
`eval_core.ranking.registry` names (each metric and each trec_eval family says which kernel it uses), and
tests/eval_core/test_metrics_engine.py fails if any other module defines one. The arithmetic is trec_eval 10.0's
C code's (sums in rank order, powers by repeated multiplication, gains divided by log2(rank + 2)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cmp_to_key

import numpy as np

from eval_core.ranking.trec_eval.rels import NONPOOL, UNJUDGED, RelMatrix

INF = float("inf")


@dataclass(frozen=True)
class Args:
    """A kernel's named parameters: cutoffs (`inf`: the whole ranking), persistence, gains and semantics flags."""

    cuts: tuple[float, ...] = (INF,)
    p: float = 0.9  # rbp, rbp_resid: persistence
    gains: tuple[tuple[int, float], ...] = ()  # (grade, gain) pairs; unnamed grades gain their own value
    binary: bool = False  # rbp: gain 1 at grade ≥ -l, else 0 (qrelkit eval's); False: trec_eval's scaled gains
    zero_without_ideal: bool = True  # ndcg: 0 when the ideal DCG is 0 (False: the DCG itself, ndcg_cut's rule)
    zero_when_all_judged: bool = True  # rbp_resid: 0 when no retrieved document is unjudged (trec_eval's)
    max_grade: int = 3  # err: the scale's top grade
    exp_gain: bool = False  # dcg, ndcg: gain 2^grade − 1 (Burges) instead of the grade


PARALLEL_CELLS = 1 << 16  # a matrix this big (queries × hits) gains by calling kernels on several threads at once


# ---- shared pieces ---------------------------------------------------------------------------------------


def div(num: np.ndarray, den: np.ndarray | float) -> np.ndarray:
    """num / den with 0 where den is 0 (trec_eval's convention for an undefined ratio)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


def seqsum(x: np.ndarray) -> np.ndarray:
    """Each row summed left to right (trec_eval's loops over ranks), not numpy's pairwise sum."""
    return np.cumsum(x, axis=1)[:, -1] if x.shape[1] else np.zeros(len(x))


def disc(rank: np.ndarray) -> np.ndarray:
    """log2(rank + 2): the DCG discount of a 0-based rank."""
    return np.log2(np.asarray(rank, dtype=np.float64) + 2.0)


def powers(p: float, n: int) -> np.ndarray:
    """p^0 … p^(n−1) as trec_eval's loops make them, each the one before times p (`cur_p = cur_p * p`): pow's
    result can differ in the last bit."""
    steps = np.full(n, p, dtype=np.float64)
    steps[:1] = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        return np.multiply.accumulate(steps)


def rel_at(m: RelMatrix, k: float | np.ndarray) -> np.ndarray:
    """Relevant documents in the first k ranks (k ≤ 0: none), per query."""
    return m.relevant_before(k)


def num_rel_ret(m: RelMatrix) -> np.ndarray:
    """Relevant documents retrieved, per query."""
    return m.isrel.sum(axis=1)


def judged_hits(m: RelMatrix) -> np.ndarray:
    """Hits with a grade ≥ 0 (every other retrieved rank is NONPOOL or UNJUDGED)."""
    return m.hit & (m.value >= 0)


def _at(cum: np.ndarray, k: float) -> np.ndarray:
    """A dense cumulative row's value after the first k cells (past the end: its last value; k ≤ 0: 0)."""
    n, width = cum.shape
    if width == 0 or k <= 0:
        return np.zeros(n)
    return cum[:, int(min(k, width)) - 1]


def _prefix(m: RelMatrix, cum: np.ndarray, k: float) -> np.ndarray:
    """A cumulative sum over each row's hits, taken over the hits ranked below k, per query."""
    c = m.hits_before(k)
    padded = np.concatenate([np.zeros((len(m.qids), 1)), cum], axis=1)
    return padded[np.arange(len(m.qids)), c]


def _stack(cols: list[np.ndarray], n: int) -> np.ndarray:
    return np.stack(cols, axis=1) if cols else np.zeros((n, 0))


def rel_hits(m: RelMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every relevant retrieved document as (query row, 0-based rank, precision at its rank), in rank order."""
    rows, cols = np.nonzero(m.isrel)
    ranks = m.rank[rows, cols]
    return rows, ranks, m.cum[rows, cols] / (ranks + 1.0)


def ap_sum(m: RelMatrix, k: float = INF, hits: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Σ over relevant retrieved documents ranked below k of (relevant so far / rank), in rank order. `hits`:
    `rel_hits(m)` when the caller already has it (one per matrix, however many cutoffs)."""
    rows, ranks, prec = rel_hits(m) if hits is None else hits
    weights = prec if k == INF else np.where(ranks < k, prec, 0.0)
    return np.bincount(rows, weights=weights, minlength=len(m.qids))


# ---- gains (trec_eval's setup_gains / get_gain) -------------------------------------------------------------


def gain_table(pairs: tuple[tuple[int, float], ...], m: RelMatrix, exp_gain: bool = False) -> dict[int, float]:
    """Gain per grade: a given `level=gain` pair (the first for a level), else the grade itself (2^grade − 1
    with `exp_gain`)."""
    table: dict[int, float] = {}
    for level, gain in pairs:
        table.setdefault(level, gain)
    for level in range(m.levels.shape[1]):
        table.setdefault(level, 2.0**level - 1.0 if exp_gain else float(level))
    return table


def for_gains(m: RelMatrix, table: dict[int, float]) -> RelMatrix:
    """The matrix a gain measure reads: with every retrieved rank when the gains name NONPOOL's level."""
    return m.materialized() if NONPOOL in table else m


def result_gains(m: RelMatrix, table: dict[int, float]) -> np.ndarray:
    """Each hit's gain (0 for a grade with no gain, unjudged, padding)."""
    lo, hi = int(min(table, default=0)), int(max(table, default=0))
    lo = min(lo, -3)
    lut = np.zeros(hi - lo + 1)
    for level, gain in table.items():
        lut[level - lo] = gain
    gains = lut[np.clip(m.value, lo, hi) - lo]
    gains[(m.value > hi) | ~m.hit] = 0.0
    return gains


def ideal_gains(m: RelMatrix, table: dict[int, float], width: int) -> np.ndarray:
    """The ideal ranking's gains per query: positive-gain grades, highest gain first, each repeated as often
    as the query has judged documents of that grade; zeros after."""

    def by_gain(a: tuple[float, int], b: tuple[float, int]) -> int:
        return int(a[0] - b[0])  # trec_eval's comparator truncates the gain difference to an int

    order = sorted(((gain, level) for level, gain in table.items()), key=cmp_to_key(by_gain))
    positive = [(g, lv) for g, lv in reversed(order) if g > 0 and 0 <= lv < m.levels.shape[1]]
    out = np.zeros((len(m.qids), width))
    pos = np.arange(width)
    done = np.zeros(len(m.qids), dtype=np.int64)
    for gain, level in positive:
        count = m.levels[:, level]
        out[(pos >= done[:, None]) & (pos < (done + count)[:, None])] = gain
        done = done + count
    return out


def positive_total(m: RelMatrix, table: dict[int, float]) -> np.ndarray:
    """How many judged documents have a positive gain (the ideal ranking's length), per query."""
    total = np.zeros(len(m.qids), dtype=np.int64)
    for level, gain in table.items():
        if gain > 0 and 0 <= level < m.levels.shape[1]:
            total += m.levels[:, level]
    return total


def gain_setup(m: RelMatrix, a: Args) -> tuple[RelMatrix, np.ndarray, np.ndarray, np.ndarray]:
    """The matrix read, its hits' gains, the ideal gains (at least one column: zeros past the ideal ranking's
    end), and the ideal ranking's length."""
    table = gain_table(a.gains, m, a.exp_gain)
    m = for_gains(m, table)
    npos = positive_total(m, table)
    return m, result_gains(m, table), ideal_gains(m, table, max(int(npos.max(initial=0)), 1)), npos


def ideal_cum(ideal: np.ndarray) -> np.ndarray:
    """The ideal DCG after each ideal rank."""
    return np.cumsum(ideal / disc(np.arange(ideal.shape[1])), axis=1)


def hit_dcg(m: RelMatrix, res: np.ndarray) -> np.ndarray:
    """Each hit's discounted gain (0 where the gain is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(res != 0, res / disc(m.rank), 0.0)


# ---- the kernels ------------------------------------------------------------------------------------------


def precision(m: RelMatrix, a: Args) -> np.ndarray:
    """P@k = relevant in the top k / k (k even when fewer were retrieved)."""
    return _stack([rel_at(m, k) / k for k in a.cuts], len(m.qids))


def precision_ceiling(m: RelMatrix, a: Args) -> np.ndarray:
    """min(k, R) / k: the best P@k any ranking can reach."""
    return _stack([np.minimum(k, m.num_rel) / k for k in a.cuts], len(m.qids))


def recall(m: RelMatrix, a: Args) -> np.ndarray:
    """recall@k = relevant in the top k / R (0 when R = 0)."""
    return _stack([div(rel_at(m, k), m.num_rel) for k in a.cuts], len(m.qids))


def success(m: RelMatrix, a: Args) -> np.ndarray:
    """success@k = 1 if a relevant document is in the top k."""
    return _stack([(rel_at(m, k) > 0).astype(np.float64) for k in a.cuts], len(m.qids))


def f1(m: RelMatrix, a: Args) -> np.ndarray:
    """F1@k = 2·P@k·recall@k / (P@k + recall@k)."""
    cols = []
    for k in a.cuts:
        hits = rel_at(m, k)
        p, r = hits / k, div(hits, m.num_rel)
        cols.append(div(2 * p * r, p + r))
    return _stack(cols, len(m.qids))


def average_precision(m: RelMatrix, a: Args) -> np.ndarray:
    """AP@k = Σ over relevant retrieved at rank ≤ k of P@rank, / R (map, map_cut)."""
    hits = rel_hits(m)
    return _stack([div(ap_sum(m, k, hits), m.num_rel) for k in a.cuts], len(m.qids))


def reciprocal_rank(m: RelMatrix, a: Args) -> np.ndarray:
    """1 / rank of the first relevant document if it is within the cutoff, else 0 (recip_rank, mrr@k)."""
    isrel = m.isrel
    n = len(m.qids)
    if not isrel.shape[1]:
        return np.zeros((n, len(a.cuts)))
    first = m.rank[np.arange(n), np.argmax(isrel, axis=1)]
    found = isrel.any(axis=1)
    return _stack([np.where(found & (first < k), 1.0 / (first + 1.0), 0.0) for k in a.cuts], n)


def r_precision(m: RelMatrix, a: Args) -> np.ndarray:
    """Relevant in the top R / R."""
    n = np.minimum(m.num_ret, m.num_rel)
    return np.where(n > 0, div(rel_at(m, n), m.num_rel), 0.0)[:, None]


def bpref(m: RelMatrix, a: Args) -> np.ndarray:
    """Σ over judged relevant retrieved of 1 − min(judged non-relevant above, R) / min(R, N), / R."""
    rl, R = m.rel_level, m.num_rel
    v = m.value
    judged = m.hit & (v != NONPOOL) & (v != UNJUDGED)
    nonrel = judged & (v >= 0) & (v < rl)
    rel = judged & ~nonrel
    before = np.cumsum(nonrel, axis=1)
    num_nonrel = m.levels[:, : max(rl, 0)].sum(axis=1)
    denom = np.minimum(num_nonrel, R)[:, None]
    part = np.where(before > 0, 1.0 - div(np.minimum(before, R[:, None]), denom), 1.0)
    total = seqsum(np.where(rel, part, 0.0))
    return np.where(R > 0, div(total, R), total)[:, None]


def dcg(m: RelMatrix, a: Args) -> np.ndarray:
    """DCG@k = Σ_{i≤k} gain_i / log2(i + 1); gains are grades unless `a.gains` names others."""
    m, res, _, _ = gain_setup(m, a)
    cum = np.cumsum(hit_dcg(m, res), axis=1)
    return _stack([_prefix(m, cum, k) for k in a.cuts], len(m.qids))


def ideal_dcg(m: RelMatrix, a: Args) -> np.ndarray:
    """ideal DCG@k = Σ_{i≤k} gain_i / log2(i + 1) over the judged documents sorted by gain, best first."""
    _, _, ideal, _ = gain_setup(m, a)
    cum = ideal_cum(ideal)
    return _stack([_at(cum, k) for k in a.cuts], len(m.qids))


def ndcg(m: RelMatrix, a: Args) -> np.ndarray:
    """nDCG@k = DCG@k / ideal DCG@k (ndcg, ndcg_cut, ndcg_exp with gains 2^g − 1)."""
    m, res, ideal, _ = gain_setup(m, a)
    cum = np.cumsum(hit_dcg(m, res), axis=1)
    icum = ideal_cum(ideal)
    cols = []
    for k in a.cuts:
        d, i = _prefix(m, cum, k), _at(icum, k)
        cols.append(np.where(i > 0, div(d, i), 0.0 if a.zero_without_ideal else d))
    return _stack(cols, len(m.qids))


def judged(m: RelMatrix, a: Args) -> np.ndarray:
    """judged@k = documents in the top k with any judgment / min(k, retrieved)."""
    return _stack([div(m.hits_before(k), np.minimum(m.num_ret, k)) for k in a.cuts], len(m.qids))


def err(m: RelMatrix, a: Args) -> np.ndarray:
    """ERR@k = Σ_{r≤k} (1/r)·R_r·Π_{i<r}(1 − R_i), R_i = (2^g_i − 1) / 2^max_grade (grades clipped to the scale).
    The product is exp of a running sum of log(1 − R_i) over the graded hits, query after query."""
    g = np.clip(np.where(m.hit, m.value, 0), 0, a.max_grade)
    out = []
    for k in a.cuts:
        rows, cols = np.nonzero((g > 0) & (m.rank < k))
        gk = g[rows, cols].astype(np.float64)
        stop = (2.0**gk - 1.0) / 2.0**a.max_grade
        logs = np.log1p(-stop)
        csum = np.cumsum(logs)
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if len(rows) else np.zeros(0, dtype=np.int64)
        before = csum - logs - np.repeat((csum - logs)[starts], np.diff(np.append(starts, len(rows))))
        term = np.exp(before) * stop / (m.rank[rows, cols] + 1.0)
        out.append(np.bincount(rows, weights=term, minlength=len(m.qids)))
    return _stack(out, len(m.qids))


def rbp(m: RelMatrix, a: Args) -> np.ndarray:
    """RBP(p) = (1 − p)·Σ_i gain_i·p^(i−1): with `binary` gain 1 at grade ≥ -l; else trec_eval's, each grade's
    gain (or a given pair's) scaled into [0, 1] when any lies outside, per query over the gains it set up."""
    if a.binary:
        res = m.isrel.astype(np.float64)
    else:
        table = gain_table(a.gains, m, a.exp_gain)
        m = for_gains(m, table)
        res = result_gains(m, table)
        # trec_eval's running min and max start at 0 in practice (uninitialised locals)
        nlev = m.num_rel_levels
        qgains = np.zeros((len(m.qids), max(m.levels.shape[1], 1)))
        present = np.arange(qgains.shape[1]) < nlev[:, None]
        for lv in range(qgains.shape[1]):
            qgains[:, lv] = table.get(lv, float(lv))
        pair_g = [g for _, g in a.gains]
        lo = np.minimum(np.where(present, qgains, 0.0).min(axis=1), min(pair_g, default=0.0))
        hi = np.maximum(np.where(present, qgains, 0.0).max(axis=1), max(pair_g, default=0.0))
        lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
        scale = (lo < 0) | (hi > 1)
        scaled = div(res - lo[:, None], (hi - lo)[:, None])
        known = m.hit & np.isin(m.value, list(table))
        res = np.where(scale[:, None] & known, scaled, res)
    pw = powers(a.p, int(m.num_ret.max(initial=0)) + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        weights = pw[np.minimum(m.rank, len(pw) - 1)]
        return ((1.0 - a.p) * seqsum(np.where(res != 0, res * weights, 0.0)))[:, None]


def rbp_resid(m: RelMatrix, a: Args) -> np.ndarray:
    """residual = p^num_ret + (1 − p)·Σ_{unjudged retrieved i} p^(i−1) (how much RBP could still grow), added
    rank by rank as m_rbp_resid.c does. With `zero_when_all_judged` (trec_eval's) a query
    whose retrieved documents are all judged gets 0, as m_rbp_resid.c leaves it; else p^num_ret."""
    p = a.p
    judged_ = judged_hits(m)
    width = int(m.num_ret.max(initial=0))
    pw = powers(p, width + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.zeros(len(m.qids)) if a.zero_when_all_judged else pw[m.num_ret].astype(np.float64)
    rows = np.flatnonzero(m.num_ret > judged_.sum(axis=1))
    step = max(1, (1 << 18) // max(width, 1))  # slices of at most 256k weights (2 MiB): they stay in cache
    for lo in range(0, len(rows), step):
        part = rows[lo : lo + step]
        dense = np.tile(pw[:width], (len(part), 1))
        at, col = np.nonzero(judged_[part])
        dense[at, m.rank[part][at, col]] = 0.0  # adding 0.0 leaves the running sum as it is
        np.cumsum(dense, axis=1, out=dense)
        total = dense[np.arange(len(part)), m.num_ret[part] - 1]
        with np.errstate(over="ignore", invalid="ignore"):
            out[part] = pw[m.num_ret[part]] + (1 - p) * total
    return out[:, None]


Kernel = Callable[[RelMatrix, Args], np.ndarray]

# The one table of kernels: the registry's metrics and trec_eval families name their entry here.
KERNELS: dict[str, Kernel] = {
    "precision": precision,
    "precision_ceiling": precision_ceiling,
    "recall": recall,
    "success": success,
    "f1": f1,
    "average_precision": average_precision,
    "reciprocal_rank": reciprocal_rank,
    "r_precision": r_precision,
    "bpref": bpref,
    "dcg": dcg,
    "ideal_dcg": ideal_dcg,
    "ndcg": ndcg,
    "judged": judged,
    "err": err,
    "rbp": rbp,
    "rbp_resid": rbp_resid,
}

"""Every trec_eval 10.0 measure family that reads qrels and a ranked run, vectorised over all queries.

One `Family` per trec_eval measure (its name, parameter kind and defaults, how the summary combines
queries, how values print), in trec_eval's own order (measures.c), which is the order it prints in.
Each `compute` returns a [queries × values] array from a `RelMatrix` (its hits: see rels.py); the rules are
trec_eval's m_*.c files read line by line (which use `-l`, which use gains, what a query with R = 0 gets).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import NamedTuple

import numpy as np

from eval_core.ranking.kernels import KERNELS, Args, gain_setup, gain_table
from eval_core.ranking.kernels import ap_sum as _ap_sum
from eval_core.ranking.kernels import div as _div
from eval_core.ranking.kernels import hit_dcg as _hit_dcg
from eval_core.ranking.kernels import ideal_cum as _ideal_cum
from eval_core.ranking.kernels import judged_hits as _judged_hits
from eval_core.ranking.kernels import rel_at as _rel_at
from eval_core.ranking.kernels import seqsum as _seqsum
from eval_core.ranking.trec_eval.params import ParamKind, Params, valid_int
from eval_core.ranking.trec_eval.rels import NONPOOL, UNJUDGED, RelMatrix

MIN_GEO_MEAN = 0.00001
INFAP_EPSILON = 0.00001
CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class Average(StrEnum):
    """How a family's summary (`all`) row combines the per-query values."""

    MEAN = "mean"  # arithmetic mean over queries (with -c over every qrels query)
    GM = "gm"  # geometric mean: per-query log(max(v, 1e-5)), summed, exp(sum / n)
    SUM = "sum"  # summed (num_ret, num_rel, num_rel_ret, num_nonrel_judged_ret)
    COUNT = "count"  # num_q: the number of queries
    NONE = "none"  # runid, relstring: no summary value


class Options(NamedTuple):
    """The command-line settings measures read: -l, -N, and which trec_eval's rules (10 or 9)."""

    rel_level: int = 1
    num_docs_in_coll: int = 0
    version: int = 10


class Family(NamedTuple):
    """One trec_eval measure family."""

    name: str
    kind: ParamKind
    defaults: tuple
    average: Average
    compute: Callable[[RelMatrix, Params, Options], np.ndarray] | None
    integer: bool = False  # printed as %ld
    per_query: bool = True  # printed for each query with -q
    doc: str = ""
    kernel: str = ""  # the one kernel (eval_core.ranking.kernels.KERNELS) computing it, when `qrelkit eval` shares it
    kernel_args: Callable[[Params], Args] | None = None  # the kernel's arguments for these parameters

    def values(self, m: RelMatrix, params: Params, opts: Options) -> np.ndarray:
        """[queries × names] values: by the shared kernel, or by this family's own function."""
        if self.kernel:
            return KERNELS[self.kernel](m, self.kernel_args(params) if self.kernel_args else Args())
        assert self.compute is not None
        return self.compute(m, params, opts)

    def names(self, params: Params) -> list[str]:
        """The value names printed for these parameters (`P_5`, `iprec_at_recall_0.10`, `ndcg_1=3`)."""
        if self.kind is ParamKind.LONG_CUTS:
            return [f"{self.name}_{c}" for c in params.values]
        if self.kind is ParamKind.DOUBLE_CUTS:
            return [f"{self.name}_{c:3.2f}" for c in params.values]
        if self.kind in (ParamKind.DOUBLES, ParamKind.PAIRS) and params.printable is not None:
            return [f"{self.name}_{params.printable}"]
        return [self.name]


# ---- shared pieces ---------------------------------------------------------------------------------------
# A RelMatrix holds each query's hits (retrieved documents the qrels name) in rank order; every other
# retrieved rank is NONPOOL. Counts over ranks come from the hits and num_ret; cumulative sums run over the
# hits of a row in rank order, which is the same sum as over every rank (the others add nothing).


def _nrr(m: RelMatrix) -> np.ndarray:
    """Relevant documents retrieved, per query."""
    return m.isrel.sum(axis=1)


def _col(v: np.ndarray) -> np.ndarray:
    return np.asarray(v, dtype=np.float64)[:, None]


def _pairs(p: Params) -> tuple[tuple[int, float], ...]:
    """The `level=gain` pairs among a family's parameters (rbp's `p=` is not one)."""
    return tuple((int(n), float(v)) for n, v in p.values if valid_int(n)) if p.values else ()


def _gain_setup(m: RelMatrix, p: Params) -> tuple[RelMatrix, np.ndarray, np.ndarray, np.ndarray]:
    return gain_setup(m, Args(gains=_pairs(p)))


def _kernel_values(name: str, m: RelMatrix) -> np.ndarray:
    """A kernel's whole-ranking value per query (gm_map and gm_bpref take the log of map's and bpref's)."""
    return KERNELS[name](m, Args())[:, 0]


def _cuts(p: Params) -> Args:
    return Args(cuts=tuple(float(k) for k in p.values))


def _gains(p: Params) -> Args:
    return Args(gains=_pairs(p))


def _judged_split(m: RelMatrix) -> tuple[np.ndarray, np.ndarray]:
    """bpref's and infAP's (relevant, non-relevant) judged hits: a grade ≥ 0, relevant from -l up."""
    v = m.value
    judged = m.hit & (v != NONPOOL) & (v != UNJUDGED)
    nonrel = judged & (v >= 0) & (v < m.rel_level)
    return judged & ~nonrel, nonrel


def _interpolated(m: RelMatrix, fractions: tuple, opts: Options) -> np.ndarray:
    """Interpolated precision at each recall fraction (iprec_at_recall, 11pt_avg): the best precision at
    or after the rank where the cutoff's relevant document is reached (precision only rises at a relevant
    document, so the hits suffice). trec_eval 10.0 rounds the cutoff fraction·R to the nearest count;
    version 9 adds 0.9 and truncates."""
    isrel = m.isrel
    nrr = _nrr(m)
    prec = np.where(m.hit, m.cum / (m.rank + 1.0), 0.0)
    best_after = np.maximum.accumulate(prec[:, ::-1], axis=1)[:, ::-1]
    cols = np.nonzero(isrel)[1]
    start = np.concatenate([[0], np.cumsum(nrr)])[:-1]
    R = m.num_rel.astype(np.float64)
    out = np.zeros((len(m.qids), len(fractions)))
    for j, frac in enumerate(fractions):
        scaled = frac * R
        cut = (
            np.floor(np.abs(scaled) + 0.5) * np.sign(scaled) if opts.version >= 10 else np.trunc(scaled + 0.9)
        ).astype(np.int64)
        reach = np.maximum(cut, 1)
        ok = (cut <= nrr) & (nrr > 0)
        flat = np.where(ok, start + reach - 1, 0)
        if len(cols):
            out[:, j] = np.where(ok, best_after[np.arange(len(m.qids)), cols[np.minimum(flat, len(cols) - 1)]], 0.0)
        # Nothing retrieved (-J left no judged document, or -M0): m_iprec_at_recall.c's starting precision is
        # num_rel_ret / num_ret = 0.0 / 0.0, x86's negative NaN, given to every cutoff of 0 relevant documents.
        out[(m.num_ret == 0) & (cut <= 0), j] = -np.nan
    return out


# ---- families -------------------------------------------------------------------------------------------


def _num_ret(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return _col(m.num_ret)


def _num_rel(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return _col(m.num_rel)


def _num_rel_ret(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return _col(_nrr(m))


def _gm_map(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return _col(np.log(np.maximum(_kernel_values("average_precision", m), MIN_GEO_MEAN)))


def _gm_bpref(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return _col(np.log(np.maximum(_kernel_values("bpref", m), MIN_GEO_MEAN)))


def _iprec(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return _interpolated(m, p.values, o)


def _infap(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    rel, nonrel = _judged_split(m)
    rel_so_far = np.cumsum(rel, axis=1).astype(np.float64)
    nonrel_so_far = np.cumsum(nonrel, axis=1)
    unj_so_far = np.cumsum(m.hit & (m.value == UNJUDGED), axis=1)
    j = m.rank.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        later = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel_so_far - 1 + nonrel_so_far + unj_so_far) / j) * (
            (rel_so_far - 1 + INFAP_EPSILON) / (rel_so_far - 1 + nonrel_so_far + 2 * INFAP_EPSILON)
        )
    term = np.where(j == 0, 1.0, later)
    total = _seqsum(np.where(rel, term, 0.0))
    return _col(np.where(m.num_rel > 0, _div(total, m.num_rel), total))


def _rprec_mult(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    cols = []
    for frac in p.values:
        cut = np.trunc(frac * m.num_rel + 0.9).astype(np.int64)
        cols.append(np.where(cut > 0, _div(_rel_at(m, cut), cut), 0.0))
    return np.stack(cols, axis=1)


def _utility(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    if len(p.values) != 4:
        raise MeasureError("utility", "improper number of coefficients")
    a, b, c, d = p.values
    nrr = _nrr(m)
    ret, R = m.num_ret, m.num_rel
    return _col(a * nrr + b * (ret - nrr) + c * (R - nrr) + d * (o.num_docs_in_coll + nrr - ret - R))


def _11pt(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    if not p.values:
        raise MeasureError("11pt_avg", "No cutoff values")
    return _col(_seqsum(_interpolated(m, p.values, o)) / len(p.values))


def _bin_g(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    isrel = m.isrel
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(isrel, 1.0 / np.log2(3.0 + m.rank - m.cum), 0.0)
    return _col(np.where(isrel.any(axis=1), _div(_seqsum(term), m.num_rel), 0.0))


def _g(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    m, res, ideal, _ = _gain_setup(m, p)
    width = ideal.shape[1]
    cost_ideal = np.cumsum(np.maximum(ideal, 1.0), axis=1)  # past the ideal ranking each rank costs 1
    r = m.rank
    cost = np.where(
        r < width,
        np.take_along_axis(cost_ideal, np.minimum(r, width - 1), axis=1),
        cost_ideal[:, -1:] + (r - width + 1),
    )
    got = np.cumsum(res, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(res != 0, res / np.log2(2.0 + cost - got), 0.0)
    sum_ideal = _seqsum(ideal)
    return _col(np.where(sum_ideal > 0, _div(_seqsum(term), sum_ideal), 0.0))


def _ndcg_rel(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    m, res, ideal, npos = _gain_setup(m, p)
    dcg = np.cumsum(_hit_dcg(m, res), axis=1)
    idcg = _ideal_cum(ideal)
    at = np.take_along_axis(idcg, np.minimum(m.rank, idcg.shape[1] - 1), axis=1)  # past the ideal end: its total
    hit = res > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        total = _seqsum(np.where(hit, dcg / at, 0.0))
        final = (dcg[:, -1] / idcg[:, -1]) if dcg.shape[1] else np.zeros(len(m.qids))
        total = total + (npos - hit.sum(axis=1)) * final
        value = np.where(total > 0, total / npos, 0.0)
    return _col(value)


def _rndcg(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    table = gain_table(_pairs(p), m)
    m, res, ideal, E = _gain_setup(m, p)
    n = len(m.qids)
    dcg = np.concatenate([np.zeros((n, 1)), np.cumsum(_hit_dcg(m, res), axis=1)], 1)
    idcg = np.concatenate([np.zeros((n, 1)), _ideal_cum(ideal)], 1)
    rows = np.arange(n)
    nret = m.num_ret
    total = np.zeros(n)
    count = np.zeros(n)
    # boundaries: where the ideal gain changes value (end of each run of one positive gain)
    gains = sorted({g for lv, g in table.items() if g > 0 and 0 <= lv < m.levels.shape[1]}, reverse=True)
    for g in gains:
        b = np.zeros(n, dtype=np.int64)
        run = np.zeros(n, dtype=np.int64)
        for lv, gain in table.items():
            if 0 <= lv < m.levels.shape[1] and gain >= g:
                b += m.levels[:, lv]
            if 0 <= lv < m.levels.shape[1] and gain == g:
                run += m.levels[:, lv]
        take = (run > 0) & (b >= 1)
        num = dcg[rows, m.hits_before(np.minimum(b, nret))]
        den = idcg[rows, np.minimum(b, idcg.shape[1] - 1)]
        ok = take & (den > 0)
        total += np.where(ok, _div(num, den), 0.0)
        count += ok
    extra = (nret > E + 1) & (E >= 1)
    den = idcg[rows, np.minimum(E, idcg.shape[1] - 1)]
    ok = extra & (den > 0)
    total += np.where(ok, _div(dcg[:, -1], den), 0.0)
    count += ok
    # no relevant document: 0 (m_Rndcg.c returns early, in 9 and 10); no R level with a positive ideal DCG
    # (every gain ≤ 0): trec_eval divides 0.0 by 0 boundaries, a NaN
    with np.errstate(divide="ignore", invalid="ignore"):
        return _col(np.where(m.num_rel > 0, total / count, 0.0))


def _relative_p(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return np.stack([_div(_rel_at(m, k), np.minimum(k, m.num_rel)) for k in p.values], axis=1)


def _set_p(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return _col(_div(_nrr(m), m.num_ret))


def _set_relative_p(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    nrr = _nrr(m)
    return _col(np.where((m.num_ret > 0) & (m.num_rel > 0), _div(nrr, np.minimum(m.num_ret, m.num_rel)), 0.0))


def _set_recall(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return _col(_div(_nrr(m), m.num_rel))


def _set_map(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    nrr = _nrr(m).astype(np.float64)
    return _col(_div(nrr * nrr, m.num_ret.astype(np.float64) * m.num_rel))


def _set_f(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    nrr = _nrr(m)
    x = p.values[0]
    P, R = _div(nrr, m.num_ret), _div(nrr, m.num_rel)
    return _col(np.where(nrr > 0, _div((x + 1.0) * P * R, x * P + R), 0.0))


def _num_nonrel_judged_ret(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    return _col(_judged_hits(m).sum(axis=1) - _nrr(m))


def _yaap(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    s = _ap_sum(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _col(np.log((1.0 + s) / (1.0 + m.num_rel - s)))


def _persistence(p: Params) -> float:
    value = 0.9
    for name, v in p.values or ():
        if name == "p":
            value = v
    return value


def _ndcg_cut_args(p: Params) -> Args:
    return Args(cuts=tuple(float(k) for k in p.values), zero_without_ideal=False)


def _rbp_args(p: Params) -> Args:
    return Args(p=_persistence(p), gains=_pairs(p))


def _unj(m: RelMatrix, p: Params, o: Options) -> np.ndarray:
    judged = _judged_hits(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.stack(
            [(np.maximum(np.minimum(k, m.num_ret), 0) - m.count_before(judged, k)) / k for k in p.values], axis=1
        )


class MeasureError(RuntimeError):
    """A measure trec_eval cannot calculate with the parameters given (it exits 4)."""

    def __init__(self, measure: str, problem: str) -> None:
        self.measure = measure
        super().__init__(f"measure '{measure}': {problem}")


N, LC, DC, D, PR = ParamKind.NONE, ParamKind.LONG_CUTS, ParamKind.DOUBLE_CUTS, ParamKind.DOUBLES, ParamKind.PAIRS
MEAN, GM, SUM = Average.MEAN, Average.GM, Average.SUM

# trec_eval 10.0's measures.c order, without the preference and judge-group families (prefs.py, judge_groups.py)
FAMILIES: tuple[Family, ...] = (
    Family("runid", N, (), Average.NONE, None, per_query=False, doc="run id of the results file's last line"),
    Family("num_q", N, (), Average.COUNT, None, integer=True, per_query=False, doc="number of queries"),
    Family("num_ret", N, (), SUM, _num_ret, integer=True, doc="documents retrieved"),
    Family("num_rel", N, (), SUM, _num_rel, integer=True, doc="relevant documents (grade ≥ -l)"),
    Family("num_rel_ret", N, (), SUM, _num_rel_ret, integer=True, doc="relevant documents retrieved"),
    Family("map", N, (), MEAN, None, doc="mean average precision", kernel="average_precision"),
    Family("gm_map", N, (), GM, _gm_map, per_query=False, doc="geometric mean of AP (floor 1e-5)"),
    Family("Rprec", N, (), MEAN, None, doc="precision after R documents", kernel="r_precision"),
    Family("bpref", N, (), MEAN, None, doc="binary preference (Buckley & Voorhees 2004)", kernel="bpref"),
    Family(
        "recip_rank", N, (), MEAN, None, doc="reciprocal rank of the first relevant document", kernel="reciprocal_rank"
    ),
    Family("iprec_at_recall", DC, RECALL_POINTS, MEAN, _iprec, doc="interpolated precision at recall levels"),
    Family("P", LC, CUTS, MEAN, None, doc="precision at cutoffs", kernel="precision", kernel_args=_cuts),
    Family(
        "relstring",
        D,
        (10.0,),
        Average.NONE,
        None,
        doc="relevance values of the first N documents as a string",
    ),
    Family("recall", LC, CUTS, MEAN, None, doc="recall at cutoffs", kernel="recall", kernel_args=_cuts),
    Family("infAP", N, (), MEAN, _infap, doc="inferred AP (Yilmaz & Aslam 2006); -2 grades: pooled, unjudged"),
    Family("gm_bpref", N, (), GM, _gm_bpref, per_query=False, doc="geometric mean of bpref"),
    Family(
        "Rprec_mult",
        DC,
        (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
        MEAN,
        _rprec_mult,
        doc="precision at multiples of R",
    ),
    Family(
        "utility",
        D,
        (1.0, -1.0, 0.0, 0.0),
        MEAN,
        _utility,
        doc="set utility a·rel_ret + b·nonrel_ret + c·rel_missed + d·nonrel_missed",
    ),
    Family("11pt_avg", D, RECALL_POINTS, MEAN, _11pt, doc="interpolated precision averaged over recall points"),
    Family("binG", N, (), MEAN, _bin_g, doc="binary G"),
    Family("G", PR, (), MEAN, _g, doc="normalised gain G"),
    Family("dcg", PR, (), MEAN, None, doc="discounted cumulative gain", kernel="dcg", kernel_args=_gains),
    Family(
        "ideal_dcg", PR, (), MEAN, None, doc="ideal discounted cumulative gain", kernel="ideal_dcg", kernel_args=_gains
    ),
    Family(
        "ndcg",
        PR,
        (),
        MEAN,
        None,
        doc="nDCG over the whole ranking (Järvelin & Kekäläinen 2002)",
        kernel="ndcg",
        kernel_args=_gains,
    ),
    Family("ndcg_rel", PR, (), MEAN, _ndcg_rel, doc="nDCG averaged over the relevant documents"),
    Family("Rndcg", PR, (), MEAN, _rndcg, doc="nDCG averaged at the R levels"),
    Family("ndcg_cut", LC, CUTS, MEAN, None, doc="nDCG at cutoffs", kernel="ndcg", kernel_args=_ndcg_cut_args),
    Family(
        "map_cut",
        LC,
        CUTS,
        MEAN,
        None,
        doc="average precision at cutoffs",
        kernel="average_precision",
        kernel_args=_cuts,
    ),
    Family("relative_P", LC, CUTS, MEAN, _relative_p, doc="precision at k over the best possible at k"),
    Family(
        "success",
        LC,
        (1, 5, 10),
        MEAN,
        None,
        doc="1 if a relevant document is in the top k",
        kernel="success",
        kernel_args=_cuts,
    ),
    Family("set_P", N, (), MEAN, _set_p, doc="precision of the retrieved set"),
    Family("set_relative_P", N, (), MEAN, _set_relative_p, doc="set precision over the best possible"),
    Family("set_recall", N, (), MEAN, _set_recall, doc="recall of the retrieved set"),
    Family("set_map", N, (), MEAN, _set_map, doc="set precision × set recall"),
    Family("set_F", D, (1.0,), MEAN, _set_f, doc="set F measure (x+1)PR/(xP+R)"),
    Family(
        "num_nonrel_judged_ret",
        N,
        (),
        SUM,
        _num_nonrel_judged_ret,
        integer=True,
        doc="judged non-relevant documents retrieved",
    ),
    Family("yaap", N, (), MEAN, _yaap, doc="yet another AP (Robertson 2012)"),
    Family(
        "rbp",
        PR,
        (),
        MEAN,
        None,
        doc="rank-biased precision, p = 0.9 (Moffat & Zobel 2008)",
        kernel="rbp",
        kernel_args=_rbp_args,
    ),
    Family(
        "rbp_resid",
        PR,
        (),
        MEAN,
        None,
        doc="RBP residual from unjudged documents",
        kernel="rbp_resid",
        kernel_args=_rbp_args,
    ),
    Family("unj", LC, (5, 10, 20), MEAN, _unj, doc="fraction of unjudged documents at cutoffs"),
)
BY_NAME = {f.name: f for f in FAMILIES}

OFFICIAL = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
)
ALL_TREC = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
    "relstring",
    "recall",
    "unj",
    "rbp",
    "rbp_resid",
    "infAP",
    "gm_bpref",
    "utility",
    "11pt_avg",
    "ndcg",
    "relative_P",
    "Rprec_mult",
    "success",
    "map_cut",
    "ndcg_cut",
    "ndcg_rel",
    "Rndcg",
    "binG",
    "G",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
)
SET = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "utility",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
)
NICKNAMES: dict[str, tuple[str, ...]] = {"official": OFFICIAL, "set": SET, "all_trec": ALL_TREC}

# Every measure name trec_eval 10.0 knows, in its order (measures.c), and its nicknames for sets of them.
PREFS_NAMES = (
    "prefs_num_prefs_poss",
    "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret",
    "prefs_simp",
    "prefs_pair",
    "prefs_avgjg",
    "prefs_avgjg_Rnonrel",
    "prefs_simp_ret",
    "prefs_pair_ret",
    "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp",
    "prefs_pair_imp",
    "prefs_avgjg_imp",
)
JG_NAMES = ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg")
_QRELS_ORDER = tuple(f.name for f in FAMILIES)
ORDER: tuple[str, ...] = (
    *_QRELS_ORDER[: _QRELS_ORDER.index("yaap")],
    *PREFS_NAMES,
    *JG_NAMES,
    *_QRELS_ORDER[_QRELS_ORDER.index("yaap") :],
)
NICKNAMES.update(
    {
        "all_prefs": ("runid", "num_q", *PREFS_NAMES),
        "prefs": ("runid", "num_q", *PREFS_NAMES[:6]),
        "qrels_jg": ("runid", "num_q", *JG_NAMES),
    }
)

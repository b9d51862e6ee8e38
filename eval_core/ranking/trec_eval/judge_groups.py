"""trec_eval 10.0's judge-group qrels (`-R qrels_jg`) and its measures map_avgjg, P_avgjg, Rprec_mult_avgjg, exactly.

API (names kept for the `qrelkit trec_eval` command line):

- `read_qrels_jg(path) -> QrelsJG`: a `qid jg docid rel` file, one set of judgments per judgment group (judge),
  read by `eval_core.io.trec_text.read_qrels_jg` (blank and `#` lines skipped); bad input raises `InputError`
  naming `path:line`.
- `JG_MEASURES`: the three families in trec_eval's print order; `DEFAULT_PARAMS` their default cutoffs.
- `jg_measures(qrels_jg, ranked, params=None, *, rel_level=1, judged_only=False) -> dict[qid, dict[name, float]]`:
  per query in both (byte order of ids), values named as trec_eval prints them (`map_avgjg`, `P_avgjg_5`,
  `Rprec_mult_avgjg_0.20`, ...). `ranked` holds each query's docids in trec_eval's usual order (score descending,
  ties by docid descending, cut at `-M`: `reading.ranked_docids`); under `-c` trec_eval 10 scores a query
  missing from the run against one bogus unjudged doc: pass that list (`["ceci_nest_pas_un_docno"]`) or an empty one,
  the values are the same. `params` maps "P_avgjg" to cutoffs and "Rprec_mult_avgjg" to multiples of R (sorted here, as
  trec_eval sorts them); `rel_level` is `-l`, `judged_only` is `-J`. Every value is computed per judgment group,
  then averaged over the query's groups; the `all` value of each is the mean over queries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eval_core.io.trec_text import read_qrels_jg as io_read_qrels_jg
from eval_core.ranking.kernels import KERNELS, Args
from eval_core.ranking.trec_eval.reading import byte_key
from eval_core.ranking.trec_eval.rels import RelMatrix

JG_MEASURES: tuple[str, ...] = ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg")
DEFAULT_PARAMS: dict[str, tuple[float, ...]] = {
    "P_avgjg": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "Rprec_mult_avgjg": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
}
_NONPOOL = -1  # retrieved, not in the group's qrels
_UNJUDGED = -2  # in the group's qrels with a negative relevance (pooled, not judged)


@dataclass(frozen=True)
class QrelsJG:
    """Judgments per query id, then per judgment group (both in byte order): docid → relevance."""

    by_query: dict[str, dict[str, dict[str, int]]]


def read_qrels_jg(path: str | Path) -> QrelsJG:
    """A `qid jg docid rel` file (`-R qrels_jg`) read by the one judge-group reader (`eval_core.io.trec_text`,
    which `qrelkit eval --qrels-format jg` and imports use too), grouped in trec_eval's byte order."""
    frame = io_read_qrels_jg(path)
    out: dict[str, dict[str, dict[str, int]]] = {}
    for qid, jg, doc, grade in frame.itertuples(index=False, name=None):
        out.setdefault(qid, {}).setdefault(jg, {})[doc] = int(grade)
    return QrelsJG({q: {g: out[q][g] for g in sorted(out[q], key=byte_key)} for q in sorted(out, key=byte_key)})


def _params(params: Mapping[str, Sequence[float]] | None) -> tuple[list[int], list[float]]:
    """P_avgjg cutoffs and Rprec_mult_avgjg multiples, sorted and checked as trec_eval's meas_init.c does."""
    given = {**DEFAULT_PARAMS, **(params or {})}
    unknown = set(given) - set(DEFAULT_PARAMS)
    if unknown:
        raise ValueError(f"no parameters for {sorted(unknown)}: only P_avgjg and Rprec_mult_avgjg take them")
    cuts = sorted(int(c) for c in given["P_avgjg"])
    mults = sorted(float(m) for m in given["Rprec_mult_avgjg"])
    if not cuts or cuts[0] <= 0:
        raise ValueError("P_avgjg cutoffs must be positive")
    if len(set(cuts)) != len(cuts) or len(set(mults)) != len(mults) or not mults:
        raise ValueError("duplicate cutoffs for P_avgjg or Rprec_mult_avgjg")
    return cuts, mults


def _double_name(name: str, value: float) -> str:
    """trec_eval's `%s_%3.2f` name in a buffer of len(name) + 10 bytes (so at most 9 characters follow the name)."""
    return f"{name}_{value:3.2f}"[: len(name) + 9]


def _group_list(ranked: Sequence[str], judged: Mapping[str, int], judged_only: bool) -> list[int]:
    """The relevance of each ranked doc for one group: its grade, -1 not in its qrels, -2 pooled unjudged;
    with `-J` only docs graded >= 0 are kept, in rank order."""
    rels = [judged.get(d, _NONPOOL) for d in ranked]
    rels = [r if r == _NONPOOL or r >= 0 else _UNJUDGED for r in rels]
    return [r for r in rels if r >= 0] if judged_only else rels


def _group_matrix(rels: list[int], judged: Mapping[str, int], rel_level: int) -> RelMatrix:
    """One group's ranking as the kernels' input (every retrieved rank a hit when -l ≤ −1 makes NONPOOL count)."""
    grades = np.asarray([g for g in judged.values() if g >= 0], dtype=np.int64)
    levels = np.bincount(grades, minlength=1)[None, :]
    m = RelMatrix.from_rows(["q"], [rels], levels, np.array([False]), rel_level)
    return m.materialized() if rel_level <= _NONPOOL else m


def _group_ap(m: RelMatrix, num_rel: int) -> float | None:
    """Average precision of one group by the one AP kernel (m_map_avgjg.c), None when no relevant document is
    retrieved (adds nothing); with -l below 0 and no relevant judged document, C's division by 0 gives inf."""
    if not m.isrel.any():
        return None
    if not num_rel:
        return float("inf")
    return float(KERNELS["average_precision"](m, Args())[0, 0])


def _rprec_mult(rels: list[int], num_rel: int, num_rel_ret: int, mults: list[float], rel_level: int) -> list[float]:
    """Precision at int(m·R + 0.9) docs for one group, the backward walk of m_Rprec_mult_avgjg.c (a cutoff past
    the end counts the missing docs as nonrelevant; a cutoff of 0 or above the last relevant doc adds 0)."""
    cuts = [int(m * num_rel + 0.9) for m in mults]
    out = [0.0] * len(cuts)
    current = len(cuts) - 1
    num_ret = len(rels)
    while current >= 0 and cuts[current] > num_ret:
        out[current] += num_rel_ret / cuts[current]
        current -= 1
    so_far = num_rel_ret
    i = num_ret
    while i > 0 and so_far > 0:
        precis = so_far / i
        while current >= 0 and i == cuts[current]:
            out[current] += precis
            current -= 1
        if rels[i - 1] >= rel_level:
            so_far -= 1
        i -= 1
    return out


def _query(
    groups: Mapping[str, Mapping[str, int]],
    ranked: Sequence[str],
    cuts: list[int],
    mults: list[float],
    rel_level: int,
    judged_only: bool,
) -> dict[str, float]:
    """One query's values: each group's, summed in group order, divided by the number of groups."""
    map_sum = 0.0
    p_sums = [0.0] * len(cuts)
    r_sums = [0.0] * len(mults)
    for judged in groups.values():
        rels = _group_list(ranked, judged, judged_only)
        num_rel = sum(1 for r in judged.values() if r >= 0 and r >= rel_level)
        num_rel_ret = sum(1 for r in rels if r >= 0 and r >= rel_level)
        m = _group_matrix(rels, judged, rel_level)
        ap = _group_ap(m, num_rel)
        if ap is not None:
            map_sum += ap
        for k, value in enumerate(KERNELS["precision"](m, Args(cuts=tuple(map(float, cuts))))[0]):
            p_sums[k] += float(value)
        for k, value in enumerate(_rprec_mult(rels, num_rel, num_rel_ret, mults, rel_level)):
            r_sums[k] += value
    n = len(groups)
    if n > 1:
        map_sum /= n
        p_sums = [v / n for v in p_sums]
        r_sums = [v / n for v in r_sums]
    values = {"map_avgjg": map_sum}
    values.update({f"P_avgjg_{cut}": v for cut, v in zip(cuts, p_sums, strict=True)})
    values.update({_double_name("Rprec_mult_avgjg", m): v for m, v in zip(mults, r_sums, strict=True)})
    return values


def jg_measures(
    qrels_jg: QrelsJG,
    ranked: Mapping[str, Sequence[str]],
    params: Mapping[str, Sequence[float]] | None = None,
    *,
    rel_level: int = 1,
    judged_only: bool = False,
) -> dict[str, dict[str, float]]:
    """map_avgjg, P_avgjg_<k> and Rprec_mult_avgjg_<m> per query in both `qrels_jg` and `ranked`, in trec_eval's
    print order; each is the mean over the query's judgment groups, and the `all` value the mean over queries."""
    cuts, mults = _params(params)
    return {
        qid: _query(groups, ranked[qid], cuts, mults, rel_level, judged_only)
        for qid, groups in qrels_jg.by_query.items()
        if qid in ranked
    }

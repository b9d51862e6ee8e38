"""trec_eval 10.0's preference judgments (`-R prefs`, `-R qrels_prefs`) and its 14 `all_prefs` measures, exactly.

API (names kept for the `qrelkit trec_eval` command line):

- `read_prefs(path) -> Prefs`: a `qid jg jsg docid rel_level` file; `read_qrels_prefs(path) -> Prefs`: a qrels file
  read as preferences (`qid iter docid rel`, the iter column is the judgment group, one sub-group "0"), as
  `-R qrels_prefs` does; `prefs_from_qrels(qrels_by_query) -> Prefs`: the same from judgments already read (one
  judgment group "0" per query). Bad input raises `InputError` naming `path:line`.
- `prefs_ranking(by_query, max_docs=None) -> dict[str, list[str]]`: each query's docids in the order trec_eval ranks
  them for preferences, which differs from its other measures: score descending, ties by docid *ascending* (bytes);
  `max_docs` is `-M`.
- `PREFS_MEASURES`: the 14 names in trec_eval's print order.
- `prefs_measures(prefs, ranked) -> dict[qid, dict[measure, float]]`: per query (those in both `prefs` and `ranked`,
  byte order of ids; under `-c` trec_eval 10 scores a query missing from the run against one
  bogus unjudged doc, which an empty list here gives the same values as). The `all` value: the three
  `prefs_num_prefs_*` counts are summed over queries (they print as integers); the other 11 are means over the
  queries evaluated (over every query of the prefs file with `-c`).

How trec_eval counts (form_prefs_counts.c): the judged docs of a query get internal ranks, the retrieved ones
0..n_ret-1 in ranking order, the others after them in docid order. A judgment group (JG) with one sub-group (JSG)
prefers every doc to each doc of lower rel_level; with several JSGs the union of each JSG's preferences is closed
transitively. A preference a>b is fulfilled if a ranks above b (a retrieved); "ret" counts only pairs with both
retrieved, "imp" also pairs with exactly one retrieved, the plain measures every pair.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from eval_core.errors import InputError
from eval_core.ranking.trec_eval.reading import _decode, _read_bytes, byte_key

PREFS_MEASURES: tuple[str, ...] = (
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
SUMMED_MEASURES: tuple[str, ...] = PREFS_MEASURES[:3]
"""The measures whose `all` value is the sum over queries, not the mean."""


class PrefJudgment(NamedTuple):
    """One line of a prefs file: in judgment group `jg`, sub-group `jsg`, `docid` has `rel_level`."""

    jg: str
    jsg: str
    docid: str
    rel_level: float


@dataclass(frozen=True)
class Prefs:
    """Preference judgments per query id (byte order of ids), each query's lines in file order."""

    by_query: dict[str, tuple[PrefJudgment, ...]]


def read_prefs(path: str | Path) -> Prefs:
    """A `qid jg jsg docid rel_level` file (`-R prefs`); lines starting with `#` are comments."""
    return _read(path, 5, "'qid jg jsg docid rel_level'")


def read_qrels_prefs(path: str | Path) -> Prefs:
    """A `qid iter docid rel` qrels file read as preferences (`-R qrels_prefs`): iter is the judgment group."""
    return _read(path, 4, "'qid iter docid rel'")


def prefs_from_qrels(qrels_by_query: Mapping[str, Mapping[str, int]]) -> Prefs:
    """Graded judgments as preferences, as `-R qrels_prefs` reads a qrels file whose iter column is all 0."""
    by_query = {
        qid: tuple(PrefJudgment("0", "0", doc, float(rel)) for doc, rel in docs.items())
        for qid, docs in qrels_by_query.items()
        if docs
    }
    return Prefs({q: by_query[q] for q in sorted(by_query, key=byte_key)})


def _read(path: str | Path, width: int, layout: str) -> Prefs:
    """Lines of `width` fields into preferences, checked as trec_eval checks them, with the offending line."""
    label = str(path)
    rows: dict[str, list[PrefJudgment]] = {}
    numbers: dict[str, list[int]] = {}
    lines = _read_bytes(path).split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if line.startswith(b"#"):
            continue
        fields = [_decode(f) for f in line.split()]
        if len(fields) != width:  # a blank line too: trec_eval calls it malformed
            raise InputError(label, number, f"expected {width} fields {layout}, found {len(fields)}")
        qid, jg, jsg, doc = (
            (fields[0], fields[1], fields[2], fields[3]) if width == 5 else (fields[0], fields[1], "0", fields[2])
        )
        try:
            level = float(fields[-1])
        except ValueError:
            raise InputError(label, number, f"rel_level {fields[-1]!r} is not a number") from None
        if math.isnan(level):
            raise InputError(label, number, "rel_level is not a number (nan)")
        rows.setdefault(qid, []).append(PrefJudgment(jg, jsg, doc, level))
        numbers.setdefault(qid, []).append(number)
    if not rows:
        raise InputError(label, None, "no preference lines")
    for qid, judgments in rows.items():
        _check_query(label, qid, judgments, numbers[qid])
    return Prefs({q: tuple(rows[q]) for q in sorted(rows, key=byte_key)})


def _check_query(label: str, qid: str, judgments: list[PrefJudgment], numbers: list[int]) -> None:
    """Refuse what trec_eval refuses when it evaluates the query: a doc at two rel_levels in one sub-group, a doc
    at 0 in one sub-group and above 0 in another of the same group, and preferences of one group that contradict
    each other. (A line repeated at the same level is kept: trec_eval counts it twice in a one-sub-group group.)"""
    groups: dict[str, list[int]] = {}
    seen: dict[tuple[str, str, str], int] = {}
    for i, pj in enumerate(judgments):
        key = (pj.jg, pj.jsg, pj.docid)
        if key in seen and judgments[seen[key]].rel_level != pj.rel_level:
            raise InputError(
                label,
                numbers[i],
                f"docid {pj.docid!r} has two rel_levels in sub-group {pj.jsg!r} "
                f"of judgment group {pj.jg!r} for query {qid!r} (first on line {numbers[seen[key]]})",
            )
        seen.setdefault(key, i)
        groups.setdefault(pj.jg, []).append(i)
    for jg, members in groups.items():
        if len({judgments[i].jsg for i in members}) < 2:
            continue
        levels: dict[str, list[int]] = {}
        for i in members:
            levels.setdefault(judgments[i].docid, []).append(i)
        for doc, where in levels.items():
            values = [judgments[i].rel_level for i in where]
            if any(v == 0.0 for v in values) and any(v > 0.0 for v in values):
                raise InputError(
                    label,
                    numbers[where[-1]],
                    f"docid {doc!r} has rel_level 0 in one sub-group and "
                    f"above 0 in another of judgment group {jg!r} for query {qid!r}",
                )
        docs = sorted(levels, key=byte_key)
        closed = _closure(docs, [judgments[i] for i in members])
        both = np.argwhere(closed & closed.T)
        if len(both):
            a, b = docs[both[0][0]], docs[both[0][1]]
            raise InputError(
                label,
                numbers[levels[a][0]],
                f"judgment group {jg!r} of query {qid!r} prefers "
                f"{a!r} to {b!r} and {b!r} to {a!r} (through its sub-groups)",
            )


def _closure(docs: list[str], judgments: Sequence[PrefJudgment]) -> np.ndarray:
    """docs × docs: True where a doc is preferred to another in some sub-group, closed transitively."""
    index = {d: i for i, d in enumerate(docs)}
    direct = np.zeros((len(docs), len(docs)), dtype=bool)
    by_jsg: dict[str, list[PrefJudgment]] = {}
    for pj in judgments:
        by_jsg.setdefault(pj.jsg, []).append(pj)
    for members in by_jsg.values():
        ids = np.array([index[pj.docid] for pj in members])
        lv = np.array([pj.rel_level for pj in members])
        direct[np.ix_(ids, ids)] |= lv[:, None] > lv[None, :]
    reach = direct | np.eye(len(docs), dtype=bool)
    while True:
        step = (reach.astype(np.int32) @ reach.astype(np.int32)) > 0
        if np.array_equal(step, reach):
            break
        reach = step
    np.fill_diagonal(reach, False)
    return reach


def prefs_ranking(
    by_query: Mapping[str, tuple[Sequence[str], np.ndarray]], max_docs: int | None = None
) -> dict[str, list[str]]:
    """Each query's docids as trec_eval ranks them for preferences: score descending, ties by docid ascending
    (bytes), then the first `max_docs` (`-M`). `by_query` is `reading.Results.by_query`."""
    out: dict[str, list[str]] = {}
    for qid, (docids, scores) in by_query.items():
        by_doc = sorted(range(len(docids)), key=lambda i: byte_key(docids[i]))
        order = np.asarray(by_doc, dtype=np.int64)
        if len(order):
            order = order[np.argsort(-np.asarray(scores, dtype=np.float64)[order], kind="stable")]
        ranked = [docids[i] for i in order]
        out[qid] = ranked if max_docs is None else ranked[:max_docs]
    return out


@dataclass
class _Group:
    """One judgment group of a query against a ranking: its preference pairs (internal ranks) and counts."""

    pref_i: np.ndarray  # the preferred doc of each preference
    pref_j: np.ndarray  # the other doc
    rank: np.ndarray  # internal ranks of the group's docs
    rel: np.ndarray  # per doc: counted relevant (level > 0)
    nonrel: np.ndarray  # per doc: counted nonrelevant (EC groups: level <= 0; array groups: level == 0)
    ecs: list[np.ndarray] | None  # one-sub-group groups: ranks per rel_level, highest level first, ascending
    ful_ret: int = 0
    poss_ret: int = 0
    ful_imp: int = 0
    poss_imp: int = 0
    notoccur: int = 0

    def count(self, n_ret: int) -> None:
        """Fulfilled and possible preferences, both retrieved (ret), exactly one (imp), neither (notoccur)."""
        i, j = self.pref_i, self.pref_j
        before = i < j
        both = (i < n_ret) & (j < n_ret)
        one = (i < n_ret) != (j < n_ret)
        self.ful_ret = int(np.count_nonzero(before & both))
        self.poss_ret = int(np.count_nonzero(both))
        self.ful_imp = int(np.count_nonzero(before & one))
        self.poss_imp = int(np.count_nonzero(one))
        self.notoccur = int(len(i) - self.poss_ret - self.poss_imp)

    @property
    def num_rel(self) -> int:
        return int(np.count_nonzero(self.rel))

    @property
    def num_nonrel(self) -> int:
        return int(np.count_nonzero(self.nonrel))

    def num_rel_ret(self, n_ret: int) -> int:
        return int(np.count_nonzero(self.rel & (self.rank < n_ret)))

    def num_nonrel_ret(self, n_ret: int) -> int:
        return int(np.count_nonzero(self.nonrel & (self.rank < n_ret)))


def _groups(judgments: Sequence[PrefJudgment], ranked: Sequence[str]) -> tuple[list[_Group], int, int]:
    """The query's judgment groups (byte order of ids), the number of judged docs and of judged docs retrieved."""
    judged = {pj.docid for pj in judgments}
    retrieved = [d for d in dict.fromkeys(ranked) if d in judged]
    rank = {d: i for i, d in enumerate(retrieved)}
    for d in sorted(judged - rank.keys(), key=byte_key):
        rank[d] = len(rank)
    by_jg: dict[str, list[PrefJudgment]] = {}
    for pj in judgments:
        by_jg.setdefault(pj.jg, []).append(pj)
    if len({(pj.jg, pj.jsg, pj.docid) for pj in judgments}) != len(
        {(pj.jg, pj.jsg, pj.docid, pj.rel_level) for pj in judgments}
    ):
        raise ValueError("a docid has two rel_levels in one sub-group (trec_eval refuses it)")
    groups = []
    for jg in sorted(by_jg, key=byte_key):
        members = by_jg[jg]
        if len({pj.jsg for pj in members}) == 1:
            groups.append(_ec_group(members, rank))
        else:
            groups.append(_array_group(members, rank))
    n_ret = len(retrieved)
    for g in groups:
        g.count(n_ret)
    return groups, len(judged), n_ret


def _ec_group(members: list[PrefJudgment], rank: dict[str, int]) -> _Group:
    """A group of one sub-group: equivalence classes of equal rel_level, each preferred to every lower one."""
    r = np.array([rank[pj.docid] for pj in members], dtype=np.int64)
    lv = np.array([pj.rel_level for pj in members])
    a, b = np.nonzero(lv[:, None] > lv[None, :])
    ecs = [np.sort(r[lv == v]) for v in sorted(set(lv.tolist()), reverse=True)]
    return _Group(r[a], r[b], r, lv > 0.0, ~(lv > 0.0), ecs)


def _array_group(members: list[PrefJudgment], rank: dict[str, int]) -> _Group:
    """A group of several sub-groups: the union of their preferences, closed transitively. A doc's level is the
    one from its last sub-group (byte order), as trec_eval's rel_array keeps it."""
    docs = sorted({pj.docid for pj in members}, key=byte_key)
    closed = _closure(docs, members)
    if (closed & closed.T).any():
        raise ValueError("the sub-groups of a judgment group contradict each other (trec_eval aborts on it)")
    last: dict[str, tuple[bytes, float]] = {}
    for pj in members:
        key = byte_key(pj.jsg)
        if pj.docid not in last or key > last[pj.docid][0]:
            last[pj.docid] = (key, pj.rel_level)
    r = np.array([rank[d] for d in docs], dtype=np.int64)
    lv = np.array([last[d][1] for d in docs])
    a, b = np.nonzero(closed)
    return _Group(r[a], r[b], r, lv > 0.0, lv == 0.0, None)


def _ratio(num: float, den: float) -> float:
    """num / den as C computes it in doubles: 0/0 is NaN (which then fails trec_eval's `sum > 0` test)."""
    if den:
        return num / den
    return math.nan if num == 0 else math.copysign(math.inf, num)


def _ful_before(a: np.ndarray, b: np.ndarray, n_ret: int | None) -> int:
    """Pairs (x in a, y in b) with x < y, counting only x < n_ret if given (b sorted ascending)."""
    xs = a if n_ret is None else a[a < n_ret]
    return int(np.sum(len(b) - np.searchsorted(b, xs, side="right")))


def _rnonrel(g: _Group, n_judged: int, n_ret: int, ret_only: bool) -> float:
    """One group's prefs_avgjg_Rnonrel(_ret) ratio (m_prefs_avgjg_Rnonrel*.c): nonrelevant docs cut or padded to R."""
    if ret_only:
        big_r, big_n = g.num_rel_ret(n_ret), g.num_nonrel_ret(n_ret)
    else:
        big_r, big_n = g.num_rel, g.num_nonrel
    if big_r >= big_n:
        pad_ful = g.num_rel_ret(n_ret) * (big_r - big_n)
        pad_poss = g.num_rel * (big_r - big_n)
        if ret_only:
            return _ratio(g.ful_ret + pad_ful, g.poss_ret + pad_poss)
        return _ratio(g.ful_ret + g.ful_imp + pad_ful, g.poss_ret + g.poss_imp + g.notoccur + pad_poss)
    if g.ecs is not None:
        return _rnonrel_ec(g.ecs, big_r, n_ret, ret_only)
    # Preference array: the nonrelevant docs after the first num_rel of them (internal rank order) are dropped.
    nonrel_ranks = np.sort(g.rank[g.nonrel])
    if ret_only:
        nonrel_ranks = nonrel_ranks[nonrel_ranks < n_ret]
    limit = n_ret if ret_only else n_judged
    first_dropped = int(nonrel_ranks[g.num_rel]) if len(nonrel_ranks) > g.num_rel else limit
    dropped = np.zeros(n_judged, dtype=bool)
    dropped[g.rank[g.nonrel & (g.rank >= first_dropped)]] = True
    keep = ~dropped[g.pref_i] & ~dropped[g.pref_j]
    i, j = g.pref_i[keep], g.pref_j[keep]
    if ret_only:
        both = (i < n_ret) & (j < n_ret)
        i, j = i[both], j[both]
    ful = int(np.count_nonzero((i < j) & (i < n_ret)))
    return _ratio(ful, len(i))


def _rnonrel_ec(ecs: list[np.ndarray], keep_nonrel: int, n_ret: int, ret_only: bool) -> float:
    """The recount of m_prefs_avgjg_Rnonrel*.c for equivalence classes, as written there: pairs between classes
    other than the last, then every class (the last one too) against the first `keep_nonrel` docs of the last."""
    if ret_only:
        ecs = [e[e < n_ret] for e in ecs]
    new_last = ecs[-1][:keep_nonrel]
    limit = None if ret_only else n_ret
    ful = total = 0
    for e1 in range(len(ecs)):
        for e2 in range(e1 + 1, len(ecs) - 1):
            ful += _ful_before(ecs[e1], ecs[e2], limit)
            total += len(ecs[e1]) * len(ecs[e2])
    for e1 in range(len(ecs)):
        ful += _ful_before(ecs[e1], new_last, limit)
        total += len(ecs[e1]) * len(new_last)
    return _ratio(ful, total)


def _avg_over_groups(ratios: Sequence[float], n_groups: int) -> float:
    """Sum of the groups' ratios in order, divided by the number of groups, 0 unless the sum is above 0."""
    total = 0.0
    for value in ratios:
        total += value
    return total / n_groups if total > 0.0 else 0.0


def _pair_sums(groups: list[_Group], n_judged: int, n_ret: int) -> dict[str, float]:
    """prefs_pair, _ret and _imp: per doc pair the share of the groups' preferences it fulfils, summed in
    trec_eval's order (retrieved pairs, then retrieved × unretrieved, each row by row)."""
    if not groups:
        return {"prefs_pair": 0.0, "prefs_pair_ret": 0.0, "prefs_pair_imp": 0.0}
    i = np.concatenate([g.pref_i for g in groups])
    j = np.concatenate([g.pref_j for g in groups])
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    keys, inverse = np.unique(lo * max(n_judged, 1) + hi, return_inverse=True)
    forward = np.bincount(inverse, weights=(i < j).astype(np.float64), minlength=len(keys))
    total = np.bincount(inverse, minlength=len(keys)).astype(np.float64)
    lo_k, hi_k = keys // max(n_judged, 1), keys % max(n_judged, 1)
    share = forward / total
    ret = hi_k < n_ret
    imp = (lo_k < n_ret) & ~ret
    ret_sum = float(np.cumsum(np.concatenate(([0.0], share[ret])))[-1])
    imp_sum = float(np.cumsum(np.concatenate(([ret_sum], share[imp])))[-1])
    n_r, n_i, n_all = int(np.count_nonzero(ret)), int(np.count_nonzero(imp)), len(keys)
    return {
        "prefs_pair": imp_sum / n_all if n_all else 0.0,
        "prefs_pair_ret": ret_sum / n_r if n_r else 0.0,
        "prefs_pair_imp": imp_sum / (n_r + n_i) if n_r + n_i else 0.0,
    }


def _query_measures(judgments: Sequence[PrefJudgment], ranked: Sequence[str]) -> dict[str, float]:
    """The 14 measures for one query."""
    groups, n_judged, n_ret = _groups(judgments, ranked)
    ful_ret = sum(g.ful_ret for g in groups)
    ful_imp = sum(g.ful_imp for g in groups)
    poss_ret = sum(g.poss_ret for g in groups)
    poss_imp = sum(g.poss_imp for g in groups)
    poss = poss_ret + poss_imp + sum(g.notoccur for g in groups)
    n = len(groups)

    def simple(ful: int, possible: int) -> float:
        return ful / possible if possible else 0.0

    values = {
        "prefs_num_prefs_poss": float(poss),
        "prefs_num_prefs_ful": float(ful_ret + ful_imp),
        "prefs_num_prefs_ful_ret": float(ful_ret),
        "prefs_simp": simple(ful_ret + ful_imp, poss),
        "prefs_avgjg": _avg_over_groups(
            [(g.ful_ret + g.ful_imp) / p for g in groups if (p := g.poss_ret + g.poss_imp + g.notoccur)], n
        ),
        "prefs_avgjg_Rnonrel": _avg_over_groups([_rnonrel(g, n_judged, n_ret, False) for g in groups], n),
        "prefs_simp_ret": simple(ful_ret, poss_ret),
        "prefs_avgjg_ret": _avg_over_groups([g.ful_ret / g.poss_ret for g in groups if g.poss_ret], n),
        "prefs_avgjg_Rnonrel_ret": _avg_over_groups([_rnonrel(g, n_judged, n_ret, True) for g in groups], n),
        "prefs_simp_imp": simple(ful_ret + ful_imp, poss_ret + poss_imp),
        "prefs_avgjg_imp": _avg_over_groups(
            [(g.ful_ret + g.ful_imp) / p for g in groups if (p := g.poss_ret + g.poss_imp)], n
        ),
    }
    values.update(_pair_sums(groups, n_judged, n_ret))
    return {name: values[name] for name in PREFS_MEASURES}


def prefs_measures(prefs: Prefs, ranked: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """The 14 `all_prefs` measures per query, for queries in both `prefs` and `ranked` (byte order of ids).

    `ranked` holds each query's docids in trec_eval's preference order (`prefs_ranking`). Averaging over queries
    (`all`): `prefs_num_prefs_poss`, `_ful`, `_ful_ret` are summed; every other measure is the mean over queries.
    trec_eval's `-l` and `-J` do not apply to preferences; `-M` does, through `prefs_ranking`. A `Prefs` built in
    Python with a doc at two levels in one sub-group or contradicting sub-groups raises ValueError
    (the readers say where).
    """
    return {qid: _query_measures(judgments, ranked[qid]) for qid, judgments in prefs.by_query.items() if qid in ranked}

"""A trec_eval run end to end: which measures -m marks, their values per query, and the summary (`all`) rows.

Selection follows trec_eval.c's mark_measure: `name.params` attaches parameters to a name (the first
given wins), a nickname marks its list, an unknown name is refused. Summaries follow meas_avg.c: mean
over queries (with -c over every qrels query), geometric mean with the 1e-5 floor, sums for counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from eval_core.ranking.trec_eval import measures as ms
from eval_core.ranking.trec_eval.params import ParamError, Params, parse
from eval_core.ranking.trec_eval.rels import NONPOOL, UNJUDGED, RelMatrix
from eval_core.ranking.trec_eval.zscores import zscore


class IllegalMeasure(ValueError):
    """A -m argument trec_eval refuses (exit 1)."""


class Selection(NamedTuple):
    """The marked measure names in trec_eval's order, and the parameter text given per name."""

    names: tuple[str, ...]
    params: dict[str, str]


def select(measure_args: Sequence[str]) -> Selection:
    """Mark measures as trec_eval's -m does; no -m means `official`."""
    marked: set[str] = set()
    params: dict[str, str] = {}
    for arg in measure_args or ("official",):
        name, dot, text = arg.partition(".")
        if dot:
            if not text:
                raise IllegalMeasure(f"improper measure in parameter '{name}'")
            params.setdefault(name, text)
        if name in ms.NICKNAMES:
            marked.update(ms.NICKNAMES[name])
        elif name in ms.ORDER:
            marked.add(name)
        else:
            raise IllegalMeasure(f"illegal measure '{name}'")
    return Selection(tuple(n for n in ms.ORDER if n in marked), params)


@dataclass(eq=False)  # holds arrays: compared by identity
class Block:
    """One family's values: its printed names and a [queries × names] array (relstring: its strings)."""

    family: ms.Family
    names: list[str]
    values: np.ndarray
    strings: list[str] | None = None
    total: np.ndarray | None = None  # the summary value when the family's average replaces the usual one


def compute(m: RelMatrix, selection: Selection, opts: ms.Options) -> list[Block]:
    """Every selected qrels family's per-query values, in trec_eval's order. Raises ParamError (trec_eval: cannot
    initialize measure) and MeasureError (cannot calculate)."""
    blocks = []
    if m.rel_level <= NONPOOL:  # -l ≤ −1: documents outside the qrels count as relevant
        m = m.materialized()
    for name in selection.names:
        family = ms.BY_NAME.get(name)
        if family is None:
            continue
        try:
            params = parse(family.kind, selection.params.get(name), family.defaults)
        except ParamError as exc:
            raise ParamError(f"cannot initialize measure '{name}': {exc}") from None
        names = family.names(params)
        if name == "relstring":
            blocks.append(Block(family, names, np.zeros((len(m.qids), 1)), _relstrings(m, params, names[0])))
            continue
        if family.compute is None and not family.kernel:
            blocks.append(Block(family, names, np.ones((len(m.qids), 1 if name == "num_q" else 0))))
            continue
        values = np.asarray(family.values(m, params, opts), dtype=np.float64)
        if m.bogus.any():
            for j, printed_name in enumerate(names):
                if cleared_for_stand_in(printed_name):
                    values[m.bogus, j] = 0.0
        blocks.append(Block(family, names, values))
    return blocks


def cleared_for_stand_in(printed_name: str) -> bool:
    """trec_eval.c's clean-up after -c's stand-in ranking of a missing query goes by printed name: num_ret,
    utility, relstring and rbp_resid exactly (strcmp), and every name starting with unj (strncmp). A measure
    given parameters prints them in its name (utility_1,-1,0,0, rbp_resid_p=0.8, relstring_20), so it keeps
    the stand-in ranking's value."""
    return printed_name in ("num_ret", "utility", "relstring", "rbp_resid") or printed_name.startswith("unj")


def _relstrings(m: RelMatrix, params: Params, printed_name: str) -> list[str]:
    """relstring: the first N values as characters (0–9, '>' above 9, '-' not pooled, '.' unjudged, '<' other);
    empty for -c's stand-in ranking when its printed name is one trec_eval.c clears."""
    length = max(int(params.values[0]), 0)
    chars = np.full((len(m.qids), length), ord("-"), dtype=np.uint8)
    shown = m.hit & (m.rank < length)
    v = m.value[shown].astype(np.int64)
    chars[np.nonzero(shown)[0], m.rank[shown]] = np.where(
        v > 9,
        ord(">"),
        np.where(v >= 0, ord("0") + v, np.where(v == NONPOOL, ord("-"), np.where(v == UNJUDGED, ord("."), ord("<")))),
    )
    cleared = m.bogus & cleared_for_stand_in(printed_name)
    lengths = np.where(cleared, 0, np.minimum(length, m.num_ret))
    return [row[:n].tobytes().decode("ascii") for row, n in zip(chars, lengths.tolist(), strict=True)]


def to_zscores(blocks: list[Block], qids: list[str], refs: dict[str, dict[str, tuple[float, float]]]) -> None:
    """Replace every per-query value by its z-score against `refs` (trec_eval -Z), in place."""
    for block in blocks:
        if block.values.shape[1] == 0:
            continue
        names = ["num_q"] if block.family.name == "num_q" else block.names
        for i, qid in enumerate(qids):
            ref = refs.get(qid)
            for j, name in enumerate(names):
                block.values[i, j] = zscore(block.values[i, j], None if ref is None else ref.get(name))


def summary(block: Block, evaluated: int, denominator: int) -> np.ndarray:
    """A block's `all` values: `evaluated` queries were scored, the means divide by `denominator` (the qrels'
    query count with -c, else `evaluated`)."""
    family = block.family
    if block.total is not None:
        return block.total
    # summed query by query in order, as trec_eval accumulates (not numpy's pairwise sum)
    total = np.cumsum(block.values, axis=0)[-1] if len(block.values) else block.values.sum(axis=0)
    if family.average is ms.Average.COUNT:  # num_q: the queries averaged over (with -c every qrels query, in 9 too)
        return np.array([float(denominator)])
    if family.average is ms.Average.SUM:
        return total
    if family.average is ms.Average.GM:
        if not denominator:
            return total
        total = total + (denominator - evaluated) * math.log(ms.MIN_GEO_MEAN)
        return np.exp(total / denominator)
    return total / denominator if denominator else total

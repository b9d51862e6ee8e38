"""trec_eval's output lines: `%-22s\\t%s\\t%6.4f` (integers `%ld`, relstring quoted, -Z names prefixed with Z)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from eval_core.ranking.trec_eval.evaluate import Block, summary


def _c_float(value: float) -> str:
    """printf's `%6.4f` as glibc prints it: a NaN with its sign bit set (x86's 0.0/0.0) is '-nan'."""
    if math.isnan(value):
        return f"{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    return f"{value:6.4f}"


def _line(name: str, qid: str, value: float, integer: bool, z: bool) -> str:
    if z:
        return f"Z{name:<22}\t{qid}\t{_c_float(value)}"
    if integer:
        return f"{name:<22}\t{qid}\t{int(value)}"
    return f"{name:<22}\t{qid}\t{_c_float(value)}"


def query_lines(blocks: list[Block], qids: list[str], z: bool = False) -> Iterator[str]:
    """The -q lines: each query's values, measures in trec_eval's order. Each measure's column is formatted at
    once (a million lines for 10k queries × all_trec)."""
    columns: list[tuple[str, list[str]]] = []
    for block in blocks:
        if not block.family.per_query:
            continue
        if block.strings is not None:
            columns.append((f"{block.names[0]:<22}\t", [f"'{text}'" for text in block.strings]))
            continue
        for j, name in enumerate(block.names):
            prefix = f"Z{name:<22}\t" if z else f"{name:<22}\t"
            columns.append((prefix, _column(block.values[:, j], block.family.integer and not z)))
    for i, qid in enumerate(qids):
        for prefix, texts in columns:
            yield prefix + qid + "\t" + texts[i]


def _column(values: np.ndarray, integer: bool) -> list[str]:
    """One measure's values as `_line` writes them."""
    if integer:
        return [str(int(v)) for v in values.tolist()]
    if np.isnan(values).any():
        return [_c_float(v) for v in values.tolist()]
    return [f"{v:6.4f}" for v in values.tolist()]


def summary_lines(blocks: list[Block], run_id: str, evaluated: int, denominator: int, z: bool = False) -> Iterator[str]:
    """The `all` lines (runid first when selected; relstring has none)."""
    for block in blocks:
        name = block.family.name
        if name == "runid":
            yield f"{'runid':<22}\tall\t{run_id}"
            continue
        if block.strings is not None:
            continue
        values = summary(block, evaluated, denominator)
        for j, value_name in enumerate(block.names):
            yield _line(value_name, "all", float(values[j]), block.family.integer, z)

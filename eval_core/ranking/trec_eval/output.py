"""trec_eval's output lines: `%-22s\\t%s\\t%6.4f` (integers `%ld`, relstring quoted, -Z names prefixed with Z)."""

from __future__ import annotations

import math
from collections.abc import Iterator

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
    """The -q lines: each query's values, measures in trec_eval's order."""
    for i, qid in enumerate(qids):
        for block in blocks:
            if not block.family.per_query:
                continue
            if block.strings is not None:
                yield f"{block.names[0]:<22}\t{qid}\t'{block.strings[i]}'"
                continue
            for j, name in enumerate(block.names):
                yield _line(name, qid, float(block.values[i, j]), block.family.integer, z)


def summary_lines(blocks: list[Block], run_id: str, evaluated: int, denominator: int,
                  z: bool = False) -> Iterator[str]:
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

"""Measure parameters as trec_eval parses them (`P.5,10`, `ndcg.1=3,2=9`, `utility.2,-1,0,0`), with C's atof/atol."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import NamedTuple

_FLOAT = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INT = re.compile(r"\s*[+-]?\d+")


class ParamKind(StrEnum):
    """How a family takes parameters (trec_eval's init_meas kinds)."""

    NONE = "none"  # no parameters
    LONG_CUTS = "long_cuts"  # integer cutoffs, sorted, positive, distinct: one value each (P_5, P_10 …)
    DOUBLE_CUTS = "double_cuts"  # real cutoffs, sorted, distinct: one value each, named %3.2f
    DOUBLES = "doubles"  # real parameters in the order given, one value named name_PARAMS
    PAIRS = "pairs"  # name=value pairs (gains, rbp's p), one value named name_PARAMS


class ParamError(ValueError):
    """A measure's parameters trec_eval refuses (it exits 2: cannot initialize measure)."""


def atof(text: str) -> float:
    """C atof: the longest number at the start of `text`, 0.0 if none."""
    m = _FLOAT.match(text)
    return float(m.group()) if m else 0.0


def atol(text: str) -> int:
    """C atol/strtol: the integer at the start of `text` (`23.4` → 23), 0 if none."""
    m = _INT.match(text)
    return int(m.group()) if m else 0


class Params(NamedTuple):
    """Parsed parameters: `values` (cutoffs or reals, or (name, value) pairs), `printable` the text given.
    (NamedTuples here and in measures: as immutable as a frozen dataclass, made without compiling six methods.)"""

    values: tuple
    printable: str | None


def parse(kind: ParamKind, text: str | None, default: tuple) -> Params:
    """`text` (None: the family's defaults) parsed the way trec_eval's init routine for `kind` does."""
    if text is None:
        return Params(default, None)
    parts = text.split(",")
    if kind is ParamKind.LONG_CUTS:
        cuts = sorted(atol(p) for p in parts)
        if cuts[0] <= 0:
            raise ParamError("Negative cutoff detected")
        if len(set(cuts)) != len(cuts):
            raise ParamError("duplicate cutoffs detected")
        return Params(tuple(cuts), text)
    if kind is ParamKind.DOUBLE_CUTS:
        reals = sorted(atof(p) for p in parts)
        if len(set(reals)) != len(reals):
            raise ParamError("duplicate cutoffs detected")
        return Params(tuple(reals), text)
    if kind is ParamKind.DOUBLES:
        return Params(tuple(atof(p) for p in parts), text)
    if kind is ParamKind.PAIRS:
        if any(p.count("=") != 1 for p in parts):
            raise ParamError(f"malformed pair parameters in '{text}'")
        return Params(tuple((n, atof(v)) for n, v in (p.split("=") for p in parts)), text)
    return Params(default, text)


def valid_int(text: str) -> bool:
    """trec_eval's valid_int: an optional sign then only digits (a gain pair's level must be one)."""
    body = text[1:] if text[:1] in "+-" else text
    return body.isdigit() and body.isascii()

"""Qrels or a run in columnar form (`Columns`), and the checks every reader of them shares."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from eval_core.errors import InputError
from eval_core.io import arrow_compute as pc
from eval_core.io.keys import arrow_ints, numpy_values, pair_keys, string_keys

if TYPE_CHECKING:  # pandas is imported where a DataFrame is made or read: evaluating files never needs it
    import pandas as pd


@dataclass
class Columns:
    """Qrels or a run in columnar form: query codes into distinct ids, docids, values, docid keys."""

    qcode: np.ndarray
    qvalues: pa.Array
    docid: pa.Array
    value: np.ndarray
    label: str
    doc_keys: np.ndarray
    extra_fields_line: tuple[int, int] | None = None  # (line, field count) of the first run line with > 6 fields
    scale: tuple[int, int] | None = None  # the grading scale the file names (a release's JSONL/CSV: grades as judged)

    def frame(self, value_name: str) -> pd.DataFrame:
        """The contract's DataFrame form: query_id, doc_id and the grade or score column."""
        import pandas as pd

        return pd.DataFrame(
            {
                "query_id": self.qvalues.take(pa.array(self.qcode)).to_pandas(),
                "doc_id": self.docid.to_pandas(),
                value_name: self.value,
            }
        )


def first_duplicate(cols: Columns) -> int | None:
    """Row index of the first (query, doc) pair seen before, or None — 64-bit keys confirmed on the strings."""
    n = len(cols.qcode)
    if n < 2:
        return None
    ks = pair_keys(cols.doc_keys, cols.qcode)
    ks.sort()  # NumPy's SIMD sort, in place on a fresh array: cheaper than any hash table here
    if not (ks[1:] == ks[:-1]).any():
        return None
    key = pair_keys(cols.doc_keys, cols.qcode)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    cand = np.flatnonzero(ks[1:] == ks[:-1])
    a, b = order[cand], order[cand + 1]
    same = (cols.qcode[a] == cols.qcode[b]) & numpy_values(
        pc.equal(pc.take(cols.docid, arrow_ints(a)), pc.take(cols.docid, arrow_ints(b)))
    )
    return int(np.max(np.stack([a, b])[:, same], axis=0).min()) if same.any() else None


def columns_of(q: pa.Array, d: pa.Array, value: np.ndarray, label: str) -> Columns:
    """Columns from plain string arrays (dictionary-encoding the query ids)."""
    enc = pc.dictionary_encode(q)
    return Columns(
        numpy_values(enc.indices).astype(np.int64),
        pc.cast(enc.dictionary, pa.large_string()),
        d,
        value,
        label,
        string_keys(d),
    )


def finite_number(path: str, lineno: int, what: str, raw: Any) -> float:
    """A finite float from a field, or an InputError naming the line."""
    try:
        num = float(raw)
    except (TypeError, ValueError):
        raise InputError(path, lineno, f"{what} {raw!r} is not a number") from None
    if not math.isfinite(num):
        raise InputError(path, lineno, f"{what} {raw!r} is not a finite number")
    return num


def typed_values(vs: list[float], kind: str) -> np.ndarray:
    return np.asarray(vs, dtype=np.int64 if kind == "qrels" else np.float64)


def check_pair_once(path: str, lineno: int, seen: dict[tuple[str, str], int], qid: str, doc: str) -> None:
    """Raise on a (query, doc) pair already seen in this file, naming both lines."""
    first = seen.get((qid, doc))
    if first is not None:
        raise InputError(path, lineno, f"doc {doc!r} repeated for query {qid!r} (first on line {first})")
    seen[qid, doc] = lineno


GRADE_LIMIT = 2**63 - 1  # a grade is held as a 64-bit integer
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")


def integer_grade(path: str, lineno: int | None, raw: Any) -> int:
    """A qrels grade written as an integer (`2`, never `2.0` or `1e3`) that a 64-bit integer holds, or an
    InputError naming the line."""
    if isinstance(raw, bool) or not (isinstance(raw, int) or (isinstance(raw, str) and _INTEGER.fullmatch(raw))):
        raise InputError(path, lineno, f"grade {raw!r} is not an integer")
    if isinstance(raw, str) and len(raw.strip().lstrip("+-")) > 19:
        raise InputError(path, lineno, f"grade {raw.strip()[:40]!r} is out of range (a grade is a small integer)")
    grade = int(raw)
    if abs(grade) > GRADE_LIMIT:
        raise InputError(path, lineno, f"grade {str(raw)[:40]!r} is out of range (a grade is a small integer)")
    return grade

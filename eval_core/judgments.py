"""Judgment records (query, fragment, annotator, grade) read and checked once, so every consumer trusts them."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from eval_core.errors import InputError
from eval_core.records import iter_records

KEY = ("query_id", "fragment_id", "annotator")
REQUIRED = (*KEY, "grade")
OPTIONAL = ("note", "guideline", "category")
CANT_JUDGE = {"", "na", "n/a", "nan", "null", "none", "?"}
_INT = re.compile(r"[+-]?\d+")


def parse_scale(text: str) -> tuple[int, int]:
    """'0-3' → (0, 3): the CLI form of a grading scale."""
    match = re.fullmatch(r"\s*(-?\d+)\s*-\s*(-?\d+)\s*", text)
    if not match or int(match[1]) >= int(match[2]):
        raise ValueError(f"scale must look like 0-3 (low-high, low < high), got {text!r}")
    return int(match[1]), int(match[2])


def parse_grade(value: object, scale: tuple[int, int]) -> int | None:
    """One grade as an int on the scale, None for "can't judge"; ValueError says why a value is rejected."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"grade must be an integer, got {value!r}")
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if not value.is_integer():
            raise ValueError(f"grade must be an integer, got {value!r}")
        value = int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in CANT_JUDGE:
            return None
        if _INT.fullmatch(text):
            value = int(text)
        else:
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"grade must be an integer or empty for can't judge, got {value!r}") from None
            if not number.is_integer():
                raise ValueError(f"grade must be an integer, got {value!r}")
            value = int(number)
    if not isinstance(value, int):
        raise ValueError(f"grade must be an integer, got {value!r}")
    low, high = scale
    if not low <= value <= high:
        raise ValueError(f"grade {value} is outside the scale {low}-{high}")
    return value


def _text_field(rec: dict, name: str) -> str:
    value = rec.get(name)
    if value is None or isinstance(value, dict | list):
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    text = str(value).strip()
    if not text:
        raise ValueError(f"{name} is empty")
    return text


def read_judgments(path: str | Path, scale: tuple[int, int] = (0, 3), keep: str = "error") -> pd.DataFrame:
    """Read JSONL/CSV/TSV judgments; bad grades and duplicate (pair, annotator) records fail with path:line.

    keep="latest" lets a later record for the same (pair, annotator) replace an earlier one (re-grading).
    """
    if keep not in ("error", "latest"):
        raise ValueError(f"keep must be 'error' or 'latest', got {keep!r}")
    label = str(path)
    rows: dict[tuple[str, str, str], dict] = {}
    first_line: dict[tuple[str, str, str], int] = {}
    optional_seen: set[str] = set()
    for lineno, rec in iter_records(path, required=REQUIRED):
        try:
            row = {name: _text_field(rec, name) for name in KEY}
            row["grade"] = parse_grade(rec["grade"], scale)
        except ValueError as exc:
            raise InputError(label, lineno, str(exc)) from None
        for name in OPTIONAL:
            value = rec.get(name)
            if value is not None and str(value).strip() != "":
                row[name] = str(value)
                optional_seen.add(name)
        key = (row["query_id"], row["fragment_id"], row["annotator"])
        if key in rows and keep == "error":
            raise InputError(label, lineno, f"duplicate judgment of ({key[0]}, {key[1]}) by {key[2]} "
                                            f"(first at line {first_line[key]}); pass keep='latest' to re-grade")
        rows.pop(key, None)
        rows[key] = row
        first_line.setdefault(key, lineno)
    columns = [*REQUIRED, *(name for name in OPTIONAL if name in optional_seen)]
    frame = pd.DataFrame(list(rows.values()), columns=columns)
    return _typed(frame)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Cast to the architecture's judgments dtypes (str ids, Int64 grade with NA for can't judge)."""
    out = frame.copy()
    for name in (*KEY, *(c for c in OPTIONAL if c in out.columns)):
        out[name] = out[name].astype(object).where(out[name].notna(), None)
        if name in KEY:
            out[name] = out[name].astype(str)
    out["grade"] = pd.array(out["grade"].tolist(), dtype="Int64") if len(out) else pd.array([], dtype="Int64")
    return out.reset_index(drop=True)


def check_judgments(judgments: pd.DataFrame, scale: tuple[int, int] = (0, 3)) -> pd.DataFrame:
    """Validate an in-memory judgments frame (e.g. from the store) the way the reader validates files."""
    missing = [c for c in REQUIRED if c not in judgments.columns]
    if missing:
        raise ValueError(f"judgments lack column(s): {', '.join(missing)}")
    frame = judgments.reset_index(drop=True)
    for name in KEY:
        empty = frame[name].isna() | (frame[name].astype(str).str.strip() == "")
        if empty.any():
            raise ValueError(f"judgments row {int(np.flatnonzero(empty)[0])}: {name} is empty")
    grades = frame["grade"]
    if not (pd.api.types.is_integer_dtype(grades) or grades.isna().all()):
        try:
            grades = pd.array([parse_grade(v, scale) for v in grades], dtype="Int64")
        except ValueError as exc:
            raise ValueError(f"judgments: {exc}") from None
    grades = pd.array(grades, dtype="Int64")
    low, high = scale
    outside = grades.notna() & ((grades < low) | (grades > high))
    outside = np.asarray(outside.fillna(False), dtype=bool)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise ValueError(f"judgments row {row}: grade {grades[row]} is outside the scale {low}-{high}")
    frame = frame.assign(grade=grades)
    dup = frame.duplicated(list(KEY), keep=False)
    if dup.any():
        row = frame[dup].iloc[0]
        raise ValueError(f"judgments: duplicate judgment of ({row['query_id']}, {row['fragment_id']}) "
                         f"by {row['annotator']}")
    keep_cols = [*REQUIRED, *(c for c in OPTIONAL if c in frame.columns)]
    return _typed(frame[keep_cols])

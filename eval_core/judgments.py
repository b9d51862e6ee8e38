"""Judgment records (query, fragment, annotator, grade) read and checked once, so every consumer trusts them."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
from tqdm import tqdm

from eval_core.errors import InputError
from eval_core.records import iter_records, open_binary, record_format

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


def read_judgments(path: str | Path, scale: tuple[int, int] = (0, 3), keep: str = "error",
                   progress: bool = False) -> pd.DataFrame:
    """Read JSONL/CSV/TSV judgments; bad grades and duplicate (pair, annotator) records fail with path:line.

    keep="latest" lets a later record for the same (pair, annotator) replace an earlier one (re-grading).
    """
    if keep not in ("error", "latest"):
        raise ValueError(f"keep must be 'error' or 'latest', got {keep!r}")
    fast = _read_columnar(path, scale, keep)
    if fast is not None:
        return fast
    return _read_records(path, scale, keep, progress)


def _columnar_table(path: str | Path) -> pa.Table | None:
    """The whole file as an Arrow table (ids and grades as text for CSV/TSV), or None if Arrow cannot read it."""
    fmt = record_format(path)
    try:
        with open_binary(path) as fh:
            if fmt == "jsonl":
                return pa_json.read_json(fh)
            return pa_csv.read_csv(
                fh, parse_options=pa_csv.ParseOptions(delimiter="\t" if fmt == "tsv" else ",",
                                                      newlines_in_values=True),
                convert_options=pa_csv.ConvertOptions(column_types=dict.fromkeys((*REQUIRED, *OPTIONAL), pa.string()),
                                                      strings_can_be_null=False))
    except (pa.ArrowException, OSError, EOFError):
        return None


def _columnar_grades(column: pa.ChunkedArray, scale: tuple[int, int]) -> pd.Series | None:
    """Grades as Int64 (NA = can't judge) when every value is clean; None sends the file to the exact reader."""
    if pa.types.is_integer(column.type) or pa.types.is_null(column.type):
        grades = pd.Series(column.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get), dtype="Int64")
    elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        text = pd.Series(pc.utf8_trim_whitespace(column).to_pandas(), dtype=object).fillna("")
        cant = text.str.lower().isin(CANT_JUDGE)
        numbers = pd.to_numeric(text.where(~cant), errors="coerce")
        if (numbers.isna() & ~cant).any() or (numbers.dropna() % 1 != 0).any():
            return None
        grades = pd.Series(pd.array(numbers.where(~cant), dtype="Int64"))
    else:
        return None
    low, high = scale
    if ((grades < low) | (grades > high)).fillna(False).any():
        return None
    return grades


def _read_columnar(path: str | Path, scale: tuple[int, int], keep: str) -> pd.DataFrame | None:
    """Fast path: a columnar read validated with whole-column checks; any doubt returns None and the
    line-by-line reader takes over, so errors still name the exact line."""
    table = _columnar_table(path)
    if table is None or table.num_rows == 0 or any(c not in table.column_names for c in REQUIRED):
        return None
    data = {}
    for name in KEY:
        column = table.column(name)
        if not pa.types.is_string(column.type) or column.null_count:
            return None
        ids = pd.Series(pc.utf8_trim_whitespace(column).to_pandas(), dtype=str)
        if (ids == "").any():
            return None
        data[name] = ids
    grades = _columnar_grades(table.column("grade"), scale)
    if grades is None:
        return None
    data["grade"] = grades
    for name in OPTIONAL:
        if name in table.column_names:
            column = table.column(name)
            if not (pa.types.is_string(column.type) or pa.types.is_null(column.type)):
                return None
            values = pd.Series(column.to_pandas(), dtype=object)
            values = values.where(values.notna() & (values.astype(str).str.strip() != ""), None)
            if values.notna().any():
                data[name] = values
    frame = pd.DataFrame(data)
    duplicated = frame.duplicated(list(KEY), keep="last" if keep == "latest" else False)
    if duplicated.any():
        if keep == "error":
            return None
        frame = frame[~duplicated.to_numpy()]
    return _typed(frame)


def _read_records(path: str | Path, scale: tuple[int, int], keep: str, progress: bool) -> pd.DataFrame:
    """The exact reader: one record at a time, so the first bad one is reported with its line."""
    label = str(path)
    rows: dict[tuple[str, str, str], dict] = {}
    first_line: dict[tuple[str, str, str], int] = {}
    optional_seen: set[str] = set()
    records = tqdm(iter_records(path, required=REQUIRED), desc="reading judgments", unit=" rec",
                   disable=not progress, leave=False, mininterval=0.5)
    for lineno, rec in records:
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


def _text_column(values: pd.Series) -> pd.Series:
    """Ids as strings (kept as they are when the column already holds only strings)."""
    if pd.api.types.is_string_dtype(values) and pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values
    return values.astype(str)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Cast to the architecture's judgments dtypes (str ids, Int64 grade with NA for can't judge)."""
    out = frame.copy()
    for name in KEY:
        out[name] = _text_column(out[name])
    for name in (c for c in OPTIONAL if c in out.columns):
        out[name] = out[name].astype(object).where(out[name].notna(), None)
    out["grade"] = pd.array(out["grade"], dtype="Int64")
    return out.reset_index(drop=True)


def duplicate_error(frame: pd.DataFrame, row: int) -> None:
    """Raise the one message for a second judgment of the same pair by the same annotator."""
    rec = frame.iloc[row]
    raise ValueError(f"judgments: duplicate judgment of ({rec['query_id']}, {rec['fragment_id']}) "
                     f"by {rec['annotator']}")


def check_judgments(judgments: pd.DataFrame, scale: tuple[int, int] = (0, 3),
                    duplicates: bool = True) -> pd.DataFrame:
    """Validate an in-memory judgments frame (e.g. from the store) the way the reader validates files.

    duplicates=False skips the (pair, annotator) uniqueness check for callers that do it on integer codes.
    """
    missing = [c for c in REQUIRED if c not in judgments.columns]
    if missing:
        raise ValueError(f"judgments lack column(s): {', '.join(missing)}")
    frame = judgments.reset_index(drop=True)
    for name in KEY:
        empty = frame[name].isna() | frame[name].isin(["", b""])
        if empty.any():
            raise ValueError(f"judgments row {int(np.flatnonzero(empty)[0])}: {name} is empty")
    grades = frame["grade"]
    if not pd.api.types.is_integer_dtype(grades):
        try:
            grades = pd.array([parse_grade(v, scale) for v in grades], dtype="Int64")
        except ValueError as exc:
            raise ValueError(f"judgments: {exc}") from None
    grades = pd.Series(pd.array(grades, dtype="Int64"))
    low, high = scale
    outside = ((grades < low) | (grades > high)).fillna(False).to_numpy(dtype=bool)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise ValueError(f"judgments row {row}: grade {grades[row]} is outside the scale {low}-{high}")
    frame = frame.assign(grade=grades.to_numpy())
    if duplicates:
        dup = frame.duplicated(list(KEY), keep=False).to_numpy()
        if dup.any():
            duplicate_error(frame, int(np.flatnonzero(dup)[0]))
    keep_cols = [*REQUIRED, *(c for c in OPTIONAL if c in frame.columns)]
    return _typed(frame[keep_cols])

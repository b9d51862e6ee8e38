"""Judgment records (query, fragment, annotator, grade) read and checked once, so every consumer trusts them.

One reader serves every judgments file qrelkit reads or writes: flat records (`query_id, fragment_id,
annotator, grade` plus optional `note, guideline, category, cant_judge_reason, time, annotator_kind, model,
prompt_version`), as JSONL, CSV or TSV,
and a release's per-pair lines (JSONL, or the release CSV) whose `grades` map holds every annotator's grade
and whose optional `adjudication` holds the lead's decision.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from json.encoder import encode_basestring
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json

from eval_core.errors import MAX_PROBLEMS, InputError, Problems
from eval_core.io.formats import detect_format, read_qrels
from eval_core.io.records import (
    BAD_ID_CHARS,
    BAD_NAME_CHARS,
    MAX_NOTE_CHARS,
    SEMICOLON_HINT,
    bounded_bytes,
    check_id,
    check_name,
    check_note,
    declared_scale,
    format_by_name,
    iter_lines,
    iter_records,
    record_format,
    semicolon_separated,
    strict_json,
)
from eval_core.io.spreadsheet import escape_cell, unescape_cell
from eval_core.io.trec_text import read_qrels_jg
from eval_core.io.writers import QrelsGrades
from eval_core.progress import bar as progress_bar
from eval_core.vocab import ANNOTATOR_KINDS

KEY = ("query_id", "fragment_id", "annotator")
REQUIRED = (*KEY, "grade")
# annotator_kind 'human' or 'model'; a model judge's `model` name and the `prompt_version` behind its grade.
OPTIONAL = ("note", "guideline", "category", "cant_judge_reason", "time", "annotator_kind", "model", "prompt_version")
# The only ways to write "can't judge" (besides JSON null), matched case-insensitively after trimming:
# an empty value, "null", "none", "na", "n/a". Anything else that is not an integer (NaN, ?, inf…) is refused.
CANT_JUDGE = ("", "null", "none", "na", "n/a")
LONG_TEXTS = ("note", "cant_judge_reason", "reason")  # free text, bounded by MAX_NOTE_CHARS
ADJUDICATION_COLUMNS = ["query_id", "fragment_id", "grade", "reason", "by"]
# Who an annotator is (the judgments frame's `annotator_kind`): a person, or a model judge (model name and
# prompt version recorded), which never counts in human-human agreement.
_INT = re.compile(r"[+-]?\d+")


def annotator_kinds(judgments: pd.DataFrame, models: Sequence[str] = ()) -> dict[str, str]:
    """annotator → 'human' or 'model': the frame's `annotator_kind` column when present (else all human),
    with the annotators named in `models` counted as model judges."""
    names = sorted(judgments["annotator"].astype(str).unique())
    kinds = dict.fromkeys(names, "human")
    if "annotator_kind" in judgments.columns:
        per = judgments[["annotator", "annotator_kind"]].astype(str).drop_duplicates()
        bad = sorted(set(per["annotator_kind"]) - set(ANNOTATOR_KINDS))
        if bad:
            raise ValueError(
                f"annotator_kind must be one of {', '.join(ANNOTATOR_KINDS)}, got {', '.join(map(repr, bad))}"
            )
        twice = per[per.duplicated("annotator", keep=False)]
        if len(twice):
            raise ValueError(f"annotator {twice['annotator'].iloc[0]!r} is listed as both human and model")
        kinds.update(zip(per["annotator"], per["annotator_kind"], strict=True))
    unknown = sorted(set(models) - set(names))
    if unknown:
        raise ValueError(
            f"no judgments by the model annotator(s) {', '.join(map(repr, unknown))} "
            f"(annotators: {', '.join(map(repr, names))})"
        )
    kinds.update(dict.fromkeys(models, "model"))
    return kinds


def relevant_from(scale: tuple[int, int]) -> int:
    """The grade binary metrics count as relevant from: a scale's lowest grade means not relevant, so
    relevance starts at its second grade (1 on 0–3, 2 on 1–3 or 1–5)."""
    return scale[0] + 1


def parse_grade(value: object, scale: tuple[int, int]) -> int | None:
    """One grade as an int on the scale, None for "can't judge"; ValueError says why a value is rejected."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"grade must be an integer, got {value!r}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"grade must be an integer, or null / empty for can't judge, got {value!r}")
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
                number = math.nan
            if not math.isfinite(number):
                raise ValueError(
                    f"grade must be an integer or empty for can't judge, got {value!r} (can't "
                    f"judge is written null, none, na, n/a or left empty)"
                )
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


@dataclass
class JudgmentsFile:
    """Everything a judgments file says: the judgments (with the `line` each came from), the adjudications
    of release lines (query_id, fragment_id, grade, reason, by, line), and every problem found (the first
    MAX_PROBLEMS kept, `total_problems` counted), so an importer can report them all at once."""

    judgments: pd.DataFrame
    adjudications: pd.DataFrame
    problems: list[InputError] = field(default_factory=list)
    total_problems: int = 0

    def raise_problems(self) -> None:
        """Raise the first problem (saying how many more there are) when there is any."""
        if self.total_problems:
            first = self.problems[0]
            more = f" (and {self.total_problems - 1} more problem(s))" if self.total_problems > 1 else ""
            raise InputError(first.path, first.line, first.problem + more)


def read_judgments(
    path: str | Path, scale: tuple[int, int] | None = None, keep: str = "error", progress: bool = False
) -> pd.DataFrame:
    """Read JSONL/CSV/TSV judgments or a release's JSONL/CSV; bad grades and duplicate (pair, annotator)
    records fail with path:line.

    scale None reads the grades on the scale the file names (`declared_scale`), else on 0-3; a given scale
    that a line's `scale` field contradicts fails on that line. keep="latest" lets a later record for the same
    (pair, annotator) replace an earlier one (re-grading).
    """
    if keep not in ("error", "latest"):
        raise ValueError(f"keep must be 'error' or 'latest', got {keep!r}")
    if scale is None:
        scale = declared_scale(path) or (0, 3)
    fast = _read_columnar(path, scale, keep)
    if fast is not None:
        return fast
    return _read_records(path, scale, keep, progress)


def _trec_decisions(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line, record) of TREC qrels lines `qid iter docid grade [reason …]`: a decision's reason is the rest of
    its line."""
    for lineno, text in iter_lines(path, blank=False):
        fields = text.split(None, 4)
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < 4:
            raise InputError(
                str(path), lineno, f"expected `qid iter docid grade [reason]`, found {len(fields)} field(s)"
            )
        yield (
            lineno,
            {
                "query_id": fields[0],
                "fragment_id": fields[2],
                "grade": fields[3],
                "reason": fields[4] if len(fields) > 4 else None,
            },
        )


# The columns of `qrelkit disputes`' list (spread, grades, decided) that no release or judgments line has: such a
# file, with a grade column added, is decisions for the pairs whose grade is filled in.
DISPUTE_COLUMNS = frozenset({"spread", "decided"})
DISPUTES_WITHOUT_GRADE = (
    "this is the list `qrelkit disputes` prints, with no grade column: add a column `grade` (and `reason`) and "
    "fill in the grade of each pair you decide"
)


def read_adjudications(path: str | Path, scale: tuple[int, int] = (0, 3), lines: bool = False) -> pd.DataFrame:
    """Lead decisions: flat records (query_id, fragment_id, grade, optional reason and by), the
    `adjudication` of a release's lines, `qrelkit disputes`' list with a grade filled in where decided, or TREC
    qrels lines with the reason after the grade; one integer grade on the scale per pair, else path:line.
    `lines` adds each decision's line number (column `line`)."""
    adjudications, problems = [], Problems(path)
    seen: dict[tuple[str, str], int] = {}
    # no decisions is a state, not an error: what `export --adjudications` writes before the first one
    records = iter_records(path, allow_empty=True) if format_by_name(path) is not None else _trec_decisions(path)
    for lineno, rec in records:
        if DISPUTE_COLUMNS & rec.keys():  # `qrelkit disputes`' list with a grade (and a reason) filled in
            if "grade" not in rec:
                problems.add(lineno, DISPUTES_WITHOUT_GRADE)
                break
            if _field(rec, "grade", path) in (None, ""):
                continue  # a pair not decided yet
            rec = {k: v for k, v in rec.items() if k != "grades"}  # people's grades, as the list shows them
        elif ("grades" in rec or "annotator" in rec) and _field(rec, "adjudication", path) in (None, ""):
            continue
        try:
            if "grades" in rec or "annotator" in rec:
                rec = {
                    "query_id": rec.get("query_id"),
                    "fragment_id": rec.get("fragment_id"),
                    **_adjudication(rec, path),
                }
            pair = (_id_field(rec, "query_id", path), _id_field(rec, "fragment_id", path))
            grade = _decision_grade(rec.get("grade"), scale)
        except ValueError as exc:
            problems.add(lineno, str(exc))
            continue
        if pair in seen:
            problems.add(lineno, f"second adjudication of ({pair[0]}, {pair[1]}) (first at line {seen[pair]})")
            continue
        seen[pair] = lineno
        row = (*pair, grade, _optional(rec, "reason", path), _optional(rec, "by", path))
        adjudications.append((*row, lineno) if lines else row)
    JudgmentsFile(pd.DataFrame(), pd.DataFrame(), problems.items, problems.total).raise_problems()
    columns = [*ADJUDICATION_COLUMNS, "line"] if lines else ADJUDICATION_COLUMNS
    return pd.DataFrame(adjudications, columns=columns).astype({"grade": "int64"})


def _field(rec: dict, name: str, path: str | Path) -> object:
    """A raw field; in CSV/TSV a leading `'` (the spreadsheet escape qrelkit writes) is removed."""
    value = rec.get(name)
    return unescape_cell(value) if isinstance(value, str) and format_by_name(path) in ("csv", "tsv") else value


def _id_field(rec: dict, name: str, path: str | Path) -> str:
    """A query or fragment id: non-empty, and without whitespace (TREC files could not hold it)."""
    return check_id(_text_field({name: _field(rec, name, path)}, name), name)


def _optional(rec: dict, name: str, path: str | Path) -> str | None:
    """An optional text field, None when absent or blank; a note or reason longer than MAX_NOTE_CHARS is
    refused."""
    value = _field(rec, name, path)
    if value is None or isinstance(value, dict | list) or str(value).strip() == "":
        return None
    return check_note(str(value), name) if name in LONG_TEXTS else str(value)


def _decision_grade(value: object, scale: tuple[int, int]) -> int:
    """An adjudication's grade: on the scale, never can't judge."""
    grade = parse_grade(value, scale)
    if grade is None:
        raise ValueError("an adjudication needs a grade (can't judge is not a decision)")
    return grade


def _json_object(rec: dict, name: str, path: str | Path, shape: str) -> dict:
    """A release line's object field (a JSON object in JSONL, JSON text in the release CSV)."""
    value = _field(rec, name, path)
    if isinstance(value, str):
        try:
            value = strict_json(value)
        except json.JSONDecodeError:
            value = None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be an object {shape}")
    return value


def _adjudication(rec: dict, path: str | Path) -> dict:
    """A release line's `adjudication`: the lead's decision."""
    return _json_object(rec, "adjudication", path, "with grade, reason and by")


def _grade_map(rec: dict, path: str | Path) -> dict:
    """A release line's `grades`: every annotator's grade of the pair."""
    return _json_object(rec, "grades", path, "{annotator: grade}")


def _check_time(text: str) -> str:
    """A judgment time: ISO 8601 with a UTC offset, as qrelkit exports it."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"time {text!r} is not an ISO 8601 date-time") from None
    if when.tzinfo is None:
        raise ValueError(f"time {text!r} has no UTC offset (write e.g. 2026-01-02T03:04:05+00:00)")
    return text


def _flat_rows(rec: dict, path: str | Path, scale: tuple[int, int]) -> list[dict]:
    """The judgments of one record: one for a flat record, one per annotator for a release line. A record that
    names its scale (`scale`) must be on the scale it is read on."""
    named = rec.get("scale")
    if named is not None and str(named).strip() not in ("", f"{scale[0]}-{scale[1]}"):
        raise ValueError(
            f"the line's grades are on the scale {str(named).strip()} (its scale field), not on the "
            f"scale {scale[0]}-{scale[1]} it is read on"
        )
    pair = {"query_id": _id_field(rec, "query_id", path), "fragment_id": _id_field(rec, "fragment_id", path)}
    if "grades" in rec:
        rows = []
        for annotator, grade in _grade_map(rec, path).items():
            rows.append(
                {
                    **pair,
                    "annotator": check_name(_text_field({"annotator": annotator}, "annotator"), "annotator"),
                    "grade": parse_grade(grade, scale),
                }
            )
        return rows
    missing = [name for name in ("annotator", "grade") if name not in rec]
    if missing:
        raise ValueError(f"missing field(s): {', '.join(missing)} (or a release line's grades)")
    row = {
        **pair,
        "annotator": check_name(_text_field({"annotator": _field(rec, "annotator", path)}, "annotator"), "annotator"),
        "grade": parse_grade(_field(rec, "grade", path), scale),
    }
    for name in OPTIONAL:
        value = _optional(rec, name, path)
        if value is not None:
            if name == "time":
                _check_time(value.strip())
            row[name] = value
    if row.get("cant_judge_reason") is not None and row["grade"] is not None:
        raise ValueError(f"grade {row['grade']} with a can't-judge reason: a can't-judge has no grade")
    return [row]


def read_judgments_file(
    path: str | Path, scale: tuple[int, int] = (0, 3), keep: str = "error", progress: bool = False
) -> JudgmentsFile:
    """The exact reader: every record in order, each problem named with its line (none raised here)."""
    problems = Problems(path)
    rows: dict[tuple[str, str, str], dict] = {}
    first_line: dict[tuple[str, str, str], int] = {}
    adjudications: dict[tuple[str, str], tuple] = {}
    optional_seen: set[str] = set()
    records = progress_bar(
        iter_records(path), desc="reading judgments", unit=" rec", show=progress, leave=False, mininterval=0.5
    )
    for lineno, rec in records:
        if problems.total >= MAX_PROBLEMS:
            break  # enough to fix the file by: the rest is not read (a file of 42M repeated lines stops here)
        try:
            parsed = _flat_rows(rec, path, scale)
            decision = None
            if "grades" in rec and _field(rec, "adjudication", path) not in (None, ""):
                adj = _adjudication(rec, path)
                decision = (
                    _decision_grade(adj.get("grade"), scale),
                    _text_field(adj, "reason"),
                    _text_field(adj, "by"),
                )
        except ValueError as exc:
            problems.add(lineno, str(exc))
            continue
        for row in parsed:
            key = (row["query_id"], row["fragment_id"], row["annotator"])
            if key in rows and keep == "error":
                problems.add(
                    lineno,
                    f"duplicate judgment of ({key[0]}, {key[1]}) by {key[2]} "
                    f"(first at line {first_line[key]}); pass keep='latest' to re-grade",
                )
                continue
            rows.pop(key, None)
            rows[key] = {**row, "line": lineno}
            first_line.setdefault(key, lineno)
            optional_seen.update(name for name in OPTIONAL if name in row)
        if decision is not None:
            pair = (
                (parsed[0]["query_id"], parsed[0]["fragment_id"])
                if parsed
                else (_id_field(rec, "query_id", path), _id_field(rec, "fragment_id", path))
            )
            adjudications[pair] = (*pair, *decision, lineno)
    if not rows and not adjudications and not problems.total:
        problems.add(None, "no judgments in the file")
    columns = [*REQUIRED, *(name for name in OPTIONAL if name in optional_seen)]
    frame = pd.DataFrame(list(rows.values()), columns=[*columns, "line"])
    decided = pd.DataFrame(list(adjudications.values()), columns=[*ADJUDICATION_COLUMNS, "line"])
    return JudgmentsFile(_typed(frame), decided, problems.items, problems.total)


COLUMNAR_BYTES = 512 * 1024 * 1024  # the columnar reader holds the whole (decompressed) file: at most this


def _columnar_table(path: str | Path) -> pa.Table | None:
    """The whole file as an Arrow table (ids and grades as text for CSV/TSV), or None if Arrow cannot read it."""
    fmt = record_format(path)
    data = bounded_bytes(path, COLUMNAR_BYTES)
    if data is None:
        return None  # bigger: the line reader, which holds what it keeps, not the file
    try:
        with pa.BufferReader(data) as fh:
            if fmt == "jsonl":
                # Optional fields are text (Arrow would read an ISO time as a timestamp and drop its offset).
                schema = pa.schema([(name, pa.string()) for name in OPTIONAL])
                return pa_json.read_json(fh, parse_options=pa_json.ParseOptions(explicit_schema=schema))
            return pa_csv.read_csv(
                fh,
                parse_options=pa_csv.ParseOptions(delimiter="\t" if fmt == "tsv" else ",", newlines_in_values=True),
                convert_options=pa_csv.ConvertOptions(
                    column_types=dict.fromkeys((*REQUIRED, *OPTIONAL), pa.string()), strings_can_be_null=False
                ),
            )
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
        if (ids == "").any() or (name != "annotator" and ids.str.contains(r"\s").any()):
            return None
        data[name] = ids
    if "scale" in table.column_names:
        named = table.column("scale")
        if (
            not pa.types.is_string(named.type)
            or named.null_count
            or pc.any(pc.not_equal(pc.utf8_trim_whitespace(named), f"{scale[0]}-{scale[1]}")).as_py()
        ):
            return None
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
    if not _columnar_clean(data, table, record_format(path) != "jsonl"):
        return None
    frame = pd.DataFrame(data)
    duplicated = frame.duplicated(list(KEY), keep="last" if keep == "latest" else False)
    if duplicated.any():
        if keep == "error":
            return None
        frame = frame[~duplicated.to_numpy()]
    return _typed(frame)


def _columnar_clean(data: dict[str, pd.Series], table: pa.Table, delimited: bool) -> bool:
    """What only the exact reader may judge: a release line, a spreadsheet-escaped CSV cell, a can't-judge
    reason beside a grade, a time that is not ISO 8601 with an offset."""
    if "grades" in table.column_names or "adjudication" in table.column_names:
        return False
    texts = [v for k, v in data.items() if k != "grade"]
    for name in ("query_id", "fragment_id"):
        ids = pa.array(data[name].dropna().astype(str), pa.large_string()) if name in data else None
        if ids is not None and len(ids) and pc.any(pc.match_substring_regex(ids, BAD_ID_CHARS)).as_py():
            return False
    if "annotator" in data:
        names = pa.array(data["annotator"].dropna().astype(str), pa.large_string())
        if len(names) and pc.any(pc.match_substring_regex(names, BAD_NAME_CHARS)).as_py():
            return False
    if any(data[k].dropna().astype(str).str.len().gt(MAX_NOTE_CHARS).any() for k in LONG_TEXTS if k in data):
        return False
    if delimited and any(v.dropna().astype(str).str.startswith("'").any() for v in texts):
        return False
    if "cant_judge_reason" in data and (data["cant_judge_reason"].notna() & data["grade"].notna()).any():
        return False
    if "time" in data:
        times = data["time"].dropna().astype(str).str.strip()
        offset = times.str.contains(r"(?:Z|[+-]\d\d:?\d\d)$")
        parsed = pd.to_datetime(times, format="ISO8601", errors="coerce", utc=True)
        if not offset.all() or parsed.isna().any():
            return False
    return True


def _read_records(path: str | Path, scale: tuple[int, int], keep: str, progress: bool) -> pd.DataFrame:
    """The exact reader as the judgments contract: the first problem raised with its line."""
    read = read_judgments_file(path, scale, keep, progress)
    read.raise_problems()
    return read.judgments.drop(columns="line")


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
    raise ValueError(
        f"judgments: duplicate judgment of ({rec['query_id']}, {rec['fragment_id']}) by {rec['annotator']}"
    )


def check_judgments(judgments: pd.DataFrame, scale: tuple[int, int] = (0, 3), duplicates: bool = True) -> pd.DataFrame:
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
            grades = pd.array(
                [
                    None if v is pd.NA or (isinstance(v, float) and math.isnan(v)) else parse_grade(v, scale)
                    for v in grades
                ],
                dtype="Int64",
            )
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


# The judgments export: exactly the fields read_judgments reads back, in this order.
EXPORT_FIELDS = (
    "query_id",
    "fragment_id",
    "annotator",
    "grade",
    "cant_judge_reason",
    "note",
    "guideline",
    "time",
    "annotator_kind",
    "model",
    "prompt_version",
)
JUDGMENT_FORMATS = ("jsonl", "csv")


def render_judgments(frame: pd.DataFrame, fmt: str, scale: tuple[int, int] | None = None) -> Iterator[str]:
    """Lines of a judgments file (EXPORT_FIELDS; `time` an aware datetime column, written as ISO 8601 UTC with
    microseconds): JSONL with every field (null when absent; byte-identical to json.dumps(ensure_ascii=False))
    or CSV through the spreadsheet escaper. read_judgments reads both back to the same frame, so export →
    import → export is byte-identical. With `scale`, every line also names it (`scale`, last: "1-5"), so
    agreement and consensus read the grades on it without --scale. Built column by column: a million judgments
    in seconds."""
    if fmt not in JUDGMENT_FORMATS:
        raise ValueError(f"judgments format must be one of {', '.join(JUDGMENT_FORMATS)}, got {fmt!r}")
    times = pd.to_datetime(frame["time"], utc=True).dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
    grades = [None if g is pd.NA or g is None else int(g) for g in frame["grade"].astype("Int64").tolist()]
    texts = {
        name: [
            None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else str(v)
            for v in frame[name].tolist()
        ]
        for name in EXPORT_FIELDS
        if name not in ("grade", "time")
    }
    fields = (*EXPORT_FIELDS, "scale") if scale is not None else EXPORT_FIELDS
    columns: list[list] = [
        grades if name == "grade" else times.tolist() if name == "time" else texts[name] for name in EXPORT_FIELDS
    ]
    if scale is not None:
        columns.append([f"{scale[0]}-{scale[1]}"] * len(frame))
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(fields)
        writer.writerows([["" if v is None else escape_cell(v) for v in row] for row in zip(*columns, strict=True)])
        yield buf.getvalue()
        return
    cells = [
        [
            ("null" if v is None else str(v)) if name == "grade" else ("null" if v is None else encode_basestring(v))
            for v in values
        ]
        for name, values in zip(fields, columns, strict=True)
    ]
    keys = [f'"{name}": ' for name in fields]
    for row in zip(*cells, strict=True):
        yield "{" + ", ".join(k + v for k, v in zip(keys, row, strict=True)) + "}\n"


# Existing qrels read as one annotator's grades: TREC 4-column or BEIR qrels TSV, or multi-judge qrels (trec_eval
# `-R qrels_jg`), whose judge groups become one annotator each, named NAME-jg<group>.
QRELS_FORMATS = ("trec", "beir", "jg")


def _data_lines(path: str, header: bool) -> list[int]:
    """The line numbers of a qrels file's records in file order (blank and # lines skipped, as its readers do;
    a BEIR header line too), to name the line of a problem found after reading."""
    lines = [n for n, text in iter_lines(path, blank=False) if text.strip() and not text.lstrip().startswith("#")]
    return lines[1:] if header else lines


def qrels_group_name(annotator: str, group: str) -> str:
    """The annotator a judge group of multi-judge qrels becomes: NAME-jg<group>."""
    return f"{annotator}-jg{group}"


# How to read a release's qrels of gains back (said when grades look like them); the app words it for its page.
READ_AS_GAINS = "import them with --qrels-grades gains"


def read_qrels_judgments(
    path: str | Path,
    annotator: str,
    scale: tuple[int, int] = (0, 3),
    qrels_format: str | None = None,
    grades: QrelsGrades = QrelsGrades.AS_JUDGED,
) -> JudgmentsFile:
    """Qrels a team already has as the grades of `annotator` (a TREC or BEIR file, told by content) or, with
    qrels_format 'jg', of one annotator per judge group; grades off the scale are problems naming their line.
    `grades` "gains": the file holds gains from the scale's lowest grade (grade − low, as a release's TREC and
    BEIR qrels are written by default), each read back as gain + low."""
    grades = QrelsGrades(grades)
    label = str(path)
    if qrels_format not in (None, *QRELS_FORMATS):
        raise ValueError(f"qrels format must be one of {', '.join(QRELS_FORMATS)}, got {qrels_format!r}")
    if not annotator.strip():
        raise ValueError("the annotator whose grades the qrels are needs a name")
    fmt = qrels_format or detect_format(label)
    if fmt not in QRELS_FORMATS:
        raise InputError(
            label,
            None,
            f"a file with named columns ({fmt.upper()}) is a judgments file, not qrels: "
            f"give it an annotator column and leave out --annotator (qrels are TREC "
            f"`qid iter docid grade` lines or BEIR `query-id corpus-id score` TSV)",
        )
    if fmt == "jg":
        read = read_qrels_jg(label)
        names = read["judge"].map(lambda group: qrels_group_name(annotator.strip(), group))
    else:
        read = read_qrels(label)
        names = pd.Series(annotator.strip(), index=read.index)
    frame = pd.DataFrame(
        {
            "query_id": read["query_id"].astype(str),
            "fragment_id": read["doc_id"].astype(str),
            "annotator": names.astype(str),
            "grade": read["grade"].to_numpy(),
            "line": _data_lines(label, header=fmt == "beir"),
        }
    )
    problems = Problems(label)
    low, high = scale
    if grades == QrelsGrades.GAINS:
        frame["grade"] = frame["grade"] + low
    given = frame["grade"]
    # qrels whose grades start at 0 and stay within high − low read as gains (grade − low), as a qrelkit release's
    # TREC and BEIR exports write them: imported as grades, every grade would be off by `low`
    like_gains = grades == QrelsGrades.AS_JUDGED and low > 0 and len(given) and given.min() == 0
    hint = (
        (
            f"; the grades run 0-{given.max()}, as the gains (grade - {low}) of a release's TREC or BEIR "
            f"qrels: {READ_AS_GAINS} (or export them with --grades as-judged)"
        )
        if like_gains and given.max() <= high - low
        else ""
    )
    for line, grade in frame.loc[(given < low) | (given > high), ["line", "grade"]].itertuples(index=False):
        problems.add(int(line), f"grade {grade} is outside the scale {low}-{high}" + ("" if problems.total else hint))
    for name in ("query_id", "fragment_id"):
        for line, value in frame.loc[frame[name].str.contains(r"\s"), ["line", name]].itertuples(index=False):
            problems.add(
                int(line),
                f"{name} {value!r} contains whitespace; TREC qrels and run files separate "
                f"fields by whitespace, so ids cannot hold any",
            )
    frame = frame[(frame["grade"] >= low) & (frame["grade"] <= high)]
    return JudgmentsFile(
        _typed(frame[[*REQUIRED, "line"]]).assign(line=frame["line"].to_numpy()),
        pd.DataFrame(columns=[*ADJUDICATION_COLUMNS, "line"]),
        problems.items,
        problems.total,
    )


def judgments_file_hint(path: str | Path) -> InputError | None:
    """Why a file given as judgments without --annotator is not one, when its content says (a ';'-separated CSV,
    TREC or BEIR qrels, a TREC run), at the line that shows it (the header or the first TREC line); None when it
    may be a judgments file."""
    name = format_by_name(path)
    if name == "csv" and semicolon_separated(path):
        return InputError(str(path), _first_content_line(path)[0], SEMICOLON_HINT)
    if name in ("jsonl", "csv"):
        return None
    fmt = detect_format(path)
    if fmt == "beir":
        return InputError(
            str(path),
            _first_content_line(path)[0],
            "this is BEIR qrels (query-id, corpus-id, score): name whose grades they are with "
            "--annotator NAME (and --annotator-kind model --model M for a model's)",
        )
    if fmt != "trec":
        return None
    line, first = _first_content_line(path, comments=True)
    if len(first) == 6:
        return InputError(
            str(path),
            line,
            "this looks like a TREC run (qid Q0 docid rank score tag), not judgments: `qrelkit import run`",
        )
    if len(first) == 4:
        return InputError(
            str(path),
            line,
            "this looks like TREC qrels (qid iter docid grade): name whose grades "
            "they are with --annotator NAME (multi-judge qrels: also --qrels-format "
            "jg, one annotator per judge group)",
        )
    return None


def _first_content_line(path: str | Path, comments: bool = False) -> tuple[int, list[str]]:
    """The number and whitespace-split fields of the first line that is not blank (nor a `#` comment when
    `comments`): the line a hint about the whole file's layout is about."""
    for number, text in iter_lines(path, blank=False):
        if text.strip() and not (comments and text.lstrip().startswith("#")):
            return number, text.split()
    return 1, []

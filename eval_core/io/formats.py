"""Qrels and runs from any source a user has: files (TREC, BEIR TSV, JSONL, CSV, TSV, gzip), DataFrames and dicts.

Readers return the in-memory forms of docs/architecture.md and reject bad input with `path:line: problem`. This
module tells a file's format and hands it to its reader (`eval_core.io.trec_text`, `eval_core.io.named_columns`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from eval_core.errors import InputError
from eval_core.io.columns import Columns
from eval_core.io.named_columns import from_dict, from_frame, read_beir, read_named_columns
from eval_core.io.records import (
    SEMICOLON_HINT,
    declared_scale,
    format_by_name,
    iter_lines,
    iter_records,
    require_file,
    semicolon_separated,
)
from eval_core.io.trec_text import read_trec

if TYPE_CHECKING:
    import pandas as pd
    from typing_extensions import TypeIs  # typing's from Python 3.13; only the checker reads it

# What the readers take (and so `evaluate()`): a file by its path (TREC, BEIR TSV, JSONL, CSV, TSV; gzip fine), a
# DataFrame, a dict, or Columns already read. Never an open file object: errors name the file by its path.
QrelsSource: TypeAlias = "str | os.PathLike[str] | pd.DataFrame | Mapping[str, Mapping[str, int]] | Columns"
RunSource: TypeAlias = (
    "str | os.PathLike[str] | pd.DataFrame | Mapping[str, Mapping[str, float]] "
    "| Mapping[str, list[str] | tuple[str, ...]] | Columns"
)
# What read_categories takes: a dict query id → category, or a JSONL/CSV/TSV file with query_id and category.
CategoriesSource: TypeAlias = "str | Path | Mapping[str, str]"


def detect_format(path: str | Path) -> str:
    """'trec', 'beir' (BEIR qrels TSV), 'jsonl', 'csv' or 'tsv' from the extension, then the first line."""
    by_name = format_by_name(path)
    if by_name in ("jsonl", "csv"):  # a .tsv may be BEIR qrels or plain TSV: its first line tells
        return by_name
    for _, text in iter_lines(path, blank=False):
        line = text.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            return "jsonl"
        cells = line.split("\t")
        if "corpus-id" in cells:
            return "beir"
        if "query_id" in cells:
            return "tsv"
        return "trec"
    raise InputError(str(path), 1, "empty file: no records")


def _load(src: QrelsSource | RunSource, kind: str) -> Columns:
    """Any accepted source (path, DataFrame, dict, Columns) as validated Columns."""
    if isinstance(src, Columns):
        return src
    if is_frame(src):
        return from_frame(src, kind)
    if isinstance(src, Mapping):
        return from_dict(src, kind)
    if not isinstance(src, str | os.PathLike):
        raise TypeError(f"{kind} must be a path, a DataFrame or a dict, not {type(src).__name__}")
    path = str(src)
    require_file(path)
    fmt = detect_format(path)
    if fmt == "trec":
        return read_trec(path, kind)
    if fmt == "beir":
        return read_beir(path)
    if fmt == "csv" and semicolon_separated(path):
        raise InputError(path, 1, SEMICOLON_HINT)
    suffix = {"jsonl": (".jsonl", ".ndjson", ".json"), "csv": (".csv",), "tsv": (".tsv",)}[fmt]
    if not Path(path).name.lower().removesuffix(".gz").endswith(suffix):
        raise InputError(
            path,
            1,
            f"looks like {fmt.upper()} with named columns; give it a {suffix[0]} name "
            "(TREC files are whitespace-separated without a header)",
        )
    return read_named_columns(path, kind)


def is_frame(obj: object) -> TypeIs[pd.DataFrame]:
    """True for a pandas DataFrame, without importing pandas (none can exist before it is imported)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(obj, pandas.DataFrame)


def load_run(src: RunSource) -> Columns:
    """A run as validated Columns (what `evaluate()` uses, skipping pandas)."""
    return _load(src, "run")


def load_qrels(src: QrelsSource) -> Columns:
    """Qrels as validated Columns (what `evaluate()` uses, skipping pandas)."""
    return _load(src, "qrels")


def read_run(src: RunSource) -> pd.DataFrame:
    """Run as DataFrame[query_id: str, doc_id: str, score: float64] from a path, DataFrame or dict."""
    return load_run(src).frame("score")


def read_qrels(src: QrelsSource) -> pd.DataFrame:
    """Qrels as DataFrame[query_id: str, doc_id: str, grade: int64] from a path, DataFrame or dict."""
    return load_qrels(src).frame("grade")


def read_categories(src: CategoriesSource) -> dict[str, str]:
    """A query → category mapping from a dict or a TSV/CSV/JSONL file with query_id and category columns."""
    if isinstance(src, Mapping):
        return {str(k): str(v) for k, v in src.items()}
    out: dict[str, str] = {}
    for lineno, rec in iter_records(src, required=("query_id", "category")):
        qid = str(rec["query_id"])
        if qid in out and out[qid] != str(rec["category"]):
            raise InputError(str(src), lineno, f"query {qid!r} given two categories")
        out[qid] = str(rec["category"])
    return out


def named_scale(src: QrelsSource) -> tuple[int, int] | None:
    """The grading scale a qrels source names: a release's JSONL or CSV (qrelkit writes `"scale": "1-5"` on every
    line, the grades as judged). None for TREC and BEIR qrels (a release writes them as gains: grade − lowest),
    frames and dicts. Only the first record is read."""
    if isinstance(src, Columns):
        return src.scale
    if not isinstance(src, str | os.PathLike):
        return None
    path = str(src)
    if not Path(path).is_file() or format_by_name(path) not in ("jsonl", "csv"):
        return None
    return declared_scale(path)


def qrels_scale(qrels: QrelsSource, scale: tuple[int, int] | None) -> tuple[int, int] | None:
    """The scale to evaluate `qrels` on: `scale` when given, else the one the file names (`named_scale`), else
    None (grades are gains, trec_eval's way). Read without it, a 1–5 release's JSONL would count grade 1 (not
    relevant) as relevant and give every nDCG gain one too many. A given scale the file contradicts is refused."""
    named = named_scale(qrels)
    if scale is not None and named is not None and (scale[0], scale[1]) != named:
        label = qrels.label if isinstance(qrels, Columns) else str(qrels)
        raise InputError(
            label,
            1,
            f"the file names the scale {named[0]}-{named[1]}, not {scale[0]}-{scale[1]}: "
            f"give --scale {named[0]}-{named[1]} or none",
        )
    return (scale[0], scale[1]) if scale is not None else named

"""Qrels and runs with named columns: BEIR qrels TSV, JSONL/CSV/TSV records, DataFrames and dicts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from eval_core.errors import InputError
from eval_core.io.columns import (
    Columns,
    check_pair_once,
    columns_of,
    finite_number,
    first_duplicate,
    integer_grade,
    typed_values,
)
from eval_core.io.records import format_by_name, iter_lines, iter_records, parse_scale
from eval_core.io.trec_text import SWAPPED_ADVICE

if TYPE_CHECKING:
    import pandas as pd

BEIR_COLS = ("query-id", "corpus-id", "score")
DOC_FIELDS = ("doc_id", "corpus-id", "corpus_id", "fragment_id")  # fragment_id: a release's JSONL and CSV
FRAME, DICT = "<DataFrame>", "<dict>"


def read_beir(path: str) -> Columns:
    """BEIR qrels TSV (header query-id, corpus-id, score) with integer grades and no repeated pairs."""
    q: list[str] = []
    d: list[str] = []
    v: list[float] = []
    seen: dict[tuple[str, str], int] = {}
    header: list[str] | None = None
    for lineno, text in iter_lines(path, blank=False):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        cells = [c.strip() for c in text.split("\t")]
        if header is None:
            header = cells
            missing = [c for c in BEIR_COLS if c not in header]
            if missing:
                raise InputError(path, lineno, f"header lacks column(s): {', '.join(missing)}")
            continue
        if len(cells) != len(header):
            raise InputError(
                path, lineno, f"expected {len(header)} tab-separated fields ({', '.join(header)}), found {len(cells)}"
            )
        rec = dict(zip(header, cells, strict=True))
        g = integer_grade(path, lineno, rec["score"])
        check_pair_once(path, lineno, seen, rec["query-id"], rec["corpus-id"])
        q.append(rec["query-id"])
        d.append(rec["corpus-id"])
        v.append(g)
    if not q:
        raise InputError(path, 1, "empty file: no qrels rows")
    return columns_of(pa.array(q, pa.large_string()), pa.array(d, pa.large_string()), typed_values(v, "qrels"), path)


def read_named_columns(path: str, kind: str) -> Columns:
    """JSONL/CSV/TSV with named columns; a run may give ranked lists (`doc_ids`) or rows without scores."""
    q: list[str] = []
    d: list[str] = []
    v: list[float] = []
    value = "grade" if kind == "qrels" else "score"
    seen: dict[tuple[str, str], int] = {}
    with_score = without_score = 0
    named: list[str | None] = []  # the scale the first record names (qrels), which every other must repeat
    escaped = format_by_name(path) == "csv"  # qrelkit's CSVs escape cells a spreadsheet would run
    if escaped:
        from eval_core.io.spreadsheet import unescape_cell
    for lineno, rec in iter_records(path, required=("query_id",)):
        if "annotator" in rec:
            raise InputError(
                path,
                lineno,
                f"this is a judgments file (one line per annotator's grade), not "
                f"{kind}: make qrels of it with `qrelkit consensus`, or evaluate against a release",
            )
        if kind == "run" and "score" not in rec and ("grade" in rec or "grades" in rec):
            raise InputError(path, lineno, "this holds grades (qrels or a release), not a run" + SWAPPED_ADVICE)
        if escaped:
            rec = {k: unescape_cell(v) for k, v in rec.items()}
        if kind == "qrels":
            _same_scale(path, lineno, named, rec.get("scale"))
        qid = str(rec["query_id"])
        if kind == "run" and "doc_ids" in rec:
            ids = rec["doc_ids"]
            if isinstance(ids, str):
                ids = ids.split()
            if not isinstance(ids, list):
                raise InputError(path, lineno, "doc_ids must be a list of ids")
            for i, doc in enumerate(ids):
                check_pair_once(path, lineno, seen, qid, str(doc))
                q.append(qid)
                d.append(str(doc))
                v.append(float(len(ids) - i))
            with_score += 1
            continue
        doc = next((rec[k] for k in DOC_FIELDS if k in rec), None)
        if doc is None:
            raise InputError(
                path, lineno, f"missing field: {' or '.join(DOC_FIELDS)}" + (" (or doc_ids)" if kind == "run" else "")
            )
        raw = rec.get(value, rec.get("score") if kind == "qrels" else None)
        if raw is None or raw == "":
            if kind == "qrels":
                raise InputError(path, lineno, "missing field: grade")
            without_score += 1
            num = math.nan
        else:
            num = finite_number(path, lineno, value, raw)  # "is not a number" before "is not an integer"
            if kind == "qrels":
                num = integer_grade(path, lineno, raw)
            with_score += 1
        if with_score and without_score:
            raise InputError(path, lineno, "some rows have a score and others do not")
        check_pair_once(path, lineno, seen, qid, str(doc))
        q.append(qid)
        d.append(str(doc))
        v.append(num)
    if not q:
        raise InputError(path, 1, f"empty file: no {kind} records")
    cols = columns_of(
        pa.array(q, pa.large_string()),
        pa.array(d, pa.large_string()),
        typed_values(v, kind) if not without_score else np.zeros(len(q)),
        path,
    )
    if without_score:
        cols.value = _file_order_scores(cols.qcode)
    if named and named[0] is not None:
        cols.scale = parse_scale(named[0])
    return cols


def _same_scale(path: str, lineno: int, named: list[str | None], value: object) -> None:
    """Check a qrels record's `scale` against the first record's (kept in `named`): one file, one scale."""
    text = None if value is None or str(value).strip() == "" else str(value).strip()
    if text is not None:
        try:
            parse_scale(text)
        except ValueError as exc:
            raise InputError(path, lineno, str(exc)) from None
    if not named:
        named.append(text)
    elif text != named[0]:
        raise InputError(
            path,
            lineno,
            f"names the scale {text or '(none)'}, but the first record names "
            f"{named[0] or '(none)'}: one file holds grades on one scale",
        )


def _file_order_scores(qcode: np.ndarray) -> np.ndarray:
    """Strictly decreasing scores that keep each query's rows in their given order."""
    order = np.argsort(qcode, kind="stable")
    sc = qcode[order]
    starts = np.concatenate(([0], np.flatnonzero(sc[1:] != sc[:-1]) + 1))
    pos = np.arange(len(sc)) - np.repeat(starts, np.diff(np.append(starts, len(sc))))
    out = np.empty(len(qcode))
    out[order] = -pos.astype(np.float64)
    return out


# ----------------------------------------------------------------------------- in-memory inputs

_ALIASES = {"query_id": ("query_id", "qid", "query"), "doc_id": ("doc_id", "docid", "corpus_id", "fragment_id")}


def from_frame(df: pd.DataFrame, kind: str, label: str = FRAME) -> Columns:
    """Validate a user DataFrame (column names, numbers, duplicates); rows are numbered from 1."""
    import pandas as pd

    value = "grade" if kind == "qrels" else "score"
    cols = {str(c).lower().replace("-", "_"): c for c in df.columns}
    aliases = {**_ALIASES, value: (value, "score", "relevance") if kind == "qrels" else (value,)}
    pick = {}
    for want, names in aliases.items():
        found = next((cols[n] for n in names if n in cols), None)
        if found is None:
            raise InputError(label, None, f"{kind} lacks column {want!r} (has {list(df.columns)})")
        pick[want] = found
    if df.empty and kind == "qrels":
        raise InputError(label, None, "empty qrels")
    num = pd.to_numeric(df[pick[value]], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(num)
    if kind == "qrels":
        bad |= np.where(bad, False, (num != np.round(num)) | (np.abs(num) >= 2.0**63))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "an integer" if kind == "qrels" else "a finite number"
        raw = df[pick[value]].iloc[i]
        raise InputError(label, i + 1, f"{value} {raw.item() if hasattr(raw, 'item') else raw!r} is not {what}")
    out = columns_of(
        _arrow_ids(df[pick["query_id"]], label),
        _arrow_ids(df[pick["doc_id"]], label),
        typed_values(num.tolist(), kind) if kind == "qrels" else num,
        label,
    )
    dup = first_duplicate(out)
    if dup is not None:
        raise InputError(
            label,
            dup + 1,
            f"doc {out.docid[dup].as_py()!r} repeated for query {out.qvalues[int(out.qcode[dup])].as_py()!r}",
        )
    return out


def _arrow_ids(s: pd.Series, label: str) -> pa.Array:
    """A column of ids as one large_string Arrow array (numbers become their text); missing ids rejected."""
    import pandas as pd

    try:
        arr = pa.array(s, type=pa.large_string(), from_pandas=True) if s.dtype == object else pa.array(s)
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise pa.ArrowTypeError("not strings")
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        arr = pa.array([None if pd.isna(x) else str(x) for x in s], type=pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        raise InputError(label, int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0]) + 1, "missing id")
    return arr.cast(pa.large_string()) if arr.type != pa.large_string() else arr


def from_dict(obj: Mapping, kind: str) -> Columns:
    """`{qid: {docid: grade|score}}` or, for runs, `{qid: [docid, ...]}` in rank order."""
    q: list[str] = []
    d: list[str] = []
    v: list[Any] = []
    for qid, docs in obj.items():
        if isinstance(docs, Mapping):
            items = list(docs.items())
        elif kind == "run" and isinstance(docs, list | tuple):
            items = [(doc, float(len(docs) - i)) for i, doc in enumerate(docs)]
        else:
            raise InputError(
                DICT,
                None,
                f"query {qid!r}: expected a mapping doc → value" + (" or a ranked list" if kind == "run" else ""),
            )
        for doc, val in items:
            q.append(str(qid))
            d.append(str(doc))
            v.append(val)
    if not q and kind == "qrels":
        raise InputError(DICT, None, "empty qrels")
    import pandas as pd

    value = "grade" if kind == "qrels" else "score"
    return from_frame(pd.DataFrame({"query_id": q, "doc_id": d, value: v}), kind, DICT)

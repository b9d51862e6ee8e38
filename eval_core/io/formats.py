"""Readers and writers for qrels and runs: TREC, BEIR TSV, JSONL and CSV, plus DataFrames and dicts.

Readers return the in-memory forms of docs/architecture.md and reject bad input with `path:line: problem`.
Big TREC files take a columnar fast path (pyarrow's CSV reader, single-space delimited, query ids
dictionary-encoded while parsing); whenever it fails or its result does not validate, a line-by-line
scan names the first bad line — or, for valid input the fast path cannot take (tabs, repeated spaces,
comments), simply reads it.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from glob import escape as glob_escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from eval_core.errors import InputError
from eval_core.io.records import (
    BAD_ID_CHARS,
    SEMICOLON_HINT,
    bad_id_char,
    char_name,
    declared_scale,
    format_by_name,
    iter_lines,
    iter_records,
    open_binary,
    parse_scale,
    semicolon_separated,
)

if TYPE_CHECKING:  # pandas is imported where a DataFrame is made or read: evaluating files never needs it
    import pandas as pd

BEIR_COLS = ("query-id", "corpus-id", "score")
DOC_FIELDS = ("doc_id", "corpus-id", "corpus_id", "fragment_id")  # fragment_id: a release's JSONL and CSV
FRAME, DICT = "<DataFrame>", "<dict>"
_MIX = np.uint64(0x9E3779B97F4A7C15)
_LENGTH_MIX = np.uint64(0xC2B2AE3D27D4EB4F)
_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [2**64 - 1], dtype=np.uint64)
_TREC = {"qrels": (4, "qid iter docid grade"), "run": (6, "qid Q0 docid rank score tag")}


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


# ------------------------------------------------------------------------- NumPy ⇄ Arrow, without pandas
# pyarrow's pa.array(ndarray), Array.to_numpy and fill_null import pandas (~0.3 s) to probe for its types; the
# evaluation path goes through buffers instead, so `qrelkit eval` never loads pandas.

_NUMPY = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint64(): np.uint64,
    pa.float64(): np.float64,
}


def arrow_ints(values: np.ndarray) -> pa.Array:
    """An int64 Arrow array of NumPy integers (no copy when they already are contiguous int64)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def numpy_values(arr: pa.Array | pa.ChunkedArray, null: Any = None) -> np.ndarray:
    """The values of a numeric or boolean Arrow array as NumPy (numbers: no copy), nulls as `null`."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    validity, data = arr.buffers()[:2]
    if not n or data is None:
        return np.zeros(n, dtype=bool if pa.types.is_boolean(arr.type) else _NUMPY[arr.type])
    if pa.types.is_boolean(arr.type):
        out = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")[arr.offset : arr.offset + n].view(bool)
    else:
        out = np.frombuffer(data, _NUMPY[arr.type])[arr.offset : arr.offset + n]
    if arr.null_count:
        valid = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[arr.offset : arr.offset + n]
        out = np.where(valid.view(bool), out, null)
    return out


# ---------------------------------------------------------------------------------------- string keys


def string_keys(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit key per string or binary value (equal bytes, equal keys; callers confirm a key match on the
    values): its bytes as little-endian words, mixed, with its length, read in place from the Arrow buffers.
    A key depends on its value alone, never on its neighbours, chunking or offset width (qrels and runs are
    keyed apart)."""
    if isinstance(arr, pa.ChunkedArray):
        parts = [string_keys(c) for c in arr.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    bufs = arr.buffers()
    wide = arr.type in (pa.large_string(), pa.large_binary())
    off: np.ndarray = np.frombuffer(bufs[1], dtype=np.int64 if wide else np.int32)[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    start = off[:-1]
    length = off[1:] - off[:-1]
    end = int(off[-1])
    # every byte offset's 8 bytes as one word (an unaligned view); the last strings' words from a padded copy
    safe = max(len(data) - 7, 0)
    words = np.ndarray((safe,), dtype=np.uint64, buffer=data, strides=(1,)) if safe else np.zeros(0, np.uint64)
    tail_from = max(min(safe, end) - 8, 0)
    tail = np.zeros(end - tail_from + 16, dtype=np.uint8)
    tail[: end - tail_from] = data[tail_from:end]
    tail_words = np.ndarray((len(tail) - 7,), dtype=np.uint64, buffer=tail, strides=(1,))

    def word(at: np.ndarray) -> np.ndarray:
        out = words[np.minimum(at, max(safe - 1, 0))] if safe else np.zeros(len(at), dtype=np.uint64)
        late = np.flatnonzero(at >= tail_from)
        if len(late):
            out[late] = tail_words[np.minimum(at[late], end) - tail_from]
        return out

    h = word(start)
    top = int(length.max())
    if int(length.min()) < 8:
        h &= _MASKS[np.minimum(length, 8)]
    for j in range(8, top, 8):  # only strings with bytes past j mix further: a key depends on its string alone
        live = np.flatnonzero(length > j)
        w = word(start[live] + j)
        w &= _MASKS[np.minimum(length[live] - j, 8)]
        h[live] = (h[live] * _MIX) ^ w
    h ^= length.astype(np.uint64) * _LENGTH_MIX  # spread over every byte: no two short texts differ by it
    h *= _MIX
    h ^= h >> np.uint64(29)
    return h


def _mix(codes: np.ndarray) -> np.ndarray:
    """Spread small integer codes over 64 bits, to combine with docid keys into pair keys."""
    m = (codes.astype(np.uint64) + np.uint64(1)) * np.uint64(0xD6E8FEB86659FD93)
    return m ^ (m >> np.uint64(32))


def pair_keys(doc_keys: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """64-bit key of a (query code, docid) pair."""
    return doc_keys ^ _mix(codes)


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
        pc.equal(cols.docid.take(arrow_ints(a)), cols.docid.take(arrow_ints(b)))
    )
    return int(np.max(np.stack([a, b])[:, same], axis=0).min()) if same.any() else None


def _columns(q: pa.Array, d: pa.Array, value: np.ndarray, label: str) -> Columns:
    """Columns from plain string arrays (dictionary-encoding the query ids)."""
    enc = pc.dictionary_encode(q)
    return Columns(
        numpy_values(enc.indices).astype(np.int64),
        enc.dictionary.cast(pa.large_string()),
        d,
        value,
        label,
        string_keys(d),
    )


# ------------------------------------------------------------------------------------ format detection


def detect_format(path: str | Path) -> str:
    """'trec', 'beir' (BEIR qrels TSV), 'jsonl', 'csv' or 'tsv' from the extension, then the first line."""
    by_name = format_by_name(path)
    if by_name in ("jsonl", "csv"):  # a .tsv may be BEIR qrels or plain TSV: its first line tells
        return by_name
    for _, text in iter_lines(path):
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


# ------------------------------------------------------------------------------------------- TREC files


def _fast_trec(path: str, kind: str) -> Columns | None:
    """Columnar read of a single-space-delimited TREC file; None when the file does not fit that shape."""
    with open_binary(path) as probe:
        gz = isinstance(probe, gzip.GzipFile)
    return _arrow_trec(pa.CompressedInputStream(pa.OSFile(path), "gzip") if gz else path, kind, path)


@dataclass
class TrecTable:
    """Single-space TREC lines as pyarrow parsed them: the distinct query ids (bytes, first-seen order), each
    line's query code, the docids (bytes) and the grades or scores. Nothing is validated beyond the shape."""

    qids: pa.Array
    qcode: np.ndarray
    docid: pa.Array
    value: np.ndarray


def arrow_trec_table(source: Any, kind: str, threads: bool = True) -> TrecTable | None:
    """pyarrow's CSV reader over a file or buffer of TREC lines; None when they do not fit its shape: not
    single-space separated fields of the kind's count, a comment line, an empty id, or no line at all.

    `threads=False` for blocks of a big run: the blocks are already parsed in parallel by `--workers`,
    and pyarrow's own thread pool on top of them costs more CPU and, on a loaded machine, far more time.
    Ids are parsed as bytes (a third cheaper than as text).
    """
    names = ["q", "it", "d", "v"] if kind == "qrels" else ["q", "q0", "d", "rank", "v", "tag"]
    types = {
        "q": pa.dictionary(pa.int32(), pa.binary()),
        "d": pa.large_binary(),
        "v": pa.int64() if kind == "qrels" else pa.float64(),
    }
    try:
        table = pacsv.read_csv(
            source,
            read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 22, use_threads=threads),
            parse_options=pacsv.ParseOptions(
                delimiter=" ",
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=True,
            ),
            convert_options=pacsv.ConvertOptions(
                include_columns=["q", "d", "v"], column_types=types, null_values=[], strings_can_be_null=False
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None
    if table.num_rows == 0:
        return None
    q = table["q"].unify_dictionaries()
    qids, d = q.chunk(0).dictionary, table["d"].combine_chunks()
    if pc.any(pc.starts_with(qids, b"#")).as_py() or pc.min(pc.binary_length(qids)).as_py() == 0:
        return None  # comment lines, or leading/doubled spaces
    offsets = np.frombuffer(d.buffers()[1], np.int64)[d.offset : d.offset + len(d) + 1]
    if (offsets[1:] == offsets[:-1]).any():
        return None  # an empty docid
    qcode = np.concatenate([numpy_values(c.indices) for c in q.chunks]).astype(np.int64)
    return TrecTable(qids, qcode, d, numpy_values(table["v"]))


def _arrow_trec(source: Any, kind: str, label: str, threads: bool = True) -> Columns | None:
    """The columnar read of TREC lines (`arrow_trec_table`), as text that validates as ids; None when the scan
    has to read them. Ids are seen as text without a copy, their UTF-8 checked only when some byte is not
    printable ASCII."""
    table = arrow_trec_table(source, kind, threads)
    if table is None:
        return None
    qvalues, d = ids_as_text(table.qids), ids_as_text(table.docid)
    if qvalues is None or d is None:
        return None  # not UTF-8: the scan names the line
    if _odd_ids(qvalues) or _odd_ids(d):
        return None  # an id holding a no-break space, \v, NEL, a control or invisible character: the scan names it
    if kind == "run" and not np.isfinite(table.value).all():
        return None
    return Columns(table.qcode, qvalues, d, table.value, label, string_keys(d))


def _id_bytes(ids: pa.Array) -> np.ndarray:
    """The bytes of a (large) binary or string array's values, as a NumPy view."""
    width = np.int64 if pa.types.is_large_binary(ids.type) or pa.types.is_large_string(ids.type) else np.int32
    offsets = np.frombuffer(ids.buffers()[1], width)[ids.offset : ids.offset + len(ids) + 1]
    return np.frombuffer(ids.buffers()[2], np.uint8)[offsets[0] : offsets[-1]] if len(ids) else np.empty(0, np.uint8)


def _printable_ascii(ids: pa.Array) -> bool:
    """True when every byte of the ids is printable ASCII (two SIMD reductions, no temporary array)."""
    data = _id_bytes(ids)
    return not len(data) or (int(data.min()) >= 0x21 and int(data.max()) <= 0x7E)


def ids_as_text(ids: pa.Array) -> pa.Array | None:
    """Ids parsed as bytes, as large_string (a view when they are large_binary); None when not valid UTF-8."""
    try:
        if pa.types.is_large_binary(ids.type):
            text = ids.view(pa.large_string())
            if not _printable_ascii(ids):
                text.validate(full=True)
            return text
        return ids.cast(pa.large_string())
    except pa.ArrowInvalid:
        return None


_SPLIT_BYTES = np.array([ord(c) for c in "\t\n\v\f\r"], dtype=np.uint8)


def holds_split_byte(ids: pa.Array) -> bool:
    """True when some id holds a byte that `bytes.split()` cuts a line at (\\t \\n \\v \\f \\r): read with
    single-space fields, such a line has other fields than a whitespace split gives it."""
    return not _printable_ascii(ids) and bool(np.isin(_id_bytes(ids), _SPLIT_BYTES).any())


def _odd_ids(ids: pa.Array) -> bool:
    """True when some id may hold a character no id may (BAD_ID_CHARS): a look at the raw bytes first (printable
    ASCII only: none can), the Unicode test only for files with other bytes."""
    if _printable_ascii(ids):
        return False
    return bool(pc.any(pc.match_substring_regex(ids, BAD_ID_CHARS)).as_py())


def _scan_trec(path: str, kind: str) -> Columns:
    """Line-by-line read that names the first bad line; whitespace-separated, comments and blanks skipped."""
    cols = _scan_lines(iter_lines(path), path, kind)
    if cols is None:
        raise InputError(path, 1, f"empty file: no {kind} lines")
    return cols


def _scan_lines(lines: Iterable[tuple[int, str]], path: str, kind: str) -> Columns | None:
    """Parse numbered TREC lines or raise on the first bad one; None when there are no records.

    A run line may carry fields after the sixth (trec_eval ignores them, e.g. its own `results.trunc`):
    they are ignored too, and the first such line is kept in `extra_fields_line` for one warning.
    """
    nf, shape = _TREC[kind]
    qs: list[str] = []
    ds: list[str] = []
    vs: list[float] = []
    seen: dict[tuple[str, str], int] = {}
    extra: tuple[int, int] | None = None
    groups: dict[tuple[str, str], str] = {}
    for lineno, text in lines:
        line = text.strip()
        if not line or line.startswith("#"):
            continue
        odd = bad_id_char(line.replace(" ", "").replace("\t", ""))
        if odd is not None:
            raise InputError(
                path,
                lineno,
                f"holds {char_name(odd)}; fields are separated by spaces or tabs, and "
                "no id may hold other whitespace, control or invisible characters",
            )
        f = line.split()
        if len(f) > nf and kind == "run":
            extra = extra or (lineno, len(f))
        elif len(f) != nf:
            raise InputError(path, lineno, f"expected {nf} fields ({shape}), found {len(f)}{_swapped(kind, f)}")
        if kind == "qrels" and groups.setdefault((f[0], f[2]), f[1]) != f[1]:
            raise InputError(
                path,
                lineno,
                f"doc {f[2]!r} judged again for query {f[0]!r}, by judge group {f[1]!r} "
                f"after {groups[f[0], f[2]]!r}: multi-judge qrels (trec_eval -R qrels_jg) are read "
                f"with --qrels-format jg",
            )
        if kind == "qrels":
            try:
                v: float = int(f[3])
            except ValueError:
                raise InputError(path, lineno, f"grade {f[3]!r} is not an integer") from None
        else:
            v = _number(path, lineno, "score", f[4])
        _check_dup(path, lineno, seen, f[0], f[2])
        qs.append(f[0])
        ds.append(f[2])
        vs.append(v)
    if not qs:
        return None
    cols = _columns(pa.array(qs, pa.large_string()), pa.array(ds, pa.large_string()), _values(vs, kind), path)
    cols.extra_fields_line = extra
    return cols


# The advice that ends a "qrels given as a run" (or the reverse) error: right for `qrelkit eval QRELS RUN`; a
# caller where no argument order exists (`qrelkit import run`) puts its own advice in its place.
SWAPPED_ADVICE = ": were the qrels and the run swapped? (qrels first)"


def _swapped(kind: str, fields: list[str]) -> str:
    """A hint when a qrels line is given as a run or a run line as qrels (arguments swapped)."""
    if kind == "qrels" and len(fields) == 6:
        return "; this looks like a TREC run (qid Q0 docid rank score tag), not qrels" + SWAPPED_ADVICE
    if kind == "run" and len(fields) == 4:
        return "; this looks like TREC qrels (qid iter docid grade), not a run" + SWAPPED_ADVICE
    return ""


def extra_fields_warning(path: str, line: tuple[int, int] | None) -> list[str]:
    """The one warning for a run whose lines carry fields after the sixth (empty when none do)."""
    if line is None:
        return []
    return [
        f"{path}:{line[0]}: {line[1]} fields where a run line has 6 (qid Q0 docid rank score tag); fields "
        "after the sixth are ignored on this and every such line, as trec_eval does"
    ]


def _chunk_lines(data: bytes | memoryview, path: str, first_line: int) -> Iterator[tuple[int, str]]:
    """Numbered lines of a chunk of a file, decoded as `iter_lines` does (strict UTF-8, BOM on line 1)."""
    for lineno, raw in enumerate(bytes(data).split(b"\n"), start=first_line):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(path, lineno, f"not valid UTF-8 (byte {exc.start + 1}: {exc.reason})") from None
        yield lineno, (text.removeprefix("\ufeff") if lineno == 1 else text).rstrip("\r")


def read_trec_chunk(data: bytes | memoryview, path: str, first_line: int, kind: str = "run") -> Columns | None:
    """Whole lines of a TREC file starting at line `first_line`, as Columns (None if only blanks/comments).

    Same two paths as a whole file — the columnar reader when it applies and validates, else the scan —
    so errors name the file's own line numbers.
    """
    cols = fast_trec_chunk(data, path, kind)
    return cols if cols is not None else scan_trec_chunk(data, path, first_line, kind)


def fast_trec_chunk(data: bytes | memoryview, path: str, kind: str = "run") -> Columns | None:
    """The columnar read of whole TREC lines when it applies and validates (no pair repeated); None when the
    line-by-line scan has to read them (`scan_trec_chunk`), which needs their line numbers."""
    cols = _arrow_trec(pa.py_buffer(data), kind, path, threads=False)
    return None if cols is None or first_duplicate(cols) is not None else cols


def scan_trec_chunk(data: bytes | memoryview, path: str, first_line: int, kind: str = "run") -> Columns | None:
    """The line-by-line read of whole TREC lines starting at line `first_line`: reads them, or raises an
    InputError naming the first bad line; None if they are only blanks and comments."""
    return _scan_lines(_chunk_lines(data, path, first_line), path, kind)


def _number(path: str, lineno: int, what: str, raw: Any) -> float:
    """A finite float from a field, or an InputError naming the line."""
    try:
        num = float(raw)
    except (TypeError, ValueError):
        raise InputError(path, lineno, f"{what} {raw!r} is not a number") from None
    if not math.isfinite(num):
        raise InputError(path, lineno, f"{what} {raw!r} is not a finite number")
    return num


def _values(vs: list[float], kind: str) -> np.ndarray:
    return np.asarray(vs, dtype=np.int64 if kind == "qrels" else np.float64)


def _check_dup(path: str, lineno: int, seen: dict[tuple[str, str], int], qid: str, doc: str) -> None:
    """Raise on a (query, doc) pair already seen in this file, naming both lines."""
    first = seen.get((qid, doc))
    if first is not None:
        raise InputError(path, lineno, f"doc {doc!r} repeated for query {qid!r} (first on line {first})")
    seen[qid, doc] = lineno


def _read_trec(path: str, kind: str) -> Columns:
    """Fast path when it applies and validates; otherwise the scan, which reads or explains."""
    cols = _fast_trec(path, kind)
    if cols is None or first_duplicate(cols) is not None:
        return _scan_trec(path, kind)
    return cols


# ------------------------------------------------------------------------ BEIR and named-column files


def _beir(path: str) -> Columns:
    """BEIR qrels TSV (header query-id, corpus-id, score) with integer grades and no repeated pairs."""
    q: list[str] = []
    d: list[str] = []
    v: list[float] = []
    seen: dict[tuple[str, str], int] = {}
    header: list[str] | None = None
    for lineno, text in iter_lines(path):
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
        try:
            g = int(rec["score"])
        except ValueError:
            raise InputError(path, lineno, f"grade {rec['score']!r} is not an integer") from None
        _check_dup(path, lineno, seen, rec["query-id"], rec["corpus-id"])
        q.append(rec["query-id"])
        d.append(rec["corpus-id"])
        v.append(g)
    if not q:
        raise InputError(path, 1, "empty file: no qrels rows")
    return _columns(pa.array(q, pa.large_string()), pa.array(d, pa.large_string()), _values(v, "qrels"), path)


def _records(path: str, kind: str) -> Columns:
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
                _check_dup(path, lineno, seen, qid, str(doc))
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
            num = _number(path, lineno, value, raw)
            if kind == "qrels" and num != int(num):
                raise InputError(path, lineno, f"grade {raw!r} is not an integer")
            with_score += 1
        if with_score and without_score:
            raise InputError(path, lineno, "some rows have a score and others do not")
        _check_dup(path, lineno, seen, qid, str(doc))
        q.append(qid)
        d.append(str(doc))
        v.append(num)
    if not q:
        raise InputError(path, 1, f"empty file: no {kind} records")
    cols = _columns(
        pa.array(q, pa.large_string()),
        pa.array(d, pa.large_string()),
        _values(v, kind) if not without_score else np.zeros(len(q)),
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


def named_scale(src: Any) -> tuple[int, int] | None:
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


def qrels_scale(qrels: Any, scale: tuple[int, int] | None) -> tuple[int, int] | None:
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


def _from_frame(df: pd.DataFrame, kind: str, label: str = FRAME) -> Columns:
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
        bad |= np.where(bad, False, num != np.round(num))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "an integer" if kind == "qrels" else "a finite number"
        raw = df[pick[value]].iloc[i]
        raise InputError(label, i + 1, f"{value} {raw.item() if hasattr(raw, 'item') else raw!r} is not {what}")
    out = _columns(
        _arrow_ids(df[pick["query_id"]], label),
        _arrow_ids(df[pick["doc_id"]], label),
        _values(num.tolist(), kind) if kind == "qrels" else num,
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


def _from_dict(obj: Mapping, kind: str) -> Columns:
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
    return _from_frame(pd.DataFrame({"query_id": q, "doc_id": d, value: v}), kind, DICT)


# ------------------------------------------------------------------------------------------ public API


def _load(src: Any, kind: str) -> Columns:
    """Any accepted source (path, DataFrame, dict, Columns) as validated Columns."""
    if isinstance(src, Columns):
        return src
    if is_frame(src):
        return _from_frame(src, kind)
    if isinstance(src, Mapping):
        return _from_dict(src, kind)
    if not isinstance(src, str | os.PathLike):
        raise TypeError(f"{kind} must be a path, a DataFrame or a dict, not {type(src).__name__}")
    path = str(src)
    require_file(path)
    fmt = detect_format(path)
    if fmt == "trec":
        return _read_trec(path, kind)
    if fmt == "beir":
        return _beir(path)
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
    return _records(path, kind)


def is_frame(obj: Any) -> bool:
    """True for a pandas DataFrame, without importing pandas (none can exist before it is imported)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(obj, pandas.DataFrame)


def require_file(path: str | Path) -> None:
    """A clear error for a path that is a directory or does not exist, before any reader opens it."""
    if Path(path).is_dir():
        raise InputError(str(path), None, "is a directory, not a file")
    if not Path(path).is_file():
        raise InputError(str(path), None, "no such file")


def load_run(src: Any) -> Columns:
    """A run as validated Columns (what `evaluate()` uses, skipping pandas)."""
    return _load(src, "run")


def load_qrels(src: Any) -> Columns:
    """Qrels as validated Columns (what `evaluate()` uses, skipping pandas)."""
    return _load(src, "qrels")


def read_run(src: Any) -> pd.DataFrame:
    """Run as DataFrame[query_id: str, doc_id: str, score: float64] from a path, DataFrame or dict."""
    return load_run(src).frame("score")


def read_qrels(src: Any) -> pd.DataFrame:
    """Qrels as DataFrame[query_id: str, doc_id: str, grade: int64] from a path, DataFrame or dict."""
    return load_qrels(src).frame("grade")


def read_qrels_jg(path: str | Path) -> pd.DataFrame:
    """Multi-judge TREC qrels (trec_eval `-R qrels_jg`: `qid judge docid grade`, the second column names the
    judge group) as DataFrame[query_id, judge, doc_id, grade]; a doc may appear once per judge of a query."""
    rows: list[tuple[str, str, str, int]] = []
    seen: dict[tuple[str, str, str], int] = {}
    label = str(path)
    require_file(label)
    for lineno, text in iter_lines(label):
        line = text.strip()
        if not line or line.startswith("#"):
            continue
        odd = bad_id_char(line.replace(" ", "").replace("\t", ""))
        if odd is not None:
            raise InputError(
                label,
                lineno,
                f"holds {char_name(odd)}; fields are separated by spaces or tabs, and "
                "no id may hold other whitespace, control or invisible characters",
            )
        f = line.split()
        if len(f) != 4:
            raise InputError(label, lineno, f"expected 4 fields (qid judge docid grade), found {len(f)}")
        try:
            grade = int(f[3])
        except ValueError:
            raise InputError(label, lineno, f"grade {f[3]!r} is not an integer") from None
        first = seen.setdefault((f[0], f[1], f[2]), lineno)
        if first != lineno:
            raise InputError(
                label, lineno, f"doc {f[2]!r} repeated for query {f[0]!r} by judge {f[1]!r} (first on line {first})"
            )
        rows.append((f[0], f[1], f[2], grade))
    if not rows:
        raise InputError(label, 1, "empty file: no qrels lines")
    import pandas as pd

    return pd.DataFrame(rows, columns=["query_id", "judge", "doc_id", "grade"]).astype({"grade": "int64"})


def read_categories(src: Any) -> dict[str, str]:
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


class QrelsGrades(StrEnum):
    """How TREC and BEIR qrels written from graded judgments hold the grades: as gains from the scale's lowest
    grade (grade − low, so the lowest grade is 0, not relevant, and the field's tools read them right with
    default options), or as judged on the scale. JSONL and CSV always keep the grades as judged."""

    GAINS = "gains"
    AS_JUDGED = "as-judged"


def _umask() -> int:
    """The process's umask (os.umask can only be read by setting it, so it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Files are created as open() would: 0666 less the user's umask (mkstemp alone makes them 0600).
FILE_MODE = 0o666 & ~_umask()


STALE_TMP_SECONDS = 3600  # a temporary file of no live process, or this old, was left by a killed writer


def remove_stale_temporaries(path: Path) -> int:
    """Delete what killed writers of `path` left (`.NAME.PID.*.tmp` of a process that is gone, or any
    `.NAME.*.tmp` older than STALE_TMP_SECONDS); returns how many. A live writer's file is left alone."""
    removed = 0
    try:
        candidates = list(path.parent.glob(f".{glob_escape(path.name)}.*.tmp"))
    except OSError:
        return 0
    for tmp in candidates:
        pid = tmp.name[len(path.name) + 2 :].split(".", 1)[0]
        try:
            alive = pid.isdigit() and _process_alive(int(pid))
            if not alive or time.time() - tmp.stat().st_mtime > STALE_TMP_SECONDS:
                tmp.unlink()
                removed += 1
        except OSError:
            continue
    return removed


def _process_alive(pid: int) -> bool:
    """True when a process with this id exists (ours included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_atomically(path: str | Path, lines: Iterator[str]) -> None:
    """Write all lines or nothing: a temporary file in the same directory (named with this process's id, so
    the next run can tell a killed writer's leftover from a live one and removes it), renamed into place, with
    the mode open() would give a new file (the user's umask)."""
    path = Path(path)
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as raw:
            fh: Any = gzip.GzipFile(fileobj=raw, mode="wb") if path.suffix == ".gz" else raw
            for chunk in lines:
                fh.write(chunk.encode("utf-8"))
            if fh is not raw:
                fh.close()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_qrels(src: Any, path: str | Path, fmt: str = "trec") -> None:
    """Write qrels as TREC (`qid 0 docid grade`), BEIR TSV, JSONL or CSV, atomically (gzip if `.gz`)."""
    from eval_core.io.spreadsheet import escape_frame

    q = read_qrels(src)
    rows = list(zip(q["query_id"], q["doc_id"], q["grade"].tolist(), strict=True))
    if fmt == "trec":
        lines: Iterator[str] = (f"{a} 0 {b} {g}\n" for a, b, g in rows)
    elif fmt == "beir":
        lines = iter(["query-id\tcorpus-id\tscore\n", *(f"{a}\t{b}\t{g}\n" for a, b, g in rows)])
    elif fmt == "jsonl":
        lines = (json.dumps({"query_id": a, "doc_id": b, "grade": g}, ensure_ascii=False) + "\n" for a, b, g in rows)
    elif fmt == "csv":
        lines = iter([escape_frame(q).to_csv(index=False)])
    else:
        raise ValueError(f"unknown qrels format {fmt!r}: use trec, beir, jsonl or csv")
    write_atomically(path, lines)


def write_run(src: Any, path: str | Path, tag: str = "qrelkit") -> None:
    """Write a run as TREC (`qid Q0 docid rank score tag`), ranked in trec_eval's order, atomically."""
    r = ranked(read_run(src))
    lines = (
        f"{a} Q0 {b} {k} {s!r} {tag}\n"
        for a, b, k, s in zip(r["query_id"], r["doc_id"], r["rank"].tolist(), r["score"].tolist(), strict=True)
    )
    write_atomically(path, lines)


def ranked(run: pd.DataFrame, queries: Sequence[str] | None = None, depth: int | None = None) -> pd.DataFrame:
    """Run rows in trec_eval order (score desc, docid desc) with 1-based `rank`, optionally cut at `depth`.

    A numeric sort on (query, score); doc ids are compared only inside tied score groups.
    """
    import pandas as pd

    rows = run if queries is None else run[run["query_id"].isin(list(queries))]
    qcode, _ = pd.factorize(rows["query_id"], sort=True)
    score = rows["score"].to_numpy(np.float64)
    order = np.lexsort((-score, qcode))
    sq, ss = qcode[order], score[order]
    tie = (sq[1:] == sq[:-1]) & (ss[1:] == ss[:-1])
    if tie.any():
        tied = np.zeros(len(order), dtype=bool)
        tied[:-1] |= tie
        tied[1:] |= tie
        pos = np.flatnonzero(tied)
        group = np.cumsum(np.concatenate(([True], ~tie[pos[:-1]])))  # neighbours in one tie ⇔ same group
        sub = pd.DataFrame({"g": group, "d": rows["doc_id"].iloc[order[pos]].to_numpy(), "i": order[pos]})
        order[pos] = sub.sort_values(["g", "d"], ascending=[True, False], kind="stable")["i"].to_numpy()
    block = np.concatenate(([True], sq[1:] != sq[:-1])) if len(sq) else np.zeros(0, dtype=bool)
    starts = np.flatnonzero(block)
    rank = np.arange(len(sq)) - np.repeat(starts, np.diff(np.append(starts, len(sq)))) + 1
    keep = slice(None) if depth is None else rank <= depth
    out = rows[["query_id", "doc_id"]].iloc[order[keep]].reset_index(drop=True)
    return out.assign(score=ss[keep], rank=rank[keep])

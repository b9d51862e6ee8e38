"""TREC qrels and runs as text: a columnar fast path (pyarrow's CSV reader) and a line scan that reads what the
fast path cannot take (tabs, repeated spaces, comments) or names the first bad line; blocks of a big run; and the
multi-judge qrels of trec_eval's `-R qrels_jg`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from eval_core.errors import InputError
from eval_core.io import arrow_compute as pc
from eval_core.io.columns import (
    Columns,
    check_pair_once,
    columns_of,
    finite_number,
    first_duplicate,
    integer_grade,
    typed_values,
)
from eval_core.io.keys import numpy_values, string_keys
from eval_core.io.records import BAD_ID_CHARS, bad_id_char, char_name, iter_blocks, iter_lines, require_file

if TYPE_CHECKING:
    import pandas as pd

_TREC = {"qrels": (4, "qid iter docid grade"), "run": (6, "qid Q0 docid rank score tag")}


def _fast_trec(path: str, kind: str) -> Columns | None:
    """Columnar read of a TREC file in blocks of whole lines (memory follows the block; a repeated pair, a bad
    line or a file past its limits is met in the block that holds it); None when some block needs the scan, or
    a pair repeats across blocks."""
    parts: list[Columns] = []
    for data, _ in iter_blocks(path, numbered=False):
        if data.isspace():
            continue  # blank lines only: nothing to parse
        cols = fast_trec_chunk(data, path, kind)
        if cols is None:
            return None
        parts.append(cols)
    if not parts:
        return None
    cols = parts[0] if len(parts) == 1 else concat_columns(parts, path)
    return None if len(parts) > 1 and first_duplicate(cols) is not None else cols


def concat_columns(parts: list[Columns], label: str) -> Columns:
    """Blocks' Columns as one: query codes re-keyed into the query ids' first-seen order over all blocks."""
    both = pa.concat_arrays([p.qvalues for p in parts])
    enc = pc.dictionary_encode(both)
    codes = numpy_values(enc.indices).astype(np.int64)
    qcode, at = [], 0
    for p in parts:
        qcode.append(codes[at : at + len(p.qvalues)][p.qcode])
        at += len(p.qvalues)
    return Columns(
        np.concatenate(qcode),
        enc.dictionary,
        pa.concat_arrays([p.docid for p in parts]),
        np.concatenate([p.value for p in parts]),
        label,
        np.concatenate([p.doc_keys for p in parts]),
    )


_TAB_TO_SPACE = bytes.maketrans(b"\t", b" ")
_SPACE_RUNS = re.compile(rb" {2,}")
_EDGE_SPACES = re.compile(rb"(?m)^ +| +(?=\r?$)")


def single_spaced(data: bytes | bytearray) -> bytes | bytearray | None:
    """TREC lines with each run of spaces and tabs between fields made one space and those around the fields
    dropped (trec_eval splits its fields at any such run); None when they already are so. Other whitespace
    (\\v, \\f, a lone \\r) is left for the readers to refuse or split."""
    out = data.translate(_TAB_TO_SPACE) if b"\t" in data else data
    if b"  " in out:
        out = _SPACE_RUNS.sub(b" ", out)
    if out[:1] == b" " or b"\n " in out or b" \n" in out or b" \r" in out or out[-1:] == b" ":
        out = _EDGE_SPACES.sub(b"", out)
    return None if out is data else out


def _as_bytes(source: Any) -> bytes | bytearray | None:
    """The bytes of a parse's source (bytes as they are; a buffer, a view or a path — gzip looked through — copied)."""
    if isinstance(source, bytes | bytearray):
        return source
    if isinstance(source, memoryview):
        return bytes(source)
    if isinstance(source, pa.Buffer):
        return source.to_pybytes()
    if isinstance(source, str | Path):
        return b"".join(block for block, _ in iter_blocks(source, numbered=False))
    return None


@dataclass
class TrecTable:
    """Single-space TREC lines as pyarrow parsed them: the distinct query ids (bytes, first-seen order), each
    line's query code, the docids (bytes) and the grades or scores. Nothing is validated beyond the shape."""

    qids: pa.Array
    qcode: np.ndarray
    docid: pa.Array
    value: np.ndarray


def arrow_trec_table(source: Any, kind: str, threads: bool = True) -> TrecTable | None:
    """`parse_trec_table` of the source's lines single-spaced (`single_spaced`): tab-separated files, and any mix
    of spaces and tabs trec_eval reads, take the columnar path too. Bytes are single-spaced before the parse; a
    file (the whole-file path) is parsed as it is first, and again single-spaced when that fails or leaves a tab
    in an id."""
    if isinstance(source, str | Path):
        table = parse_trec_table(source, kind, threads)
        if table is not None and not _holds_tab(table.qids) and not _holds_tab(table.docid):
            return table
    window = _window(source)
    if window is None:
        data = _as_bytes(source)
        if data is None:
            return parse_trec_table(source, kind, threads)
        window = data, 0, len(data)
    whole, start, end = window
    buffer = pa.py_buffer(source if isinstance(source, memoryview) else whole)
    if whole.find(b"\t", start, end) < 0:
        table = parse_trec_table(buffer, kind, threads)
    elif whole.find(b" ", start, end) < 0:  # tab-separated as shipped: parsed as it is, without a copy
        table = parse_trec_table(buffer, kind, threads, delimiter="\t")
    else:
        table = None
    if table is None:
        spaced = single_spaced(whole[start:end])
        table = None if spaced is None else parse_trec_table(pa.py_buffer(spaced), kind, threads)
    return table


def _window(source: Any) -> tuple[bytes | bytearray, int, int] | None:
    """Bytes holding the source's and where they lie in them, without a copy: bytes or a bytearray, or a view of
    one (a block of a big run is a view of its worker's reused buffer: searched in place, not copied); None for
    other sources."""
    if isinstance(source, bytes | bytearray):
        return source, 0, len(source)
    whole = source.obj if isinstance(source, memoryview) else None
    if not isinstance(whole, bytes | bytearray) or not source.contiguous or source.itemsize != 1:
        return None
    start = pa.py_buffer(source).address - pa.py_buffer(whole).address
    return whole, start, start + source.nbytes


def _holds_tab(ids: pa.Array) -> bool:
    """True when some id holds a tab (a space-delimited parse of tab-separated fields)."""
    return not _printable_ascii(ids) and bool((_id_bytes(ids) == 9).any())


def parse_trec_table(source: Any, kind: str, threads: bool = True, delimiter: str = " ") -> TrecTable | None:
    """pyarrow's CSV reader over a file or buffer of TREC lines; None when they do not fit its shape: not
    single-space separated fields of the kind's count, a comment line, an empty id, or no line at all.

    `threads=False` for blocks of a big run: the blocks are already parsed in parallel by `--workers`,
    and pyarrow's own thread pool on top of them costs more CPU and, on a loaded machine, far more time.
    Ids are parsed as bytes (a third cheaper than as text).
    """
    names = ["q", "it", "d", "v"] if kind == "qrels" else ["q", "q0", "d", "rank", "v", "tag"]
    types = {
        "q": pa.binary(),
        "d": pa.large_binary(),
        "v": pa.int64() if kind == "qrels" else pa.float64(),
    }
    try:
        table = pacsv.read_csv(
            source,
            read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 22, use_threads=threads),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter,
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
    qids, qcode = query_codes(table["q"].combine_chunks())
    d = table["d"].combine_chunks()
    if pc.any(pc.starts_with(qids, b"#")).as_py() or pc.min(pc.binary_length(qids)).as_py() == 0:
        return None  # comment lines, or leading/doubled spaces
    offsets = np.frombuffer(d.buffers()[1], np.int64)[d.offset : d.offset + len(d) + 1]
    if (offsets[1:] == offsets[:-1]).any():
        return None  # an empty docid
    return TrecTable(qids, qcode, d, numpy_values(table["v"]))


def query_codes(q: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The distinct query ids of the lines in first-seen order, and each line's code (its id's place in them),
    as dictionary-encoding gives them. A file keeps each query's lines together, so the ids come in runs of equal
    neighbours: one comparison of each line with the next (run-end encoding) finds them, and only a file where an
    id comes back after another (no run's id may repeat) is hashed line by line."""
    runs = pc.run_end_encode(q)
    values = runs.values
    if len(pc.dictionary_encode(values).dictionary) == len(values):
        ends = numpy_values(runs.run_ends).astype(np.int64)
        return values, np.repeat(np.arange(len(values)), np.diff(ends, prepend=0))
    enc = pc.dictionary_encode(q)
    return enc.dictionary, numpy_values(enc.indices).astype(np.int64)


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
        return pc.cast(ids, pa.large_string())
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
    cols = _scan_lines(iter_lines(path, blank=False), path, kind)
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
            v: float = integer_grade(path, lineno, f[3])
        else:
            v = finite_number(path, lineno, "score", f[4])
        check_pair_once(path, lineno, seen, f[0], f[2])
        qs.append(f[0])
        ds.append(f[2])
        vs.append(v)
    if not qs:
        return None
    cols = columns_of(pa.array(qs, pa.large_string()), pa.array(ds, pa.large_string()), typed_values(vs, kind), path)
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
    cols = _arrow_trec(data, kind, path, threads=False)
    return None if cols is None or first_duplicate(cols) is not None else cols


def scan_trec_chunk(data: bytes | memoryview, path: str, first_line: int, kind: str = "run") -> Columns | None:
    """The line-by-line read of whole TREC lines starting at line `first_line`: reads them, or raises an
    InputError naming the first bad line; None if they are only blanks and comments."""
    if not data or bytes(data).isspace():
        return None  # blank lines only (a block of a blank-line bomb costs a C scan, not a Python loop)
    return _scan_lines(_chunk_lines(data, path, first_line), path, kind)


def read_trec(path: str, kind: str) -> Columns:
    """Fast path when it applies and validates; otherwise the scan, which reads or explains."""
    cols = _fast_trec(path, kind)
    return cols if cols is not None else _scan_trec(path, kind)


def read_qrels_jg(path: str | Path) -> pd.DataFrame:
    """Multi-judge TREC qrels (trec_eval `-R qrels_jg`: `qid judge docid grade`, the second column names the
    judge group) as DataFrame[query_id, judge, doc_id, grade]; a doc may appear once per judge of a query."""
    rows: list[tuple[str, str, str, int]] = []
    seen: dict[tuple[str, str, str], int] = {}
    label = str(path)
    require_file(label)
    for lineno, text in iter_lines(label, blank=False):
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
        grade = integer_grade(label, lineno, f[3])
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

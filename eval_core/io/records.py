"""Line-numbered JSONL/CSV record readers shared by every importer (qrels, judgments, queries…).

Every reader refuses with `path:line` and one sentence: a NUL byte anywhere, bytes that are not UTF-8, a JSON
lone surrogate or nesting deeper than MAX_JSON_DEPTH, a CSV quote that is never closed (named by the line it
opened on), and ids holding whitespace, control or invisible characters (BAD_ID_CHARS).
"""

from __future__ import annotations

import csv
import functools
import gzip
import json
import math
import os
import re
import sys
import unicodedata
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from eval_core.errors import InputError

MAX_LINE_BYTES = 64 * 1024 * 1024
# What one file may hold once decompressed, in bytes and in lines: a 2 MB gzip can inflate to 2 GB of one line
# repeated, and a reader must refuse it in seconds, not hold it. Raised with QRELKIT_MAX_READ_BYTES and
# QRELKIT_MAX_READ_LINES (docs/eval.md, "Limits").
MAX_READ_BYTES = 8 * 1024**3
MAX_READ_LINES = 100_000_000
BLOCK_BYTES = 16 * 1024 * 1024
FIRST_BLOCK_BYTES = 64 * 1024  # line readers start small: detect_format reads one line of a 1 GB run
MAX_JSON_DEPTH = 32  # records are flat objects with a few nested lists or objects; deeper is not a record
MAX_NOTE_CHARS = 10_000  # a note or a reason is a sentence or a paragraph, not a document
# An id may hold none of these: whitespace of any kind, control characters, format characters (zero-width,
# bidi), separators: an RE2 class for the columnar (pyarrow) readers; bad_id_char is the same test in Python.
BAD_ID_CHARS = r"[\s\p{Z}\p{Cc}\p{Cf}]"
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def open_binary(path: str | Path) -> BinaryIO:
    """Open a file for reading, looking through gzip compression by its magic bytes."""
    try:
        fh = Path(path).open("rb")  # noqa: SIM115 — returned to the caller, who closes it
    except OSError as exc:
        raise InputError(str(path), None, f"cannot open: {exc.strerror or exc}") from None
    try:
        magic = fh.peek(2)[:2]
    except OSError as exc:
        fh.close()
        raise read_error(str(path), 1, exc) from None
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh)  # type: ignore[return-value]
    return fh


def require_file(path: str | Path) -> None:
    """A clear error for a path that is a directory or does not exist, before any reader opens it."""
    if Path(path).is_dir():
        raise InputError(str(path), None, "is a directory, not a file")
    if not Path(path).is_file():
        raise InputError(str(path), None, "no such file")


@dataclass(frozen=True)
class ReadLimits:
    """What one file may hold once decompressed: bytes, lines and the longest line, with the environment
    variables that raise the first two (named in the refusal) and why a line is bounded (said with it)."""

    bytes: int
    lines: int
    line_bytes: int
    bytes_var: str = "QRELKIT_MAX_READ_BYTES"
    lines_var: str = "QRELKIT_MAX_READ_LINES"
    line_note: str = ""


_TIGHTER: ContextVar[ReadLimits | None] = ContextVar("qrelkit_read_limits", default=None)


def _env_number(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip().replace("_", "")
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{name} must be a whole number above 0, got {raw!r}")
    return int(raw)


def read_limits() -> ReadLimits:
    """The limits every reader applies: MAX_READ_BYTES and MAX_READ_LINES, or what the environment's
    QRELKIT_MAX_READ_BYTES and QRELKIT_MAX_READ_LINES say (whole numbers), or tighter ones inside
    `tighter_limits`."""
    tighter = _TIGHTER.get()
    if tighter is not None:
        return tighter
    return ReadLimits(
        _env_number("QRELKIT_MAX_READ_BYTES", MAX_READ_BYTES),
        _env_number("QRELKIT_MAX_READ_LINES", MAX_READ_LINES),
        MAX_LINE_BYTES,
    )


@contextmanager
def tighter_limits(
    *,
    bytes_var: str | None = None,
    default_bytes: int | None = None,
    lines_var: str | None = None,
    default_lines: int | None = None,
    line_bytes: int | None = None,
    line_note: str = "",
) -> Iterator[ReadLimits]:
    """Within: every reader's limits are at most these — bytes and lines from the variables named (their defaults
    when unset), lines no longer than `line_bytes` — and a refusal names the variable that raises the limit met
    (an app upload is bounded tighter than an operator's file; a run line longer than two ids is no run line)."""
    limits = read_limits()
    if bytes_var is not None and default_bytes is not None:
        wanted = _env_number(bytes_var, default_bytes)
        if wanted < limits.bytes:
            limits = replace(limits, bytes=wanted, bytes_var=bytes_var)
    if lines_var is not None and default_lines is not None:
        wanted = _env_number(lines_var, default_lines)
        if wanted < limits.lines:
            limits = replace(limits, lines=wanted, lines_var=lines_var)
    if line_bytes is not None and line_bytes < limits.line_bytes:
        limits = replace(limits, line_bytes=line_bytes, line_note=line_note)
    token = _TIGHTER.set(limits)
    try:
        yield limits
    finally:
        _TIGHTER.reset(token)


def over_limit(label: str, lines: int, size: int, limits: ReadLimits) -> InputError | None:
    """The refusal of a file past its limits (`read_limits`) after `lines` lines and `size` bytes, or None."""
    if size > limits.bytes:
        return InputError(
            label,
            lines or None,
            f"holds more than {limits.bytes:,} bytes (decompressed); a file this big is refused unless "
            f"{limits.bytes_var} allows it",
        )
    if lines > limits.lines:
        return InputError(
            label,
            limits.lines + 1,
            f"holds more than {limits.lines:,} lines; a file this long is refused unless {limits.lines_var} allows it",
        )
    return None


def too_long(label: str, lineno: int, limits: ReadLimits) -> InputError:
    """The refusal of a line longer than the limits allow."""
    note = f" ({limits.line_note})" if limits.line_note else ""
    return InputError(label, lineno, f"line longer than {limits.line_bytes:,} bytes{note}")


def _first_long_line(block: bytes, limit: int) -> int | None:
    """The index (0-based, in `block`) of the first line longer than `limit` bytes, or None; one look at the
    newlines' positions (NumPy, only where a tighter bound than MAX_LINE_BYTES applies)."""
    import numpy as np

    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
    starts = np.concatenate(([0], ends + 1))
    lengths = np.concatenate((ends, [len(block)])) - starts
    over = np.flatnonzero(lengths > limit)  # without its newline; a CR before it is not the line's either
    first = next((int(i) for i in over if len(block[starts[i] : starts[i] + lengths[i]].rstrip(b"\r")) > limit), None)
    return first


def read_error(label: str, lineno: int | None, exc: BaseException) -> InputError:
    """`path:line: cannot read the file (…)` for an I/O error or a corrupt gzip stream met while reading."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
    return InputError(label, lineno, f"cannot read the file ({reason})")


def iter_blocks(
    path: str | Path, block_bytes: int = BLOCK_BYTES, first_bytes: int | None = None, numbered: bool = True
) -> Iterator[tuple[bytes, int]]:
    """Yield (whole lines, number of their first line) in blocks of about `block_bytes`, gzip looked through;
    memory follows the block, and a file past `read_limits` is refused as soon as the block that passes them is
    read. Every block but the last ends with a newline. `first_bytes`: the first read's size, growing 4× a
    read up to `block_bytes` (a caller that may stop after a few lines reads no more than it needs).

    `numbered=False`, for a caller that ignores the line numbers (it yields 0): lines are not counted while the
    bytes read stay within both limits (a file holds no more lines than bytes, so neither limit can be passed;
    counting a 7 MB run's newlines costs a fifth of reading it whole), and the lines read so far are counted
    once they may be, so the refusals are the same."""
    label = str(path)
    limits = read_limits()
    lines, size, carry = 0, 0, b""
    counting = numbered

    def lines_before(offset: int) -> int:  # the lines before byte `offset`, where the carried-over bytes begin
        return lines if counting else _count_lines(path, offset)

    read_bytes = block_bytes if first_bytes is None else min(first_bytes, block_bytes)
    with open_binary(path) as fh:
        while True:
            try:
                chunk = fh.read(read_bytes)
                read_bytes = min(read_bytes * 4, block_bytes)
            except (OSError, EOFError, zlib.error) as exc:
                raise read_error(label, lines_before(size - len(carry)) + 1, exc) from None
            size += len(chunk)
            data = carry + chunk if carry else chunk
            end = data.rfind(b"\n") + 1 if chunk else len(data)
            if chunk and end == 0 and len(data) > limits.line_bytes:
                raise too_long(label, lines_before(size - len(data)) + 1, limits)
            block, carry = (data, b"") if end == len(data) else (data[:end], data[end:])
            if not counting and size > min(limits.bytes, limits.lines):
                lines, counting = lines_before(size - len(data)), True
            first = lines + 1 if counting else 0
            if limits.line_bytes < MAX_LINE_BYTES and block:
                index = _first_long_line(block, limits.line_bytes)
                if index is not None:
                    raise too_long(label, (first if counting else lines_before(size - len(data)) + 1) + index, limits)
            if counting:
                lines += block.count(b"\n") + (1 if not chunk and block and not block.endswith(b"\n") else 0)
            problem = over_limit(label, lines, size, limits)
            if problem is not None:
                raise problem
            if block:
                yield block, first
            if not chunk:
                return


def _count_lines(path: str | Path, size: int) -> int:
    """The newlines in the first `size` bytes of a file (gzip looked through), read again in blocks."""
    lines = 0
    with open_binary(path) as fh:
        while size > 0:
            chunk = fh.read(min(size, BLOCK_BYTES))
            if not chunk:
                break
            lines += chunk.count(b"\n")
            size -= len(chunk)
    return lines


def bounded_bytes(path: str | Path, limit: int) -> bytes | None:
    """A whole file's (decompressed) bytes when there are at most `limit` of them, else None; never holds more."""
    label = str(path)
    with open_binary(path) as fh:
        try:
            data = fh.read(limit + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise read_error(label, None, exc) from None
    return data if len(data) <= limit else None


def iter_lines(path: str | Path, blank: bool = True) -> Iterator[tuple[int, str]]:
    """Yield (line number, text without newline), naming the exact line that is not UTF-8 or too long, and
    refusing a file past `read_limits` at the line that passes them. `blank=False` leaves out lines of ASCII
    whitespace alone, skipped in bulk at C speed (a readers that ignores them anyway stays fast on a gzip of
    empty lines), with the same line numbers and refusals."""
    if not blank:
        yield from _nonblank_lines(path)
        return
    label = str(path)
    lineno = 0
    size = 0
    limits = read_limits()
    with open_binary(path) as fh:
        while True:
            try:
                raw = fh.readline(limits.line_bytes + 2)  # room for CR LF
            except (OSError, EOFError, zlib.error) as exc:
                raise read_error(label, lineno + 1, exc) from None
            if not raw:
                return
            lineno += 1
            size += len(raw)
            problem = over_limit(label, lineno, size, limits)
            if problem is not None:
                raise problem
            if len(raw.rstrip(b"\r\n")) > limits.line_bytes:
                raise too_long(label, lineno, limits)
            yield lineno, _line_text(label, lineno, raw).rstrip("\r\n")


def _line_text(label: str, lineno: int, raw: bytes) -> str:
    """One line's bytes as text, refused at its number when not UTF-8 or holding a NUL; line 1 loses a BOM."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(label, lineno, f"not valid UTF-8 (byte {exc.start + 1}: {exc.reason})") from None
    if lineno == 1:
        text = text.removeprefix("\ufeff")
    nul = text.find("\x00")
    if nul >= 0:
        raise InputError(label, lineno, f"holds a NUL byte (column {nul + 1}); text files hold none")
    return text


_NONBLANK = re.compile(rb"[^\n]*[^ \t\n\r\f\v][^\n]*")  # a line holding anything but ASCII whitespace


def _nonblank_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """iter_lines without its blank lines: whole blocks (iter_blocks: limits checked per block, lines counted by
    bytes.count), then the regex jumps over runs of blank lines; each line it stops at is checked as in
    iter_lines (UTF-8, a BOM on line 1, NUL)."""
    label = str(path)
    for block, first in iter_blocks(path, first_bytes=FIRST_BLOCK_BYTES):
        lineno, pos = first, 0
        for match in _NONBLANK.finditer(block):
            lineno += block.count(b"\n", pos, match.start())
            pos = match.start()
            yield lineno, _line_text(label, lineno, match.group()).rstrip("\r")


def bad_id_char(text: str) -> str | None:
    """The first character of `text` an id may not hold (BAD_ID_CHARS), or None. ASCII text is tested by one
    compiled regex; other text by its distinct characters (each judged once per process), never char by char."""
    if text.isascii():
        found = _BAD_ASCII.search(text)
        return found.group() if found else None
    bad = [ch for ch in set(text) if _bad_char(ch)]
    return min(bad, key=text.index) if bad else None


_BAD_ASCII = re.compile("[\x00-\x20\x7f]")


@functools.lru_cache(maxsize=65536)
def _bad_char(ch: str) -> bool:
    """True for whitespace of any kind, a control, format (zero-width, bidi), surrogate or separator character."""
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zs", "Zl", "Zp")


def check_id(text: str, what: str) -> str:
    """A query or fragment id as given, refused when it holds whitespace (any Unicode space, \\v, \\f, NEL),
    a control or an invisible character: TREC qrels and runs separate their fields by whitespace, so such an
    id could never be released, exported or evaluated, and an invisible one passes for another id."""
    ch = bad_id_char(text)
    if ch is not None and ch.isspace():
        raise ValueError(
            f"{what} {text!r} contains whitespace; TREC qrels and run files separate fields by "
            f"whitespace, so ids cannot hold any ({char_name(ch)})"
        )
    if ch is not None:
        raise ValueError(
            f"{what} {text!r} contains the invisible or control character {char_name(ch)}; an id "
            f"must be visible text, or it passes for another id"
        )
    return text


# What an account name may not hold (a plain space it may): RE2 for the columnar reader, check_name in Python.
BAD_NAME_CHARS = r"[\t\n\x{0B}\x{0C}\r\p{Cc}\p{Cf}\p{Zl}\p{Zp}\x{A0}\x{1680}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}]"


def check_name(text: str, what: str) -> str:
    """An annotator name from a file, refused when it holds a control, invisible (zero-width, bidi) or
    whitespace character other than a plain space: such names pass for other accounts."""
    ch = bad_id_char(text.replace(" ", ""))
    if ch is not None:
        raise ValueError(
            f"{what} {text!r} holds the invisible, control or whitespace character {char_name(ch)}; "
            f"a name must be visible text (plain spaces are fine)"
        )
    return text


def char_name(ch: str) -> str:
    """`U+00A0 NO-BREAK SPACE`: a character named so it can be found."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, '')}".rstrip()


def check_note(text: str, what: str) -> str:
    """A note or a can't-judge reason of at most MAX_NOTE_CHARS characters, or ValueError saying so."""
    if len(text) > MAX_NOTE_CHARS:
        raise ValueError(f"{what} has {len(text)} characters; at most {MAX_NOTE_CHARS} are kept")
    return text


def check_json_value(value: object) -> None:
    """ValueError when a parsed JSON value nests deeper than MAX_JSON_DEPTH or holds a lone surrogate or NUL
    in any string (json.loads accepts `"\\ud800"` and `"\\u0000"`; the store and UTF-8 files cannot hold them)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ValueError("a string holds a NUL character (\\u0000)")
            if not item.isascii() and _holds_surrogate(item):
                raise ValueError("a string holds a lone surrogate (\\ud800-\\udfff), which is not a character")
            continue
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((k, depth) for k in item)
        stack.extend((child, depth + 1) for child in children)


def _holds_surrogate(text: str) -> bool:
    """True when `text` holds a lone surrogate (UTF-8 cannot encode one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def format_by_name(path: str | Path) -> str | None:
    """'jsonl', 'csv' or 'tsv' when the file name says which (a .gz suffix is looked through), else None: one
    list of extensions for the record readers and the evaluation readers' format detection."""
    name = Path(path).name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith((".csv", ".tsv")):
        return name[-3:]
    return None


def record_format(path: str | Path) -> str:
    """'jsonl', 'csv' or 'tsv' from the file name (a .gz suffix is looked through)."""
    fmt = format_by_name(path)
    if fmt is not None:
        return fmt
    raise InputError(str(path), None, "unknown record format: expected .jsonl, .csv or .tsv (optionally .gz)")


def iter_records(
    path: str | Path, required: tuple[str, ...] = (), allow_empty: bool = False
) -> Iterator[tuple[int, dict]]:
    """Yield (line number, record) from JSONL, CSV or TSV with a header; reject missing fields, and empty files
    unless `allow_empty` (a file of decisions may hold none: `export --adjudications` before any)."""
    fmt = record_format(path)
    records = _iter_jsonl(path, required) if fmt == "jsonl" else _iter_delimited(path, required, fmt)
    seen_any = False
    for item in records:
        seen_any = True
        yield item
    if not seen_any and not allow_empty:
        raise InputError(str(path), None, "empty file: no records")


def strict_json(text: str) -> object:
    """JSON as the standard reads it: a key repeated in one object, a number no float holds (`1e400`) and
    Infinity (which Python's json accepts) raise ValueError."""
    return json.loads(text, object_pairs_hook=_unique_keys, parse_float=_finite_float, parse_constant=_no_constant)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object whose keys are all distinct (json.loads would keep a repeated key's last value silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError(f"the key {key!r} appears twice in one object")
    return out


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent, refused when a float cannot hold it (`1e400` is not infinity)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


def _no_constant(text: str) -> float:
    """Infinity and -Infinity are not JSON (Python's json reads them): refused. NaN is read as Python reads it,
    for the readers to refuse where a number must be one (a grade, a score)."""
    if text == "NaN":
        return math.nan
    raise ValueError(f"{text} is not a JSON value")


def _iter_jsonl(path: str | Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict]]:
    label = str(path)
    for lineno, line in iter_lines(path, blank=False):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            rec = strict_json(line)
            check_json_value(rec)
        except json.JSONDecodeError as exc:
            raise InputError(label, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise InputError(label, lineno, f"invalid JSON: nested deeper than {MAX_JSON_DEPTH} levels") from None
        except ValueError as exc:
            raise InputError(label, lineno, f"invalid JSON: {exc}") from None
        if not isinstance(rec, dict):
            raise InputError(label, lineno, "expected a JSON object")
        missing = [c for c in required if c not in rec]
        if missing:
            raise InputError(label, lineno, f"missing field(s): {', '.join(missing)}")
        yield lineno, rec


def _iter_delimited(path: str | Path, required: tuple[str, ...], fmt: str) -> Iterator[tuple[int, dict]]:
    """CSV/TSV rows keyed by the header; quoted fields may span lines, errors name the row's first line. The
    parser is strict: a quote that is never closed (which would swallow the rest of the file into one field)
    or text after a closing quote is refused, naming the line the quoted field opened on."""
    label = str(path)
    starts: list[int] = []

    def feed() -> Iterator[str]:
        for lineno, text in iter_lines(path):
            starts.append(lineno)
            yield text + "\n"

    reader = csv.reader(feed(), delimiter="\t" if fmt == "tsv" else ",", strict=True)
    header: list[str] | None = None
    consumed = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            opened = starts[consumed] if consumed < len(starts) else None
            if "unexpected end of data" in str(exc):
                raise InputError(
                    label,
                    opened,
                    "malformed CSV: the quote opened on this line is never closed, "
                    "so the rest of the file would be one field (double a quote inside a quoted "
                    'field: "")',
                ) from None
            raise InputError(label, opened, f"malformed CSV: {exc} (a quote opened on this line)") from None
        lineno = starts[consumed]
        consumed = len(starts)
        if not row or not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [h.strip() for h in row]
            missing = [c for c in required if c not in header]
            if missing:
                raise InputError(label, lineno, f"header lacks column(s): {', '.join(missing)}")
            continue
        if len(row) != len(header):
            raise InputError(label, lineno, f"expected {len(header)} fields ({', '.join(header)}), found {len(row)}")
        yield lineno, dict(zip(header, row, strict=True))


def iter_records_as(path: str | Path, fmt: str) -> Iterator[tuple[int, dict]]:
    """Yield (line number, record) of a file read as `fmt` ('jsonl', 'csv' or 'tsv' with a header) whatever its
    name says: for readers that tell the format by content."""
    if fmt not in ("jsonl", "csv", "tsv"):
        raise ValueError(f"record format must be jsonl, csv or tsv, got {fmt!r}")
    return _iter_jsonl(path, ()) if fmt == "jsonl" else _iter_delimited(path, (), fmt)


SEMICOLON_HINT = (
    "it looks like a CSV separated by ';' (a spreadsheet's export in a locale that writes decimal "
    "commas): save it with ',' as the delimiter"
)


def semicolon_separated(path: str | Path) -> bool:
    """Whether a file's first line splits by ';' into several cells and by ',' into one: a CSV whose delimiter
    is ';', which a header-keyed reader would read as one column."""
    for _, text in iter_lines(path, blank=False):
        if text.strip():
            return text.count(";") > 0 and len(next(csv.reader([text]))) == 1
    return False


def parse_scale(text: str) -> tuple[int, int]:
    """'0-3' → (0, 3): the CLI form of a grading scale."""
    match = re.fullmatch(r"\s*(-?\d+)\s*-\s*(-?\d+)\s*", text)
    if not match or int(match[1]) >= int(match[2]):
        raise ValueError(f"scale must look like 0-3 (low-high, low < high), got {text!r}")
    return int(match[1]), int(match[2])


def declared_scale(path: str | Path) -> tuple[int, int] | None:
    """The scale a file names on its first record (`"scale": "1-5"`, the field qrelkit's judgments and release
    exports write on every line), None when it names none. A scale that does not parse is path:line."""
    for lineno, rec in iter_records(path):
        value = rec.get("scale")
        if value is None or str(value).strip() == "":
            return None
        try:
            return parse_scale(str(value).strip())
        except ValueError as exc:
            raise InputError(str(path), lineno, str(exc)) from None
    return None

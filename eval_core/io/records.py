"""Line-numbered JSONL/CSV record readers shared by every importer (qrels, judgments, queries…).

Every reader refuses with `path:line` and one sentence: a NUL byte anywhere, bytes that are not UTF-8, a JSON
lone surrogate or nesting deeper than MAX_JSON_DEPTH, a CSV quote that is never closed (named by the line it
opened on), and ids holding whitespace, control or invisible characters (BAD_ID_CHARS).
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from eval_core.errors import InputError

MAX_LINE_BYTES = 64 * 1024 * 1024
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
    if fh.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh)  # type: ignore[return-value]
    return fh


def require_file(path: str | Path) -> None:
    """A clear error for a path that is a directory or does not exist, before any reader opens it."""
    if Path(path).is_dir():
        raise InputError(str(path), None, "is a directory, not a file")
    if not Path(path).is_file():
        raise InputError(str(path), None, "no such file")


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, text without newline), naming the exact line that is not UTF-8 or too long."""
    label = str(path)
    lineno = 0
    with open_binary(path) as fh:
        while True:
            try:
                raw = fh.readline(MAX_LINE_BYTES + 1)
            except (OSError, EOFError) as exc:
                raise InputError(label, lineno + 1, f"cannot read: {exc}") from None
            if not raw:
                return
            lineno += 1
            if len(raw) > MAX_LINE_BYTES:
                raise InputError(label, lineno, f"line longer than {MAX_LINE_BYTES} bytes")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(label, lineno, f"not valid UTF-8 (byte {exc.start + 1}: {exc.reason})") from None
            if lineno == 1:
                text = text.removeprefix("\ufeff")
            nul = text.find("\x00")
            if nul >= 0:
                raise InputError(label, lineno, f"holds a NUL byte (column {nul + 1}); text files hold none")
            yield lineno, text.rstrip("\r\n")


def bad_id_char(text: str) -> str | None:
    """The first character of `text` an id may not hold (BAD_ID_CHARS), or None."""
    for ch in text:
        if ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zs", "Zl", "Zp"):
            return ch
    return None


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
            if _SURROGATE.search(item):
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


_SURROGATE = re.compile("[\ud800-\udfff]")


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


def iter_records(path: str | Path, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict]]:
    """Yield (line number, record) from JSONL, CSV or TSV with a header; reject empty files and missing fields."""
    fmt = record_format(path)
    records = _iter_jsonl(path, required) if fmt == "jsonl" else _iter_delimited(path, required, fmt)
    seen_any = False
    for item in records:
        seen_any = True
        yield item
    if not seen_any:
        raise InputError(str(path), None, "empty file: no records")


def _iter_jsonl(path: str | Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict]]:
    label = str(path)
    for lineno, line in iter_lines(path):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            rec = json.loads(line)
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
    for _, text in iter_lines(path):
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

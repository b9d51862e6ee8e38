"""Line-numbered JSONL/CSV record readers shared by every importer (qrels, judgments, queries…)."""

from __future__ import annotations

import csv
import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from eval_core.errors import InputError

MAX_LINE_BYTES = 64 * 1024 * 1024
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
            yield lineno, text.rstrip("\r\n")


def check_id(text: str, what: str) -> str:
    """A query or fragment id as given, refused when it holds whitespace: TREC qrels and runs separate their
    fields by whitespace, so such an id could never be released, exported or evaluated."""
    if any(ch.isspace() for ch in text):
        raise ValueError(f"{what} {text!r} contains whitespace; TREC qrels and run files separate fields by "
                         f"whitespace, so ids cannot hold any")
    return text


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
        except json.JSONDecodeError as exc:
            raise InputError(label, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(rec, dict):
            raise InputError(label, lineno, "expected a JSON object")
        missing = [c for c in required if c not in rec]
        if missing:
            raise InputError(label, lineno, f"missing field(s): {', '.join(missing)}")
        yield lineno, rec


def _iter_delimited(path: str | Path, required: tuple[str, ...], fmt: str) -> Iterator[tuple[int, dict]]:
    """CSV/TSV rows keyed by the header; quoted fields may span lines, errors name the row's first line."""
    label = str(path)
    starts: list[int] = []

    def feed() -> Iterator[str]:
        for lineno, text in iter_lines(path):
            starts.append(lineno)
            yield text + "\n"

    reader = csv.reader(feed(), delimiter="\t" if fmt == "tsv" else ",")
    header: list[str] | None = None
    consumed = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(label, starts[consumed] if consumed < len(starts) else None,
                             f"malformed CSV: {exc}") from None
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


SEMICOLON_HINT = ("it looks like a CSV separated by ';' (a spreadsheet's export in a locale that writes decimal "
                  "commas): save it with ',' as the delimiter")


def semicolon_separated(path: str | Path) -> bool:
    """Whether a file's first line splits by ';' into several cells and by ',' into one: a CSV whose delimiter
    is ';', which a header-keyed reader would read as one column."""
    for _, text in iter_lines(path):
        if text.strip():
            return text.count(";") > 0 and len(next(csv.reader([text]))) == 1
    return False

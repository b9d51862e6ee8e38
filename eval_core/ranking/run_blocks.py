"""A TREC run read in blocks of whole queries, so memory follows the block size and not the file size.

The file is read in byte blocks; each block is cut at the start of its last query's lines, and that
query's lines are carried over to the next block, so no query is split between two blocks as long as
the file keeps each query's lines together (TREC runs do). A query id seen again in a later block
means the file is not grouped by query: `Scattered` is raised and the caller reads the file whole.
An uncompressed file is cut by reading only around each cut; each worker thread then reads its blocks into
a buffer of its own, reused (no fresh memory per block; not a memory map, which would kill the process if
the file were cut short while it is read), and its line numbers are counted only for a block the line scan
has to read, in file order. A gzip stream is read in order, its lines counted as its blocks are cut.
"""

from __future__ import annotations

import gzip
import os
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from io import BufferedIOBase
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from eval_core.errors import InputError
from eval_core.io.columns import Columns
from eval_core.io.keys import string_keys
from eval_core.io.records import over_limit, read_error, read_limits
from eval_core.io.trec_text import fast_trec_chunk, scan_trec_chunk

BLOCK_BYTES = 16 * 1024 * 1024
T = TypeVar("T")


def default_workers() -> int:
    """Every core this process may run on: the default number of threads reading blocks."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _first_field(line: bytes | bytearray) -> bytes:
    """The query id of a TREC line (its first whitespace-separated field), b"" for a blank line."""
    parts = line.split(maxsplit=1)
    return bytes(parts[0]) if parts else b""


def _query_cut(buf: bytes | bytearray, known: int = 0, known_qid: bytes | None = None) -> tuple[int, bytes | None]:
    """Where the last complete line's query begins (0: nowhere yet), and that query's id.

    Blank and comment lines go with the query after them. The first `known` bytes of `buf` hold whole lines
    already found to belong to `known_qid` (the carried-over tail), so they are not walked again.
    """
    tail = buf.rfind(b"\n") + 1  # the partial line after the last newline always goes with the tail
    qid = None
    while tail > 0:
        if tail <= known and (qid is None or known_qid is None or qid == known_qid):
            return 0, qid or known_qid
        end = tail - 1  # the newline ending the line just before the tail
        start = buf.rfind(b"\n", 0, end) + 1
        field = _first_field(buf[start:end])
        if field and not field.startswith(b"#"):
            if qid is not None and field != qid:
                return tail, qid
            qid = field
        tail = start
    return 0, qid


def _byte_blocks(
    raw: BufferedIOBase,
    block_bytes: int,
    check: Callable[[memoryview, int], object] | None = None,
    bounds: Callable[[int, int], object] | None = None,
) -> Iterator[tuple[memoryview, int]]:
    """Yield (whole-query chunk, number of its first line) from a binary stream (a gzip file's, read in
    order), without copying chunks.

    Each block is read straight into a buffer that already holds the carried-over tail (no second copy
    of the block). While one query fills the buffer, reads double in size, so a huge query costs
    linear time; before it doubles, `check(lines, first line)` looks at the complete lines held so far (so a
    bad line inside one huge query is refused when it is read, not once the query ends). `bounds(lines, bytes)`
    gets the lines and bytes read so far after every read (to refuse a file past its limits).
    """
    carry, qid = b"", None
    first_line, size, total = 1, block_bytes, 0
    while True:
        buf = bytearray(len(carry) + size)
        buf[: len(carry)] = carry
        got = _fill(raw, memoryview(buf)[len(carry) :])
        del buf[len(carry) + got :]
        total += got
        if bounds is not None:
            bounds(first_line - 1 + buf.count(b"\n"), total)
        cut, qid = (len(buf), None) if not got else _query_cut(buf, carry.rfind(b"\n") + 1, qid)
        if not cut and check is not None:
            check(memoryview(buf)[: buf.rfind(b"\n") + 1], first_line)
        carry = bytes(buf[cut:])
        size = block_bytes if cut else 2 * size
        if cut:
            first_lines = first_line
            first_line += buf.count(b"\n", 0, cut)
            yield memoryview(buf)[:cut], first_lines
        if not got:
            return


def _fill(raw: BufferedIOBase, view: memoryview) -> int:
    """Read into `view` until it is full or the stream ends; the number of bytes read."""
    total = 0
    while total < len(view):
        n = raw.readinto(view[total:])
        if not n:
            break
        total += n
    return total


@dataclass(frozen=True)
class _Piece:
    """A block of whole queries: a byte range of an uncompressed file, which the worker reads itself, or the
    bytes a gzip stream gave (read in order) with the number of their first line."""

    start: int
    end: int
    data: memoryview | None = None
    first_line: int | None = None


def _spans(
    fd: int, size: int, block_bytes: int, check: Callable[[int, int], object] | None = None
) -> Iterator[tuple[int, int]]:
    """The byte ranges of an uncompressed file's blocks, each cut where its last complete line's query begins
    (as `_byte_blocks` cuts). Only the bytes around each cut are read here; while one query fills a block, the
    block doubles, so a huge query costs linear time, and `check(start, end)` looks at the lines held so far
    before each doubling."""
    start, span = 0, block_bytes
    while start < size:
        end = start + span
        if end >= size:
            yield start, size
            return
        cut = _cut_before(fd, start, end)
        if cut is None:
            if check is not None:
                check(start, end)
            span *= 2
            continue
        yield start, cut
        start, span = cut, block_bytes


def _cut_before(fd: int, start: int, end: int) -> int | None:
    """Where the last query of the complete lines in bytes [start, end) begins, reading a growing window back
    from `end`; None when one query holds them all."""
    window = 1 << 16
    while True:
        lo = max(start, end - window)
        data = os.pread(fd, end - lo, lo)
        skip = 0 if lo == start else data.find(b"\n") + 1  # a window starts inside a line: from the next one
        if lo == start or skip:
            cut, _ = _query_cut(data[skip:])
            if cut:
                return lo + skip + cut
        if lo == start:
            return None
        window *= 4


def _read_span(fd: int, piece: _Piece, local: threading.local) -> memoryview:
    """A block's bytes, read into this thread's own buffer (reused from block to block: no fresh memory)."""
    n = piece.end - piece.start
    buf = getattr(local, "buf", None)
    if buf is None or len(buf) < n:
        buf = local.buf = bytearray(n)
    view = memoryview(buf)[:n]
    got = 0
    while got < n:
        k = os.preadv(fd, [view[got:]], piece.start + got)
        if not k:
            raise FileChanged
        got += k
    return view


def map_run_blocks(
    path: str | Path,
    fn: Callable[[Columns], T],
    block_bytes: int = BLOCK_BYTES,
    progress: Callable[[int], object] | None = None,
    workers: int = 1,
    before: Callable[[], object] | None = None,
    read: Callable[[memoryview, str], Columns | None] = fast_trec_chunk,
) -> Iterator[T]:
    """`fn(block)` for each block of whole queries of a TREC run, in file order; `workers` threads read, parse
    and run `fn` on several blocks at once (the reads, pyarrow and NumPy release the GIL), so results do not
    depend on it. `before()` runs in the calling thread before any block's outcome (or the file's emptiness) is
    looked at: whatever it raises comes first.

    `read(chunk, path)` parses a block (the columnar reader by default); where it gives None, the line scan
    reads the block. `progress(n)` gets file bytes read. Raises `Scattered` when a query's lines are not
    contiguous (the blocks would split it), and InputError naming path:line for bad lines, a docid repeated
    within a query, an empty file, or a file that changed while it was read — the first such problem in file
    order, whatever the number of workers (or what `read` raises, in file order too).
    """
    label = str(path)
    workers = max(1, workers)
    local = threading.local()
    changed = InputError(
        label, None, "the file changed while it was read (is it still being written?); run again once it is complete"
    )

    def job(fd: int, piece: _Piece) -> tuple[tuple[np.ndarray, int, T] | None, bytes | None]:
        data = piece.data if piece.data is not None else _read_span(fd, piece, local)
        cols = read(data, label)
        if cols is None:  # the scan reads it in file order, once its line numbers are known
            return None, bytes(data)
        return (string_keys(cols.qvalues), len(cols.qcode), fn(cols)), None

    seen: list[np.ndarray] = []
    rows = 0
    lines = _LineCounter(label)
    limits = read_limits()

    def bounds(n_lines: int, n_bytes: int) -> None:
        problem = over_limit(label, n_lines, n_bytes, limits)
        if problem is not None:
            raise problem

    def check(data: memoryview | bytes, first_line: int) -> None:
        """Lines of one query so long it fills a block: refused now if one of them is bad (a docid repeated at
        line 2 of a 42M-line query is named at once, not after the whole query is held)."""
        if not data:
            return
        if before is not None:
            before()  # its problems come first, as for any block (even what `read` raises)
        if read(memoryview(data), label) is None:
            scan_trec_chunk(data, label, first_line)

    check_lines = _LineCounter(label)  # its own counter: checks run ahead of the blocks still in flight

    def check_span(fd: int, start: int, end: int) -> None:
        data = os.pread(fd, end - start, start)
        check(data[: data.rfind(b"\n") + 1], check_lines.before(start))

    def in_order(block: tuple[Future, _Piece]) -> Iterator[T]:
        nonlocal rows
        if before is not None:
            before()  # before the job's outcome, even one it raised
        (done, raw), piece = _outcome(block, changed)
        if done is None:  # the columnar reader could not take the block: the scan reads it or names the bad line
            first = piece.first_line if piece.first_line is not None else lines.before(piece.start)
            cols = scan_trec_chunk(raw or b"", label, first)
            if cols is None:
                return
            done = string_keys(cols.qvalues), len(cols.qcode), fn(cols)
        keys, n, result = done
        bounds(rows + n, 0)
        if seen and np.isin(keys, np.concatenate(seen)).any():
            raise Scattered(label)  # a 64-bit key match may be a collision: the whole-file path is exact
        seen.append(keys)
        rows += n
        yield result

    pending: deque[tuple[Future, _Piece]] = deque()
    with Path(path).open("rb") as fh, _pool(workers, fh, block_bytes) as pool:
        try:
            fd = fh.fileno()
            written = _version(fh)
            pieces: Iterator[_Piece]
            if fh.peek(2)[:2] != b"\x1f\x8b" and hasattr(os, "preadv"):
                bounds(0, written[0])
                spans = _spans(fd, written[0], block_bytes, lambda a, b: check_span(fd, a, b))
                pieces = (_Piece(a, b) for a, b in spans)
            else:  # a gzip stream is read in order, here
                stream = gzip.GzipFile(fileobj=fh) if fh.peek(2)[:2] == b"\x1f\x8b" else fh
                blocks = _byte_blocks(stream, block_bytes, check, bounds)
                pieces = (_Piece(0, 0, chunk, first) for chunk, first in _guarded(blocks, label))
            done = 0
            for piece in pieces:
                if progress is not None:
                    now = piece.end if piece.data is None else fh.tell()
                    progress(now - done)
                    done = now
                pending.append((pool.submit(job, fd, piece), piece))
                del piece
                while len(pending) > workers:  # bounded: at most workers + 1 blocks in memory
                    yield from in_order(pending.popleft())
            if _version(fh) != written:
                raise changed
            while pending:
                yield from in_order(pending.popleft())
        finally:
            for future, _ in pending:
                future.cancel()
    if before is not None:
        before()
    if not rows:
        raise InputError(label, 1, "empty file: no run lines")


def _guarded(blocks: Iterator[T], label: str) -> Iterator[T]:
    """The blocks of a gzip stream, a corrupt or cut-short stream refused as `path: cannot read the file (…)`."""
    try:
        yield from blocks
    except (OSError, EOFError, zlib.error) as exc:
        raise read_error(label, None, exc) from None


class _Inline:
    """An executor that runs each job at once in the calling thread: one worker, or a file of one block, needs
    no thread (starting one costs more than a small run takes to read)."""

    def submit(self, fn: Callable[..., T], *args: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to the caller through the future, as a pool does
            future.set_exception(exc)
        return future

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _pool(workers: int, fh: BufferedIOBase, block_bytes: int) -> ThreadPoolExecutor | _Inline:
    """Threads for the blocks of a big file; none for one worker or an uncompressed file of one block."""
    small = fh.peek(2)[:2] != b"\x1f\x8b" and os.fstat(fh.fileno()).st_size <= block_bytes  # type: ignore[attr-defined]
    return _Inline() if workers == 1 or small else ThreadPoolExecutor(max_workers=workers)


class FileChanged(Exception):
    """A block's bytes are no longer all in the file: it was cut short while it was read."""


def _version(fh: BufferedIOBase) -> tuple[int, int]:
    """The open file's size and modification time: a writer changing it meanwhile changes one of them."""
    st = os.fstat(fh.fileno())
    return st.st_size, st.st_mtime_ns


def _outcome(block: tuple[Future, _Piece], changed: InputError) -> tuple[Any, _Piece]:
    """A submitted block's job result (raising what the job raised; a block cut short as `changed`), with the
    block."""
    future, piece = block
    try:
        return future.result(), piece
    except FileChanged:
        raise changed from None


class _LineCounter:
    """Line numbers of file offsets, counted on demand and in increasing order (each byte read once)."""

    def __init__(self, path: str) -> None:
        self.path, self.offset, self.lines = path, 0, 1

    def before(self, offset: int) -> int:
        """The number of the line starting at byte `offset` (1 for the first; offsets never decrease)."""
        with Path(self.path).open("rb") as fh:
            fh.seek(self.offset)
            while self.offset < offset:
                piece = fh.read(min(offset - self.offset, 1 << 24))
                if not piece:
                    break
                self.lines += piece.count(b"\n")
                self.offset += len(piece)
        return self.lines


def iter_run_blocks(
    path: str | Path, block_bytes: int = BLOCK_BYTES, progress: Callable[[int], object] | None = None
) -> Iterator[Columns]:
    """Validated Columns for each block of whole queries of a TREC run (see `map_run_blocks`)."""
    return map_run_blocks(path, lambda cols: cols, block_bytes, progress)


class Scattered(Exception):
    """A query's lines are spread over the file, so it cannot be read one block of queries at a time."""

"""A TREC run read in blocks of whole queries, so memory follows the block size and not the file size.

The file is read in byte blocks; each block is cut at the start of its last query's lines, and that
query's lines are carried over to the next block, so no query is split between two blocks as long as
the file keeps each query's lines together (TREC runs do). A query id seen again in a later block
means the file is not grouped by query: `Scattered` is raised and the caller reads the file whole.
An uncompressed file's blocks are views of read-only memory maps (no copy); a gzip file's are read.
Line numbers are counted only when a block needs the line-by-line scan (an error to name, or lines
the columnar reader cannot take), in file order.
"""

from __future__ import annotations

import gzip
import mmap
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from io import BufferedIOBase
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from eval_core.errors import InputError
from eval_core.io.formats import Columns, fast_trec_chunk, scan_trec_chunk, string_keys

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


def _query_cut(buf: bytes | bytearray | mmap.mmap, known: int = 0, known_qid: bytes | None = None,
               lo: int = 0) -> tuple[int, bytes | None]:
    """Where the last complete line's query begins (0: nowhere yet), and that query's id.

    The block is `buf[lo:]` and positions count from `lo`. Blank and comment lines go with the query
    after them. Its first `known` bytes hold whole lines already found to belong to `known_qid` (the
    carried-over tail), so they are not walked again.
    """
    tail = max(buf.rfind(b"\n", lo) + 1, lo)  # the partial line after the last newline always goes with the tail
    qid = None
    while tail > lo:
        if tail <= lo + known and (qid is None or known_qid is None or qid == known_qid):
            return 0, qid or known_qid
        end = tail - 1  # the newline ending the line just before the tail
        start = max(buf.rfind(b"\n", lo, end) + 1, lo)
        field = _first_field(buf[start:end])
        if field and not field.startswith(b"#"):
            if qid is not None and field != qid:
                return tail - lo, qid
            qid = field
        tail = start
    return 0, qid


_MAP_FLAGS = getattr(mmap, "MAP_SHARED", 0) | getattr(mmap, "MAP_POPULATE", 0)


def _mapped_blocks(fileno: int, size: int, block_bytes: int) -> Iterator[tuple[memoryview, int]]:
    """Yield (whole-query chunk, its file offset) of an uncompressed file, cut as `_byte_blocks` cuts.

    Each chunk is a view of its own read-only memory map of the file: nothing is copied or zero-filled,
    and the pages leave the process once the chunk is dropped. A query filling a whole block maps
    twice the size, so a huge query costs linear time.
    """
    start, span, known, qid = 0, block_bytes, 0, None
    while start < size:
        end = min(start + span, size)
        base = start - start % mmap.ALLOCATIONGRANULARITY
        mm = mmap.mmap(fileno, end - base, flags=_MAP_FLAGS, prot=mmap.PROT_READ, offset=base)
        lead = start - base
        if end == size:
            yield memoryview(mm)[lead:], start
            return
        cut, qid = _query_cut(mm, known, qid, lead)
        if not cut:  # one query fills the block: map twice as much from the same start
            known, span = max(mm.rfind(b"\n", lead) + 1 - lead, 0), 2 * span
            continue
        known = max(mm.rfind(b"\n", lead + cut) + 1 - lead - cut, 0)  # whole lines of the carried-over tail
        yield memoryview(mm)[lead:lead + cut], start
        start, span = start + cut, block_bytes


def _byte_blocks(raw: BufferedIOBase, block_bytes: int) -> Iterator[tuple[memoryview, int]]:
    """Yield (whole-query chunk, number of its first line) from a binary stream, without copying chunks.

    Each block is read straight into a buffer that already holds the carried-over tail (no second copy
    of the block). While one query fills the buffer, reads double in size, so a huge query costs
    linear time.
    """
    carry, qid = b"", None
    first_line, size = 1, block_bytes
    while True:
        buf = bytearray(len(carry) + size)
        buf[:len(carry)] = carry
        got = _fill(raw, memoryview(buf)[len(carry):])
        del buf[len(carry) + got:]
        cut, qid = (len(buf), None) if not got else _query_cut(buf, carry.rfind(b"\n") + 1, qid)
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


def map_run_blocks(path: str | Path, fn: Callable[[Columns], T], block_bytes: int = BLOCK_BYTES,
                   progress: Callable[[int], object] | None = None, workers: int = 1,
                   before: Callable[[], object] | None = None,
                   read: Callable[[memoryview, str], Columns | None] = fast_trec_chunk) -> Iterator[T]:
    """`fn(block)` for each block of whole queries of a TREC run, in file order; `workers` threads parse and
    run `fn` on several blocks at once (pyarrow and NumPy release the GIL), so results do not depend on it.
    `before()` runs in the calling thread before any block's outcome (or the file's emptiness) is looked at:
    whatever it raises comes first.

    `read(chunk, path)` parses a block (the columnar reader by default); where it gives None, the line scan
    reads the block. `progress(n)` gets file bytes read. Raises `Scattered` when a query's lines are not
    contiguous (the blocks would split it), and InputError naming path:line for bad lines, a docid repeated
    within a query, or an empty file — the first such problem in file order, whatever the number of workers
    (or what `read` raises, in file order too).
    """
    label = str(path)
    workers = max(1, workers)

    def job(chunk: memoryview) -> tuple[np.ndarray, int, T] | None:
        cols = read(chunk, label)
        return None if cols is None else (string_keys(cols.qvalues), len(cols.qcode), fn(cols))

    seen: list[np.ndarray] = []
    rows = 0
    lines = _LineCounter(label)

    def in_order(done: tuple[np.ndarray, int, T] | None, chunk: memoryview, offset: int,
                 first_line: int | None) -> Iterator[T]:
        nonlocal rows
        if before is not None:
            before()
        if done is None:  # the columnar reader could not take the block: the scan reads it or names the bad line
            cols = scan_trec_chunk(chunk, label, lines.before(offset) if first_line is None else first_line)
            if cols is None:
                return
            done = string_keys(cols.qvalues), len(cols.qcode), fn(cols)
        keys, n, result = done
        if seen and np.isin(keys, np.concatenate(seen)).any():
            raise Scattered(label)  # a 64-bit key match may be a collision: the whole-file path is exact
        seen.append(keys)
        rows += n
        yield result

    pending: deque[tuple[Future, memoryview, int, int | None]] = deque()
    with ThreadPoolExecutor(max_workers=workers) as pool, Path(path).open("rb") as fh:
        try:
            gz = fh.peek(2)[:2] == b"\x1f\x8b"
            size = os.fstat(fh.fileno()).st_size
            mapped = not gz and bool(_MAP_FLAGS) and size > 0
            blocks: Iterator[tuple[memoryview, int, int | None]]
            if mapped:  # (chunk, offset, None): line numbers counted only if the scan needs them
                blocks = ((chunk, offset, None) for chunk, offset in _mapped_blocks(fh.fileno(), size, block_bytes))
            else:  # (chunk, 0, first line): read, and the lines counted as the blocks are cut
                blocks = ((chunk, 0, first) for chunk, first in
                          _byte_blocks(gzip.GzipFile(fileobj=fh) if gz else fh, block_bytes))
            done = 0
            for chunk, offset, first_line in blocks:
                if progress is not None:
                    now = offset + len(chunk) if mapped else fh.tell()
                    progress(now - done)
                    done = now
                pending.append((pool.submit(job, chunk), chunk, offset, first_line))
                del chunk
                while len(pending) > workers:  # bounded: at most workers + 1 blocks in memory
                    yield from in_order(*_outcome(pending.popleft()))
            while pending:
                yield from in_order(*_outcome(pending.popleft()))
        finally:
            for future, *_ in pending:
                future.cancel()
    if before is not None:
        before()
    if not rows:
        raise InputError(label, 1, "empty file: no run lines")


def _outcome(block: tuple[Future, memoryview, int, int | None]) -> tuple[Any, memoryview, int, int | None]:
    """A submitted block's job result (raising what the job raised), with the block's chunk and place."""
    future, chunk, offset, first_line = block
    return future.result(), chunk, offset, first_line


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


def iter_run_blocks(path: str | Path, block_bytes: int = BLOCK_BYTES,
                    progress: Callable[[int], object] | None = None) -> Iterator[Columns]:
    """Validated Columns for each block of whole queries of a TREC run (see `map_run_blocks`)."""
    return map_run_blocks(path, lambda cols: cols, block_bytes, progress)


class Scattered(Exception):
    """A query's lines are spread over the file, so it cannot be read one block of queries at a time."""

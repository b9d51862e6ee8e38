"""A TREC run read in blocks of whole queries, so memory follows the block size and not the file size.

The file is read in byte blocks; each block is cut at the start of its last query's lines, and that
query's lines are carried over to the next block, so no query is split between two blocks as long as
the file keeps each query's lines together (TREC runs do). A query id seen again in a later block
means the file is not grouped by query: `Scattered` is raised and the caller reads the file whole.
"""

from __future__ import annotations

import gzip
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from io import BufferedIOBase
from pathlib import Path
from typing import TypeVar

import numpy as np

from eval_core.errors import InputError
from eval_core.io.formats import Columns, read_trec_chunk, string_keys

BLOCK_BYTES = 64 * 1024 * 1024
T = TypeVar("T")


def _first_field(line: bytes | bytearray) -> bytes:
    """The query id of a TREC line (its first whitespace-separated field), b"" for a blank line."""
    parts = line.split(maxsplit=1)
    return bytes(parts[0]) if parts else b""


def _query_cut(buf: bytes | bytearray, known: int = 0, known_qid: bytes | None = None) -> tuple[int, bytes | None]:
    """Where the last complete line's query begins (0: nowhere yet), and that query's id.

    Blank and comment lines go with the query after them. `buf[:known]` holds whole lines already
    found to belong to `known_qid` (the carried-over tail), so they are not walked again.
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
                   progress: Callable[[int], object] | None = None, workers: int = 1) -> Iterator[T]:
    """`fn(block)` for each block of whole queries of a TREC run, in file order; `workers` threads parse and
    run `fn` on several blocks at once (pyarrow and NumPy release the GIL), so results do not depend on it.

    `progress(n)` gets file bytes read. Raises `Scattered` when a query's lines are not contiguous (the
    blocks would split it), and InputError naming path:line for bad lines, a docid repeated within a
    query, or an empty file — the first such problem in file order, whatever the number of workers.
    """
    label = str(path)
    workers = max(1, workers)

    def job(chunk: memoryview, first_line: int) -> tuple[np.ndarray, int, T] | None:
        cols = read_trec_chunk(chunk, label, first_line)
        return None if cols is None else (string_keys(cols.qvalues), len(cols.qcode), fn(cols))

    seen: list[np.ndarray] = []
    rows = 0

    def in_order(done: tuple[np.ndarray, int, T] | None) -> Iterator[T]:
        nonlocal rows
        if done is None:
            return
        keys, n, result = done
        if seen and np.isin(keys, np.concatenate(seen)).any():
            raise Scattered(label)  # a 64-bit key match may be a collision: the whole-file path is exact
        seen.append(keys)
        rows += n
        yield result

    pending: deque[Future] = deque()
    with ThreadPoolExecutor(max_workers=workers) as pool, Path(path).open("rb") as fh:
        try:
            gz = fh.peek(2)[:2] == b"\x1f\x8b"
            stream: BufferedIOBase = gzip.GzipFile(fileobj=fh) if gz else fh
            done = 0
            for chunk, first_line in _byte_blocks(stream, block_bytes):
                if progress is not None:
                    progress(fh.tell() - done)
                    done = fh.tell()
                pending.append(pool.submit(job, chunk, first_line))
                del chunk
                while len(pending) > workers:  # bounded: at most workers + 1 blocks in memory
                    yield from in_order(pending.popleft().result())
            while pending:
                yield from in_order(pending.popleft().result())
        finally:
            for future in pending:
                future.cancel()
    if not rows:
        raise InputError(label, 1, "empty file: no run lines")


def iter_run_blocks(path: str | Path, block_bytes: int = BLOCK_BYTES,
                    progress: Callable[[int], object] | None = None) -> Iterator[Columns]:
    """Validated Columns for each block of whole queries of a TREC run (see `map_run_blocks`)."""
    return map_run_blocks(path, lambda cols: cols, block_bytes, progress)


class Scattered(Exception):
    """A query's lines are spread over the file, so it cannot be read one block of queries at a time."""

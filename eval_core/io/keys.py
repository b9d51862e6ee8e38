"""NumPy ⇄ Arrow without pandas, and 64-bit keys of ids and (query, doc) pairs read in place from Arrow buffers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

_MIX = np.uint64(0x9E3779B97F4A7C15)
_LENGTH_MIX = np.uint64(0xC2B2AE3D27D4EB4F)
_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [2**64 - 1], dtype=np.uint64)


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

    def word(at: np.ndarray) -> np.ndarray:  # `at` ascends (Arrow's offsets never decrease): the late ones are a tail
        if not len(at):
            return np.zeros(0, dtype=np.uint64)
        if not safe:
            out = np.zeros(len(at), dtype=np.uint64)
        else:
            out = words[at] if int(at[-1]) < safe else words[np.minimum(at, safe - 1)]
        late = int(np.searchsorted(at, tail_from))
        if late < len(at):
            out[late:] = tail_words[np.minimum(at[late:], end) - tail_from]
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

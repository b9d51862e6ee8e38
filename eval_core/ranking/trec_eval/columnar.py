"""The fast path for big runs: a TREC run (fields separated by spaces, tabs or any mix of them) read by pyarrow in
blocks of whole queries (the whole file at once when its queries are not grouped), each block joined to the qrels
and reduced to its hits — the lines some qrels line judges, ranked as trec_eval ranks — by the code `qrelkit eval`
ranks with (`metrics.rank_run`: score descending, ties by docid descending in byte order, docids compared only
inside tied groups). The line-by-line reader handles every other layout, with the same result.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from eval_core.io import arrow_compute as pc
from eval_core.io.columns import Columns, first_duplicate
from eval_core.io.keys import string_keys
from eval_core.io.trec_text import arrow_trec_table, holds_split_byte, ids_as_text, single_spaced
from eval_core.ranking.metrics import KeyCollision, QrelsIndex, Ranked, index_qrels, merge_ranked, rank_run
from eval_core.ranking.run_blocks import BLOCK_BYTES, Scattered, map_run_blocks
from eval_core.ranking.trec_eval.reading import Qrels
from eval_core.ranking.trec_eval.rels import BOGUS_DOCID, NONPOOL, UNJUDGED, RelMatrix


class NotColumnar(Exception):
    """The run needs trec_eval's line reader: a layout pyarrow does not take once spaces and tabs are made single
    spaces (comments, extra fields) or what only the line reader decides (a repeated docid, a NaN score, a query
    id that is not UTF-8)."""


@dataclass
class RankedRun:
    """A run reduced to its hits against the qrels (`ranked`: each hit's qrels query, 1-based rank and grade, and
    each qrels query's retrieved count), the index it was joined with, and the last line's run id."""

    ranked: Ranked
    index: QrelsIndex
    run_id: str


def qrels_index(qrels: Qrels) -> QrelsIndex | None:
    """The qrels joined against (queries in byte order, docids as bytes), or None when a docid is not UTF-8
    text or two qrels pairs share a 64-bit key: the line reader then reads the run."""
    if qrels.lines is not None:
        docs, query, grade, qvalues = qrels.lines
    else:
        qids = list(qrels.by_query)
        try:
            docs = pa.array([d for q in qids for d in qrels.by_query[q]], type=pa.large_string())
            qvalues = pa.array(qids, type=pa.large_string())
        except (UnicodeEncodeError, pa.ArrowException):  # bytes that are not UTF-8: the line reader's business
            return None
        grade = np.fromiter((g for q in qids for g in qrels.by_query[q].values()), dtype=np.int64, count=len(docs))
        query = np.repeat(np.arange(len(qids), dtype=np.int64), [len(qrels.by_query[q]) for q in qids])
    docs = pc.cast(docs, pa.large_binary())
    try:
        return index_qrels(Columns(query, qvalues, docs, grade, "<qrels>", string_keys(docs)), rel_level=1)
    except KeyCollision:
        return None


def read_lines(source: Any, label: str, threads: bool = False) -> Columns:
    """Single-space run lines as trec_eval reads them: query ids as UTF-8 text, docids as bytes (any bytes but
    the whitespace trec_eval splits on). Raises NotColumnar for anything the line reader must decide."""
    table = arrow_trec_table(source, "run", threads)
    if table is None:
        raise NotColumnar(label)
    qvalues = ids_as_text(table.qids)
    if qvalues is None or holds_split_byte(table.qids) or holds_split_byte(table.docid):
        raise NotColumnar(label)
    if np.isnan(table.value).any():  # the line reader ranks NaN scores as trec_eval's comparison does
        raise NotColumnar(label)
    cols = Columns(table.qcode, qvalues, table.docid, table.value, label, string_keys(table.docid))
    if first_duplicate(cols) is not None:  # trec_eval refuses a repeated docid: the line reader names it
        raise NotColumnar(label)
    return cols


def _last_run_id(path: str | Path) -> str | None:
    """The sixth field of the file's last non-blank line (trec_eval keeps the last line's run id)."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 65536))
        return run_id_of(fh.read())


def run_id_of(lines: bytes | memoryview) -> str | None:
    """The sixth field of the last non-blank one of these whole lines; None when that line has not six fields
    or holds whitespace the line reader must judge."""
    tail = bytes(lines[-65536:]).rstrip(b"\n").rsplit(b"\n", 1)[-1]
    fields = (single_spaced(tail) or tail).split(b" ")
    if len(fields) != 6 or any(c in tail for c in (b"\r", b"\v", b"\f")):
        return None
    return fields[5].decode("utf-8", "surrogateescape")


def read_ranked(
    path: str | Path,
    qrels: Qrels | Callable[[], Qrels],
    *,
    float32: bool = False,
    workers: int = 1,
    block_bytes: int = BLOCK_BYTES,
) -> RankedRun | None:
    """The run's hits against the qrels, read by pyarrow in blocks of whole queries by `workers` threads (whole,
    when its queries are not grouped), scores compared as float64 (trec_eval 10.0) or float32 (`float32`,
    version 9). None when the line reader has to read the run (see NotColumnar); its errors are the line
    reader's to name.

    `qrels` may be a function that waits for them (a side thread still reading them): the first blocks are then
    parsed meanwhile, and whatever it raises comes before any problem of the run's blocks."""
    if str(path) == "-":
        return None
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if not magic:  # empty: the line reader names it
        return None
    gzipped = magic == b"\x1f\x8b"  # looked through, as every qrelkit reader does (trec_eval 10.0 does not)
    file_run_id = None if gzipped else _last_run_id(path)  # a compressed file's last line is its last block's
    if not gzipped and file_run_id is None:
        return None
    joined: list[QrelsIndex | None] = []
    lock = threading.Lock()

    def index() -> QrelsIndex:
        """The qrels index, built once by whichever thread asks first; NotColumnar when it cannot be built."""
        with lock:
            if not joined:
                joined.append(qrels_index(qrels() if callable(qrels) else qrels))
        if joined[0] is None:
            raise NotColumnar
        return joined[0]

    if not callable(qrels):  # qrels at hand: no block is read for nothing
        try:
            index()
        except NotColumnar:
            return None
    block_tail = threading.local()  # the run id of the block the thread read last: its job ranks it next

    def ranked_of(cols: Columns) -> Ranked:
        if float32:
            cols = dataclasses.replace(cols, value=cols.value.astype(np.float32).astype(np.float64))
        return rank_run(index(), cols)

    def rank(cols: Columns) -> tuple[Ranked, str | None]:
        return ranked_of(cols), block_tail.run_id

    def read(chunk: memoryview, label: str) -> Columns:
        block_tail.run_id = run_id_of(chunk)
        return read_lines(chunk, label)  # the block as a view: searched and parsed in place, not copied

    try:
        try:
            blocks = list(map_run_blocks(path, rank, block_bytes, workers=workers, read=read, before=index))
            ranked, run_id = merge_ranked([r for r, _ in blocks]), blocks[-1][1]
        except Scattered:
            if gzipped:  # a compressed run whose queries are not grouped: the line reader reads it
                return None
            ranked, run_id = ranked_of(read_lines(str(path), str(path), threads=True)), file_run_id
    except NotColumnar:
        return None
    return None if run_id is None else RankedRun(ranked, index(), run_id)


def build_columnar(
    qrels: Qrels,
    run: RankedRun,
    *,
    rel_level: int = 1,
    max_docs: int | None = None,
    judged_only: bool = False,
    complete: bool = False,
    bogus_missing: bool = True,
) -> RelMatrix:
    """The same RelMatrix as rels.build for the same inputs, from the run's hits; the other retrieved documents
    are only counted."""
    qi, ranked = run.index, run.ranked
    qids = list(qrels.by_query)
    nq = len(qids)
    counts = ranked.num_ret
    hq, rank = ranked.q, ranked.rank - 1
    value = np.where(ranked.grade < 0, UNJUDGED, ranked.grade)
    if max_docs is not None:
        within = rank < max_docs
        hq, rank, value = hq[within], rank[within], value[within]
    num_ret = counts if max_docs is None else np.minimum(counts, max(max_docs, 0))
    by_rank = np.lexsort((rank, hq))
    hq, rank, value = hq[by_rank], rank[by_rank], value[by_rank]
    if judged_only:  # -J: only documents with a grade ≥ 0 are retrieved, ranked in their order
        keep_j = value >= 0
        hq, value = hq[keep_j], value[keep_j]
        num_ret = np.bincount(hq, minlength=nq)
        rank = _ranks_in_groups(hq)
    present = counts > 0
    bogus = ~present & complete & bogus_missing
    evaluated = present | bogus
    row_of = np.cumsum(evaluated) - 1
    num_ret = np.array(num_ret, dtype=np.int64)
    extra_q, extra_v = [], []
    for i in np.flatnonzero(bogus).tolist():  # trec_eval 10.0 -c: a missing query ranks one made-up docid
        g = qrels.by_query[qids[i]].get(BOGUS_DOCID)
        v = NONPOOL if g is None else UNJUDGED if g < 0 else g
        num_ret[i] = 0 if judged_only and v < 0 else 1
        if v != NONPOOL and num_ret[i]:
            extra_q.append(i)
            extra_v.append(v)
    if extra_q:
        hq = np.concatenate([hq, extra_q])
        rank = np.concatenate([rank, np.zeros(len(extra_q), dtype=np.int64)])
        value = np.concatenate([value, extra_v])
        by_rank = np.lexsort((rank, hq))
        hq, rank, value = hq[by_rank], rank[by_rank], value[by_rank]
    top = int(max(qi.grades[evaluated[qi.key_q]].max(initial=0), 0))
    levels_all = np.zeros((nq, top + 1), dtype=np.int64)
    ok = (qi.grades >= 0) & (qi.grades <= top)
    np.add.at(levels_all, (qi.key_q[ok], qi.grades[ok]), 1)
    return RelMatrix.from_hits(
        [q for q, e in zip(qids, evaluated, strict=True) if e],
        row_of[hq],
        rank,
        value,
        num_ret[evaluated],
        levels_all[evaluated],
        bogus[evaluated],
        rel_level,
    )


def _ranks_in_groups(group: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal `group` values (rows of a query are contiguous)."""
    if not len(group):
        return np.zeros(0, dtype=np.int64)
    start = np.ones(len(group), dtype=bool)
    start[1:] = group[1:] != group[:-1]
    first = np.flatnonzero(start)
    return np.arange(len(group)) - np.repeat(first, np.diff(np.append(first, len(group))))


__all__ = ["NotColumnar", "RankedRun", "build_columnar", "qrels_index", "read_lines", "read_ranked"]

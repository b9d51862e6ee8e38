"""The fast path for big runs: a single-space TREC run read by pyarrow and turned into the RelMatrix without a
Python loop over lines or queries (the line-by-line reader handles every other layout, with the same result).

Ranking as trec_eval: one numeric sort by (query, score descending); docid strings are compared only inside
groups of tied scores. Grades are looked up only for docids that some qrels line names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from eval_core.io.formats import pair_keys
from eval_core.ranking.trec_eval.reading import Qrels
from eval_core.ranking.trec_eval.rels import BOGUS_DOCID, NONPOOL, UNJUDGED, RelMatrix


@dataclass
class RunColumns:
    """A run as columns: query ids (dictionary), docids (bytes), scores, and the last line's run id."""

    qids: list[str]
    qcode: np.ndarray
    docid: pa.Array | pa.ChunkedArray
    score: np.ndarray
    run_id: str
    judged: Judged | None = None  # the lines keyed against the qrels (prepare)


_MIX = np.uint64(0x9E3779B97F4A7C15)
_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [2**64 - 1], dtype=np.uint64)


def docid_keys(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit key per string (equal strings, equal keys; callers confirm a key match on the strings): its bytes
    as little-endian words, mixed, with its length. Read in place from the Arrow buffers."""
    if isinstance(arr, pa.ChunkedArray):
        parts = [docid_keys(c) for c in arr.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    bufs = arr.buffers()
    wide = arr.type in (pa.large_string(), pa.large_binary())
    off: np.ndarray = np.frombuffer(bufs[1], dtype=np.int64 if wide else np.int32)[arr.offset:arr.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    start = off[:-1]
    length = off[1:] - off[:-1]
    end = int(off[-1])
    # every byte offset's 8 bytes as one word (unaligned view); the last strings' words from a padded copy
    safe = max(len(data) - 7, 0)
    words = np.ndarray((safe,), dtype=np.uint64, buffer=data, strides=(1,)) if safe else np.zeros(0, np.uint64)
    tail_from = max(min(safe, end) - 8, 0)
    tail = np.zeros(end - tail_from + 16, dtype=np.uint8)
    tail[:end - tail_from] = data[tail_from:end]
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
    h ^= (length.astype(np.int64, copy=False) << 56).view(np.uint64)
    h *= _MIX
    h ^= h >> np.uint64(29)
    return h


def read_run_columns(path: str | Path) -> RunColumns | None:
    """The run through pyarrow when every line is `qid iter docid rank score runid` with single spaces and no
    comments; None otherwise (the caller then reads it line by line)."""
    names = ["q", "q0", "d", "rank", "v", "tag"]
    # docids as bytes (trec_eval compares them so): no UTF-8 check on 10M of them; the query ids are checked below
    types = {"q": pa.dictionary(pa.int32(), pa.string()), "d": pa.binary(), "v": pa.float64()}
    try:
        table = pacsv.read_csv(
            str(path), read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 20),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False,
                                             newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(include_columns=["q", "d", "v"], column_types=types,
                                                 null_values=[], strings_can_be_null=False, check_utf8=False))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None
    if table.num_rows == 0:
        return None
    q = table["q"].unify_dictionaries()
    values = q.chunk(0).dictionary
    try:
        values.validate(full=True)  # UTF-8 query ids (they become str); others are the line reader's business
    except pa.ArrowInvalid:
        return None
    if pc.any(pc.starts_with(values, "#")).as_py() or pc.min(pc.binary_length(values)).as_py() == 0:
        return None
    d = table["d"]
    run_id = _last_run_id(path)
    if pc.min(pc.binary_length(d)).as_py() == 0 or run_id is None:
        return None
    score = table["v"].combine_chunks().to_numpy()
    if np.isnan(score).any():  # the line reader ranks NaN scores as trec_eval's comparison does
        return None
    qcode = np.concatenate([np.asarray(c.indices) for c in q.chunks])
    return RunColumns(values.to_pylist(), qcode, d, score, run_id)


def _last_run_id(path: str | Path) -> str | None:
    """The sixth field of the file's last non-blank line (trec_eval keeps the last line's run id)."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 65536))
        tail = fh.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    fields = tail.split(b" ")
    if len(fields) != 6 or b"\r" in tail or b"\t" in tail:
        return None
    return fields[5].decode("utf-8", "surrogateescape")


def _sorted_by_query_and_score(qcode: np.ndarray, score: np.ndarray) -> bool:
    """Whether the rows already come query by query, each query's scores descending (most runs do)."""
    return len(qcode) < 2 or bool(np.all(qcode[1:] >= qcode[:-1])
                                  and np.all((score[1:] <= score[:-1]) | (qcode[1:] != qcode[:-1])))


def _bisect(score: np.ndarray, lo: np.ndarray, hi: np.ndarray, s: np.ndarray, strict: bool) -> np.ndarray:
    """For each i, the first index in [lo, hi) whose score is not above s[i] (strict: below s[i]); hi if none.
    The scores are descending within each [lo, hi)."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        active = np.flatnonzero(lo < hi)
        if not len(active):
            return lo
        mid = (lo[active] + hi[active]) >> 1
        above = score[mid] >= s[active] if strict else score[mid] > s[active]
        lo[active] = np.where(above, mid + 1, lo[active])
        hi[active] = np.where(above, hi[active], mid)


def _hit_ranks(qcode: np.ndarray, score: np.ndarray, docid: pa.Array, order: np.ndarray | None,
               hits: np.ndarray, per_code: np.ndarray) -> np.ndarray:
    """The 0-based trec_eval rank of each row in `hits` (positions in the ranked order, ascending): the rows of its
    query with a higher score, plus those with the same score and a greater docid (bytes). `qcode` and `score` are
    in ranked order (query codes ascending, scores descending within each); `per_code` counts each code's rows."""
    if not len(hits):
        return np.zeros(0, dtype=np.int64)
    first_of_code = np.concatenate(([0], np.cumsum(per_code)[:-1]))
    code = qcode[hits]
    q_first = first_of_code[code]
    s = score[hits]
    g_first = _bisect(score, q_first, hits, s, strict=False)
    g_end = _bisect(score, hits + 1, q_first + per_code[code], s, strict=True)
    rank = g_first - q_first
    tied = np.flatnonzero(g_end - g_first > 1)
    if len(tied):
        size = (g_end - g_first)[tied]
        owner = np.repeat(np.arange(len(tied)), size)
        member = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size) + np.repeat(g_first[tied], size)
        mine = hits[tied][owner]
        if order is not None:
            member, mine = order[member], order[mine]
        greater = pc.greater(docid.take(pa.array(member)), docid.take(pa.array(mine)))
        rank[tied] += np.bincount(owner, weights=greater.to_numpy(zero_copy_only=False),
                                  minlength=len(tied)).astype(np.int64)
    return rank


@dataclass
class QrelsColumns:
    """The qrels as columns: each line's query (index in byte order), docid key and grade, sorted by pair key."""

    qids: list[str]
    key: np.ndarray     # uint64 pair keys, ascending (unique: a collision sends the run to the line reader)
    query: np.ndarray   # int64
    grade: np.ndarray   # int64
    docid: pa.Array
    filter_bits: int
    table: np.ndarray   # bool [2**filter_bits]: some qrels pair key has these low bits


def qrels_columns(qrels: Qrels) -> QrelsColumns | None:
    """The qrels' columns, or None when two qrels pairs share a 64-bit key (never in practice) or a docid is not
    UTF-8."""
    qids = list(qrels.by_query)
    if qrels.lines is not None:
        docs, query, grade = qrels.lines
    else:
        sizes = [len(qrels.by_query[q]) for q in qids]
        try:
            docs = pa.array([d for q in qids for d in qrels.by_query[q]], type=pa.string())
        except (UnicodeEncodeError, pa.ArrowException):  # bytes that are not UTF-8: the line reader's business
            return None
        grade = np.fromiter((g for q in qids for g in qrels.by_query[q].values()), dtype=np.int64, count=len(docs))
        query = np.repeat(np.arange(len(qids), dtype=np.int64), sizes)
    key = pair_keys(docid_keys(docs), query)
    by_key = np.argsort(key, kind="stable")
    key = key[by_key]
    if len(key) > 1 and bool((key[1:] == key[:-1]).any()):
        return None
    bits = 24
    table = np.zeros(1 << bits, dtype=bool)
    table[(key & np.uint64((1 << bits) - 1)).astype(np.int64)] = True
    return QrelsColumns(qids, key, query[by_key], grade[by_key], docs.take(pa.array(by_key)), bits, table)


def prepare(run: RunColumns, qrels: Qrels) -> bool:
    """Key the run's lines against the qrels (kept on `run` for build_columnar): the docid with the query's qrels
    index, run-only queries numbered past those; find the hits, the lines whose (query, docid) some qrels line
    judges. False when the fast path cannot decide: two lines of a query may name one docid (the line reader
    then names it, as trec_eval refuses a repeated one) or two qrels pairs share a key."""
    qc = qrels_columns(qrels)
    if qc is None:
        return False
    qindex = {q: i for i, q in enumerate(qc.qids)}
    run_to_qrels = np.array([qindex.get(q, -1) for q in run.qids], dtype=np.int64)
    pk = docid_keys(run.docid)
    codes = np.where(run_to_qrels >= 0, run_to_qrels, len(qc.qids) + np.arange(len(run.qids)))
    pk ^= pair_keys(np.zeros(len(codes), dtype=np.uint64), codes)[run.qcode]
    buf = np.sort(pk)
    if len(buf) > 1 and bool((buf[1:] == buf[:-1]).any()):
        return False
    # a bit table first, then a binary search in the qrels keys, then the docids compared
    low = np.bitwise_and(pk.view(np.int64), (1 << qc.filter_bits) - 1, out=buf.view(np.int64))
    cand = np.flatnonzero(qc.table[low])
    del buf, low
    pos = np.minimum(np.searchsorted(qc.key, pk[cand]), max(len(qc.key) - 1, 0))
    found = qc.key[pos] == pk[cand]
    hits, pos = cand[found], pos[found]
    same = pc.equal(run.docid.take(pa.array(hits)), qc.docid.take(pa.array(pos))).to_numpy(zero_copy_only=False)
    run.judged = Judged(qc, run_to_qrels, hits[same], pos[same])
    return True


@dataclass
class Judged:
    """A run keyed against qrels (prepare): the qrels' columns, each run query's qrels index (−1: none), and
    the hits: line numbers (ascending) and their qrels rows."""

    qrels: QrelsColumns
    run_to_qrels: np.ndarray
    hits: np.ndarray
    pos: np.ndarray


def build_columnar(qrels: Qrels, run: RunColumns, *, rel_level: int = 1, max_docs: int | None = None,
                   judged_only: bool = False, complete: bool = False, bogus_missing: bool = True,
                   float32: bool = False) -> RelMatrix:
    """The same RelMatrix as rels.build for the same inputs, computed on columns: only the retrieved documents
    that the qrels name (the hits) are ranked and looked up; the others are counted. Raises ValueError when
    prepare() cannot decide."""
    if run.judged is None and not prepare(run, qrels):
        raise ValueError("the run needs the line reader")
    assert run.judged is not None
    qc, run_to_qrels, hits, pos = run.judged.qrels, run.judged.run_to_qrels, run.judged.hits, run.judged.pos
    qids = qc.qids
    nq = len(qids)
    score = run.score.astype(np.float32).astype(np.float64) if float32 else run.score
    per_code = np.bincount(run.qcode, minlength=len(run.qids))
    counts = np.zeros(nq, dtype=np.int64)
    in_qrels = run_to_qrels >= 0
    counts[run_to_qrels[in_qrels]] = per_code[in_qrels]
    if _sorted_by_query_and_score(run.qcode, score):
        rank = _hit_ranks(run.qcode, score, run.docid, None, hits, per_code)
    else:
        order = np.lexsort((-score, run.qcode))
        at = np.empty(len(order), dtype=np.int64)
        at[order] = np.arange(len(order))
        ranked = at[hits]
        by_pos = np.argsort(ranked)
        hits, pos, ranked = hits[by_pos], pos[by_pos], ranked[by_pos]
        del at
        rank = _hit_ranks(run.qcode[order], score[order], run.docid, order, ranked, per_code)
    hq = qc.query[pos]
    grade = qc.grade[pos]
    value = np.where(grade < 0, UNJUDGED, grade)
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
    top = int(max(qc.grade[evaluated[qc.query]].max(initial=0), 0))
    levels_all = np.zeros((nq, top + 1), dtype=np.int64)
    ok = (qc.grade >= 0) & (qc.grade <= top)
    np.add.at(levels_all, (qc.query[ok], qc.grade[ok]), 1)
    return RelMatrix.from_hits([q for q, e in zip(qids, evaluated, strict=True) if e], row_of[hq], rank, value,
                               num_ret[evaluated], levels_all[evaluated], bogus[evaluated], rel_level)


def _ranks_in_groups(group: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal `group` values (rows of a query are contiguous)."""
    if not len(group):
        return np.zeros(0, dtype=np.int64)
    start = np.ones(len(group), dtype=bool)
    start[1:] = group[1:] != group[:-1]
    first = np.flatnonzero(start)
    return np.arange(len(group)) - np.repeat(first, np.diff(np.append(first, len(group))))

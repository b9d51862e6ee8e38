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

from eval_core.ranking.trec_eval.reading import Qrels
from eval_core.ranking.trec_eval.rels import NONPOOL, PAD, UNJUDGED, RelMatrix


@dataclass
class RunColumns:
    """A run as columns: query ids (dictionary), docids, scores, and the last line's run id."""

    qids: list[str]
    qcode: np.ndarray
    docid: pa.Array
    score: np.ndarray
    run_id: str


def read_run_columns(path: str | Path) -> RunColumns | None:
    """The run through pyarrow when every line is `qid iter docid rank score runid` with single spaces and no
    comments; None otherwise (the caller then reads it line by line)."""
    names = ["q", "q0", "d", "rank", "v", "tag"]
    types = {"q": pa.dictionary(pa.int32(), pa.string()), "d": pa.string(), "v": pa.float64(), "tag": pa.string()}
    try:
        table = pacsv.read_csv(
            str(path), read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 22),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False,
                                             newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(include_columns=["q", "d", "v"], column_types=types,
                                                 null_values=[], strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None
    if table.num_rows == 0:
        return None
    q = table["q"].unify_dictionaries()
    values = q.chunk(0).dictionary
    if pc.any(pc.starts_with(values, "#")).as_py() or pc.min(pc.binary_length(values)).as_py() == 0:
        return None
    d = table["d"].combine_chunks()
    run_id = _last_run_id(path)
    if pc.min(pc.binary_length(d)).as_py() == 0 or run_id is None:
        return None
    qcode = np.concatenate([np.asarray(c.indices) for c in q.chunks]).astype(np.int64)
    return RunColumns(values.to_pylist(), qcode, d, table["v"].combine_chunks().to_numpy(), run_id)


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


def trec_order(qcode: np.ndarray, score: np.ndarray, docid: pa.Array) -> np.ndarray:
    """Row order by query, then score descending, then docid descending (bytes). A run already written in
    query and score order (most are) costs one pass instead of a sort."""
    if len(qcode) < 2 or (np.all(qcode[1:] >= qcode[:-1])
                          and np.all((score[1:] <= score[:-1]) | (qcode[1:] != qcode[:-1]))):
        order = np.arange(len(qcode))
    else:
        order = np.lexsort((-score, qcode))
    qs, ss = qcode[order], score[order]
    same = (qs[1:] == qs[:-1]) & (ss[1:] == ss[:-1])
    if same.any():
        tied = np.zeros(len(order), dtype=bool)
        tied[1:] |= same
        tied[:-1] |= same
        idx = np.flatnonzero(tied)
        starts = np.ones(len(idx), dtype=bool)
        starts[1:] = ~same[idx[1:] - 1]
        group = np.cumsum(starts)
        sub = pa.table({"g": group, "d": docid.take(pa.array(order[idx]))})
        perm = pc.sort_indices(sub, sort_keys=[("g", "ascending"), ("d", "descending")]).to_numpy()
        order[idx] = order[idx][perm]
    return order


def _ranks_in_groups(group: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal `group` values (rows of a query are contiguous)."""
    if not len(group):
        return np.zeros(0, dtype=np.int64)
    start = np.ones(len(group), dtype=bool)
    start[1:] = group[1:] != group[:-1]
    first = np.flatnonzero(start)
    return np.arange(len(group)) - np.repeat(first, np.diff(np.append(first, len(group))))


def build_columnar(qrels: Qrels, run: RunColumns, *, rel_level: int = 1, max_docs: int | None = None,
                   judged_only: bool = False, complete: bool = False, bogus_missing: bool = True,
                   float32: bool = False) -> RelMatrix:
    """The same RelMatrix as rels.build for the same inputs, computed on columns."""
    qids = list(qrels.by_query)
    qindex = {q: i for i, q in enumerate(qids)}
    run_to_qrels = np.array([qindex.get(q, -1) for q in run.qids], dtype=np.int64)
    score = run.score.astype(np.float32).astype(np.float64) if float32 else run.score
    # run queries in qrels order (qrels index, ascending = byte order); run-only queries dropped
    rq = run_to_qrels.astype(np.int32)[run.qcode]
    keep = rq >= 0
    everything = bool(keep.all())
    rows_q, rows_s = rq[keep], score[keep]
    rows_c = run.qcode if everything else run.qcode[keep]
    rows_d = run.docid if everything else run.docid.filter(pa.array(keep))
    order = trec_order(rows_c, rows_s, rows_d)  # grouped by the run's own query codes (file order)
    q_sorted = rows_q[order]
    counts = np.bincount(q_sorted, minlength=len(qids))
    rank = _ranks_in_groups(q_sorted)
    # grades: only docids some qrels line names
    all_docs = [d for q in qids for d in qrels.by_query[q]]
    judged_q = np.repeat(np.arange(len(qids)), [len(qrels.by_query[q]) for q in qids])
    grades = np.fromiter((g for q in qids for g in qrels.by_query[q].values()), dtype=np.int64, count=len(all_docs))
    uniq = pa.array(sorted(set(all_docs)))
    qrels_u = pc.index_in(pa.array(all_docs), value_set=uniq).to_numpy()
    pair = judged_q * len(uniq) + qrels_u
    by_pair = np.argsort(pair)
    pair_sorted = pair[by_pair]
    u_all = pc.fill_null(pc.index_in(rows_d, value_set=uniq), -1).to_numpy(zero_copy_only=False)
    hit_rows = np.flatnonzero(u_all[order] >= 0)  # sorted positions whose docid some qrels line names
    u = u_all[order[hit_rows]].astype(np.int64)
    del u_all
    key = q_sorted[hit_rows].astype(np.int64) * len(uniq) + u
    pos = np.clip(np.searchsorted(pair_sorted, key), 0, max(len(pair_sorted) - 1, 0))
    found = (pair_sorted[pos] == key) if len(pair_sorted) else np.zeros(len(key), dtype=bool)
    g = grades[by_pair[pos[found]]]
    values = np.full(len(order), NONPOOL, dtype=np.int64)
    values[hit_rows[found]] = np.where(g < 0, UNJUDGED, g)
    del order, key, pos, found, u
    if judged_only:
        keep_j = values >= 0
        q_sorted, values = q_sorted[keep_j], values[keep_j]
        counts = np.bincount(q_sorted, minlength=len(qids))
        rank = _ranks_in_groups(q_sorted)
    if max_docs is not None and not judged_only:
        within = rank < max_docs
        q_sorted, values, rank = q_sorted[within], values[within], rank[within]
        counts = np.minimum(counts, max(max_docs, 0))
    present = np.isin(np.arange(len(qids)), rows_q)
    bogus = ~present & complete & bogus_missing
    evaluated = present | bogus
    row_of = np.cumsum(evaluated) - 1
    num_ret = np.where(bogus, 0 if judged_only else 1, counts)[evaluated]
    width = int(num_ret.max(initial=0))
    small = len(grades) == 0 or (grades.max() < 2**15 and grades.min() > -2**15)
    rels = np.full((int(evaluated.sum()), width), PAD, dtype=np.int16 if small else np.int64)
    rels[row_of[q_sorted], rank] = values
    if not judged_only:
        rels[row_of[bogus], 0] = NONPOOL
    in_eval = evaluated[judged_q]
    top = int(max(grades[in_eval].max(initial=0), 0))
    levels_all = np.zeros((len(qids), top + 1), dtype=np.int64)
    ok = grades >= 0
    np.add.at(levels_all, (judged_q[ok], grades[ok]), 1)
    return RelMatrix([q for q, e in zip(qids, evaluated, strict=True) if e], rels, num_ret.astype(np.int64),
                     levels_all[evaluated], bogus[evaluated], rel_level)

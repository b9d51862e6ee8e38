"""Judgments encoded as integer arrays and summed into per-query statistics that every coefficient needs.

Every coefficient in the report is a smooth function of sums over units (coincidences for α, confusion
matrices for κ, Gwet's unit terms for AC1/AC2/Fleiss). Summing them per query once lets the bootstrap
form each replicate as a weighted sum of query rows instead of recomputing from judgments.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse

from eval_core.agreement.coefficients import WEIGHTS, gwet_unit_terms, unit_coincidences
from eval_core.io.judgments import duplicate_error

DENSE_LIMIT = 40_000_000  # cells of a per-query statistics block kept dense (float64: 320 MB)


class Encoded(NamedTuple):
    """Judgments as codes: units are (query, fragment) pairs sorted by query; grade -1 = can't judge."""

    unit: np.ndarray
    annotator: np.ndarray
    grade: np.ndarray
    unit_query: np.ndarray
    units: pd.DataFrame
    annotators: list[str]
    queries: list[str]
    k: int


def encode(judgments: pd.DataFrame, scale: tuple[int, int]) -> Encoded:
    """Integer codes for units, annotators and grade indices (grade - low); a repeated (pair, annotator) fails."""
    qcode, queries = pd.factorize(judgments["query_id"], sort=True)
    fcode, _ = pd.factorize(judgments["fragment_id"])
    nf = max(int(fcode.max()) + 1, 1) if len(fcode) else 1
    unit, keys = pd.factorize(qcode.astype(np.int64) * nf + fcode, sort=True)
    acode, annotators = pd.factorize(judgments["annotator"], sort=True)
    key = pd.Index(unit.astype(np.int64) * max(len(annotators), 1) + acode)
    if not key.is_unique:
        duplicate_error(judgments, int(np.flatnonzero(key.duplicated())[0]))
    grade = judgments["grade"].to_numpy(dtype=np.int64, na_value=scale[0] - 1) - scale[0]
    first = np.full(len(keys), -1, dtype=np.int64)
    first[unit[::-1]] = np.arange(len(unit))[::-1]
    units = pd.DataFrame(
        {
            "query_id": judgments["query_id"].take(first).to_numpy(),
            "fragment_id": judgments["fragment_id"].take(first).to_numpy(),
        }
    )
    return Encoded(
        unit=unit.astype(np.int64),
        annotator=acode.astype(np.int64),
        grade=grade,
        unit_query=(np.asarray(keys) // nf).astype(np.int64),
        units=units,
        annotators=[str(a) for a in annotators],
        queries=[str(q) for q in queries],
        k=scale[1] - scale[0] + 1,
    )


def unit_counts(enc: Encoded, keep: np.ndarray | None = None) -> np.ndarray:
    """Units × grades counts of real grades (optionally only judgments where `keep`)."""
    valid = enc.grade >= 0
    if keep is not None:
        valid &= keep
    n_units = len(enc.units)
    flat = np.bincount(enc.unit[valid] * enc.k + enc.grade[valid], minlength=n_units * enc.k)
    return flat.reshape(n_units, enc.k).astype(float)


def unit_stats(counts: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per-unit statistic rows: coincidences (K²), Gwet's pa terms per weighting, n2, π terms (K), n1."""
    k = counts.shape[1]
    terms = gwet_unit_terms(counts)
    blocks = [unit_coincidences(counts).reshape(-1, k * k)]
    names = [f"o{i}" for i in range(k * k)]
    for kind in WEIGHTS:
        blocks.append(terms[f"pa_{kind}"][:, None])
        names.append(f"pa_{kind}")
    blocks += [terms["n2"][:, None], terms["pi"], terms["n1"][:, None]]
    names += ["n2", *(f"pi{i}" for i in range(k)), "n1"]
    return np.hstack(blocks), names


def sum_by_group(rows: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum rows sharing a group code (any order), vectorised over columns."""
    order = np.argsort(group, kind="stable")
    g = group[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]) if len(g) else np.empty(0, dtype=np.int64)
    out = np.zeros((n_groups, rows.shape[1]))
    if len(g):
        out[g[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return out


def row_matrix(rows: np.ndarray, cols: np.ndarray, data: np.ndarray, shape: tuple[int, int]) -> sparse.csr_matrix:
    """CSR matrix from (row, col, value) triples, built from a sort of the rows (no duplicate summing pass)."""
    order = np.argsort(rows.astype(np.min_scalar_type(max(shape[0] - 1, 0))), kind="stable")  # radix when small
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
    return sparse.csr_matrix((data[order], cols[order], indptr), shape=shape)


def judgment_pairs(enc: Encoded) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every two real grades of one unit as (annotator a < b, grade of a, grade of b, unit), vectorised."""
    valid = np.flatnonzero(enc.grade >= 0)
    order = valid[np.argsort(enc.unit[valid], kind="stable")]
    u = enc.unit[order]
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]]) if len(u) else np.empty(0, dtype=np.int64)
    sizes = np.diff(np.r_[starts, len(u)])
    first, second = [], []
    for m in np.unique(sizes[sizes >= 2]):
        block = starts[sizes == m][:, None] + np.arange(m)
        i, j = np.triu_indices(m, 1)
        first.append(order[block[:, i].ravel()])
        second.append(order[block[:, j].ravel()])
    if not first:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty, empty, empty
    x, y = np.concatenate(first), np.concatenate(second)
    swap = enc.annotator[x] > enc.annotator[y]
    x, y = np.where(swap, y, x), np.where(swap, x, y)
    return enc.annotator[x], enc.annotator[y], enc.grade[x], enc.grade[y], enc.unit[x]


class PairConfusions(NamedTuple):
    """Confusion matrices of every annotator pair that shares a unit, in total and per query."""

    a: np.ndarray
    b: np.ndarray
    total: np.ndarray
    per_query: np.ndarray | sparse.csr_matrix


def pair_confusions(enc: Encoded) -> PairConfusions:
    """Cohen-style confusion matrices per annotator pair (rows: a's grade, columns: b's), whole set and per query."""
    a, b, ga, gb, unit = judgment_pairs(enc)
    k, n_queries = enc.k, len(enc.queries)
    pair_code, pair_keys = pd.factorize(a * max(len(enc.annotators), 1) + b, sort=True)
    n_pairs = len(pair_keys)
    cell = (pair_code * k + ga) * k + gb
    total = np.bincount(cell, minlength=n_pairs * k * k).reshape(n_pairs, k, k).astype(float)
    query = enc.unit_query[unit]
    width = n_pairs * k * k
    if n_queries * width <= DENSE_LIMIT:
        flat = np.bincount(query * width + cell, minlength=n_queries * width)
        per_query: np.ndarray | sparse.csr_matrix = flat.reshape(n_queries, width).astype(float)
    else:
        per_query = sparse.csr_matrix((np.ones(len(cell)), (query, cell)), shape=(n_queries, width))
    n_annot = max(len(enc.annotators), 1)
    keys = np.asarray(pair_keys, dtype=np.int64)
    return PairConfusions(a=keys // n_annot, b=keys % n_annot, total=total, per_query=per_query)

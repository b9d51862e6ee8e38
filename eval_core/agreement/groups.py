"""α within groups of judgments (category, guideline version, query), with bootstrap CIs per group."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse

from eval_core.agreement.bootstrap import percentile_ci
from eval_core.agreement.coefficients import (
    UNDEFINED_VARIATION,
    alpha_from_coincidence,
    coef,
    multi_status,
    unit_coincidences,
)
from eval_core.agreement.data import DENSE_LIMIT, Encoded, sum_by_group
from eval_core.agreement.types import GroupAlpha


class GroupStats(NamedTuple):
    """Coincidences of each group of judgments, with the per-(group, unit) rows they were summed from."""

    names: list[str]
    o: np.ndarray
    n_annotators: np.ndarray
    n_pairable: np.ndarray
    n_units: np.ndarray
    rows: np.ndarray
    row_group: np.ndarray
    row_unit: np.ndarray


def group_stats(enc: Encoded, group: np.ndarray, names: list[str]) -> GroupStats:
    """Sufficient statistics of α within each group of judgments (category, guideline version, query…)."""
    valid = enc.grade >= 0
    n_units, n_groups, k = len(enc.units), len(names), enc.k
    g, u, gr, an = group[valid].astype(np.int64), enc.unit[valid], enc.grade[valid], enc.annotator[valid]
    key, key_values = pd.factorize(g * n_units + u)
    key_values = np.asarray(key_values, dtype=np.int64)
    key_group, key_unit = key_values // n_units, key_values % n_units
    counts = np.bincount(key * k + gr, minlength=len(key_values) * k).reshape(-1, k).astype(float)
    rows = unit_coincidences(counts).reshape(-1, k * k)
    o = sum_by_group(rows, key_group, n_groups).reshape(-1, k, k)
    width = max(len(enc.annotators), 1)
    pairs = np.unique(g * width + an)
    return GroupStats(
        names=names,
        o=o,
        n_annotators=np.bincount(pairs // width, minlength=n_groups),
        n_pairable=np.bincount(key_group[counts.sum(axis=1) >= 2], minlength=n_groups),
        n_units=np.bincount(key_group, minlength=n_groups),
        rows=rows,
        row_group=key_group,
        row_unit=key_unit,
    )


def group_query_block(stats: GroupStats, enc: Encoded) -> np.ndarray | sparse.csr_matrix:
    """Per-query coincidences of every group (queries × groups·K²), for the bootstrap of group α."""
    kk = stats.rows.shape[1]
    keep = stats.rows.any(axis=1)
    rows, groups, units = stats.rows[keep], stats.row_group[keep], stats.row_unit[keep]
    cells = (groups[:, None] * kk + np.arange(kk)).ravel()
    queries = np.repeat(enc.unit_query[units], kk)
    shape = (len(enc.queries), len(stats.names) * kk)
    if shape[0] * shape[1] <= DENSE_LIMIT:
        flat = np.bincount(queries * shape[1] + cells, weights=rows.ravel(), minlength=shape[0] * shape[1])
        return flat.reshape(shape)
    block = sparse.coo_matrix((rows.ravel(), (queries, cells)), shape=shape).tocsr()
    block.sum_duplicates()
    return block


def group_alphas(
    stats: GroupStats, level: str, replicates: np.ndarray | None = None, confidence: float = 0.95
) -> list[GroupAlpha]:
    """α per group with a CI from replicate coincidences (R, G·K²) when given; lowest first, undefined last."""
    k = stats.o.shape[-1]
    values = alpha_from_coincidence(stats.o, level)
    reps = None
    if replicates is not None:
        reps = alpha_from_coincidence(replicates.reshape(len(replicates), -1, k, k), level)
    rows = []
    for i, name in enumerate(stats.names):
        status = multi_status(int(stats.n_annotators[i]), int(stats.n_pairable[i]))
        if status == "ok" and not np.isfinite(values[i]):
            status = UNDEFINED_VARIATION
        ci = percentile_ci(reps[:, i], confidence) if reps is not None and status == "ok" else None
        rows.append(
            GroupAlpha(
                name,
                int(stats.n_units[i]),
                int(stats.n_pairable[i]),
                coef(values[i] if status == "ok" else None, status, ci),
            )
        )
    return sorted(rows, key=lambda r: (r.alpha.value is None, r.alpha.value or 0.0, r.group))

"""Query-clustered bootstrap by multinomial reweighting of per-query sums (one matrix product per chunk).

Resampling Q queries with replacement is the same as weighting each query's row by how often it was drawn
(a Multinomial(Q, 1/Q) count). A replicate's statistics are then W @ S for the per-query statistics S, so
every coefficient's replicate comes from a small matrix, never from the judgments again.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy import sparse
from threadpoolctl import threadpool_limits

from eval_core.progress import bar as progress_bar

CHUNK = 64  # replicates drawn per matrix product; fixed so results do not depend on the machine


def cluster_weights(n_clusters: int, replicates: int, seed: int) -> Iterator[np.ndarray]:
    """Chunks of (replicates × clusters) draw counts: each row resamples n_clusters clusters with replacement."""
    rng = np.random.default_rng(seed)
    for start in range(0, replicates, CHUNK):
        rows = min(CHUNK, replicates - start)
        draws = rng.integers(0, n_clusters, size=(rows, n_clusters))
        flat = draws + (np.arange(rows) * n_clusters)[:, None]
        yield np.bincount(flat.ravel(), minlength=rows * n_clusters).reshape(rows, n_clusters).astype(float)


def bootstrap_sums(
    blocks: list[np.ndarray | sparse.csr_matrix], replicates: int, seed: int, progress: bool = False
) -> list[np.ndarray]:
    """Replicate column sums (replicates × columns) of each per-query block, all from the same resamples."""
    n_clusters = blocks[0].shape[0]
    out = [np.empty((replicates, block.shape[1])) for block in blocks]
    chunks = cluster_weights(n_clusters, replicates, seed)
    bar = progress_bar(total=replicates, desc="bootstrap", unit="rep", show=progress, leave=False)
    done = 0
    with threadpool_limits(1):  # a single BLAS thread: on a shared, loaded machine threads only spin
        for weights in chunks:
            rows = slice(done, done + len(weights))
            for block, dest in zip(blocks, out, strict=True):
                if sparse.issparse(block):
                    dest[rows] = np.asarray((block.T @ weights.T).T)
                else:
                    dest[rows] = weights @ block
            done += len(weights)
            bar.update(len(weights))
    bar.close()
    return out


def percentile_ci(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval over defined replicates; None when half or more replicates are undefined."""
    finite = values[np.isfinite(values)]
    if len(values) == 0 or len(finite) * 2 < len(values) or len(finite) < 2:
        return None
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(finite, [tail, 1.0 - tail])
    return float(lo), float(hi)

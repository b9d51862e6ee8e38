"""Crowds with a known truth, for trying consensus rules and for the benchmark: good, lenient and harsh
annotators, spammers and hard pairs, drawn reproducibly from a seed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

KINDS = ("good", "lenient", "harsh", "spammer")
ACCURACY = 0.85  # a good annotator's chance of the true grade on an ordinary pair (off by one otherwise)
HARD_ACCURACY = 0.5  # … on a hard pair
SHIFT = 0.6  # a lenient (harsh) annotator's chance of grading one above (below) the truth


def simulate_crowd(
    n_pairs: int,
    kinds: Sequence[str],
    per_pair: float = 3,
    queries: int | None = None,
    hard: float = 0.1,
    prior: Sequence[float] = (0.4, 0.3, 0.2, 0.1),
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(judgments: query_id, fragment_id, annotator, grade; truth: query_id, fragment_id, grade, hard) on the
    scale 0…len(prior)−1. `kinds` gives each annotator's kind (KINDS), named `kind-NNN`; each pair is graded by
    `per_pair` distinct annotators (a fraction: that many on average, e.g. 3.33 gives a third of the pairs a
    fourth); pairs spread evenly over `queries` queries (n_pairs // 10 by default)."""
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"annotator kinds must be among {', '.join(KINDS)}, got {', '.join(unknown)}")
    n = len(kinds)
    most = int(np.ceil(per_pair))
    if not 1 <= per_pair <= n:
        raise ValueError(f"per_pair must be between 1 and the {n} annotators, got {per_pair}")
    rng = np.random.default_rng(seed)
    top = len(prior) - 1
    truth = rng.choice(len(prior), size=n_pairs, p=np.asarray(prior) / np.sum(prior))
    is_hard = rng.random(n_pairs) < hard
    base = rng.integers(n, size=n_pairs)
    stride = rng.integers(1, max(2, -(-n // most)), size=n_pairs) if most > 1 else np.zeros(n_pairs, dtype=np.int64)
    who_all = (base[:, None] + np.arange(most)[None, :] * stride[:, None]) % n
    count = np.floor(per_pair).astype(np.int64) + (rng.random(n_pairs) < per_pair - np.floor(per_pair))
    keep = np.arange(most)[None, :] < count[:, None]
    pair = np.broadcast_to(np.arange(n_pairs)[:, None], keep.shape)[keep]
    who = who_all[keep]
    kind = np.asarray([KINDS.index(k) for k in kinds])[who]
    true = truth[pair]
    accuracy = np.where(is_hard[pair], HARD_ACCURACY, ACCURACY)
    off = np.where(rng.random(len(pair)) < 0.5, -1, 1)
    grade = np.where(rng.random(len(pair)) < accuracy, true, np.clip(true + off, 0, top))
    shifted = rng.random(len(pair)) < SHIFT
    grade = np.where((kind == 1) & shifted, np.minimum(true + 1, top), grade)
    grade = np.where((kind == 2) & shifted, np.maximum(true - 1, 0), grade)
    grade = np.where(kind == 3, rng.integers(0, top + 1, size=len(pair)), grade)
    n_queries = queries or max(1, n_pairs // 10)
    query = np.arange(n_pairs) * n_queries // n_pairs
    names = np.asarray([f"{k}-{i:03d}" for i, k in enumerate(kinds)])
    qid = np.char.add("q", np.char.zfill(query.astype(str), 6))
    fid = np.char.add("f", np.char.zfill(np.arange(n_pairs).astype(str), 7))
    judgments = pd.DataFrame({"query_id": qid[pair], "fragment_id": fid[pair], "annotator": names[who], "grade": grade})
    return judgments, pd.DataFrame({"query_id": qid, "fragment_id": fid, "grade": truth, "hard": is_hard})

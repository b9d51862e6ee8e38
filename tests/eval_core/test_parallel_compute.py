"""`qrelkit eval`'s metrics computed on several threads (a hit matrix past kernels.PARALLEL_CELLS) are those of
one thread, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from eval_core.ranking.evaluation import evaluate
from eval_core.ranking.kernels import PARALLEL_CELLS

QUERIES, DOCS, JUDGED = 1500, 120, 60  # every document is retrieved


def _files(tmp_path: Path) -> tuple[Path, Path]:
    """Seeded qrels and a run with tied scores, negative grades and queries missing on either side, big enough
    that its hit matrix (queries × judged rows) passes PARALLEL_CELLS."""
    rng = np.random.default_rng(7)
    qrels, run = [], []
    for q in range(QUERIES):
        if q % 50:
            for d in rng.choice(DOCS, size=JUDGED, replace=False).tolist():
                qrels.append(f"q{q} 0 d{d} {rng.choice([-1, 0, 1, 2, 3])}")
        if q % 70:
            scores = np.sort(rng.choice(np.arange(0.0, 30.0, 0.5), size=DOCS))[::-1]
            for rank, (d, s) in enumerate(zip(rng.permutation(DOCS).tolist(), scores.tolist(), strict=True)):
                run.append(f"q{q} Q0 d{d} {rank + 1} {s} seeded")
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    (tmp_path / "run").write_text("\n".join(run) + "\n")
    return tmp_path / "qrels", tmp_path / "run"


def test_eval_metrics_on_two_threads(tmp_path: Path) -> None:
    qrels_path, run_path = _files(tmp_path)
    one = evaluate(qrels_path, run_path, workers=1)
    assert QUERIES * JUDGED >= PARALLEL_CELLS  # the hit matrix: a row per query, a cell per judged document
    two = evaluate(qrels_path, run_path, workers=2)
    assert list(one.mean) == list(two.mean)
    for name in one.mean:
        assert one.per_query[name].to_numpy().tobytes() == two.per_query[name].to_numpy().tobytes()

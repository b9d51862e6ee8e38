"""The columnar fast path (single-space files through pyarrow) prints exactly what the line-by-line reader does:
the same run written with single spaces and with tabs (which only the line reader takes) gives identical
`-q -c -m all_trec` output, on seeded data with tied scores, unjudged documents, -2 grades and missing queries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from annotator.cli import main
from eval_core.ranking.trec_eval.columnar import read_run_columns


def _write(tmp_path: Path, seed: int) -> tuple[Path, Path, Path]:
    rng = np.random.default_rng(seed)
    qrels, spaced, tabbed = [], [], []
    for q in range(12):
        docs = rng.choice(60, size=int(rng.integers(1, 40)), replace=False)
        if q % 5:
            for d in rng.choice(60, size=15, replace=False):
                qrels.append(f"q{q} 0 d{d} {rng.choice([-1, 0, 0, 1, 2, 3])}")
        if q % 4 != 1:
            for rank, d in enumerate(docs):
                score = float(rng.choice([0.5, 1.0, 1.5, 2.0, 3.25]))
                spaced.append(f"q{q} Q0 d{d} {rank} {score} run{seed}")
                tabbed.append(f"q{q}\tQ0\td{d}\t{rank}\t{score}\trun{seed}")
    paths = tmp_path / "qrels", tmp_path / "spaced.run", tmp_path / "tabbed.run"
    for path, lines in zip(paths, (qrels, spaced, tabbed), strict=True):
        path.write_text("\n".join(lines) + "\n")
    return paths


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("extra", [[], ["-M5"], ["-J"], ["-l2"], ["--trec-eval-version", "9"]])
def test_fast_path_equals_line_reader(tmp_path: Path, capsys: pytest.CaptureFixture, seed: int,
                                      extra: list[str]) -> None:
    qrels, spaced, tabbed = _write(tmp_path, seed)
    assert read_run_columns(spaced) is not None and read_run_columns(tabbed) is None
    outs = []
    for run in (spaced, tabbed):
        assert main(["trec_eval", "-q", "-c", "-m", "all_trec", *extra, str(qrels), str(run)]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    assert "num_q                 \tall\t" in outs[0]

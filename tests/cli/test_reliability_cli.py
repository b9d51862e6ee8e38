"""`qrelkit reliability` on files: the hand-built pool-bias case through the CLI, JSON and table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from statsmodels.stats.power import TTestPower

from annotator.cli import main

QRELS = "q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq1 0 d 1\nq2 0 e 1\nq2 0 f 0\n"
RUN_A = "q1 Q0 a 1 3 A\nq1 Q0 b 2 2 A\nq1 Q0 c 3 1 A\nq2 Q0 e 1 2 A\nq2 Q0 f 2 1 A\n"
RUN_B = "q1 Q0 a 1 3 B\nq1 Q0 d 2 2 B\nq1 Q0 x 3 1 B\nq2 Q0 f 1 2 B\nq2 Q0 g 2 1 B\n"


def _files(tmp_path: Path) -> list[str]:
    for name, text in (("golden.qrels", QRELS), ("A.run", RUN_A), ("B.run", RUN_B)):
        (tmp_path / name).write_text(text)
    return [str(tmp_path / n) for n in ("golden.qrels", "A.run", "B.run")]


def test_json_on_the_hand_built_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The case of tests/eval_core/test_reliability.py's docstring, depth-3 pool: P@3 drops A 1/3, B 1/6; judged@3 A 1,
    B 7/12. Two runs: the variance is that of the per-query P@3 differences, A − B = (0, 1/3), i.e. 1/18."""
    code = main(
        [
            "reliability",
            *_files(tmp_path),
            "--metric",
            "P@3",
            "--pool-depth",
            "3",
            "--judged-k",
            "3",
            "--resamples",
            "100",
            "--format",
            "json",
            "--delta",
            "0.1",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    (m,) = out["metrics"]
    assert {b["run"]: round(b["drop"], 9) for b in m["pool_bias"]} == {
        "A.run": round(1 / 3, 9),
        "B.run": round(1 / 6, 9),
    }
    assert m["judged"] == pytest.approx({"A.run": 1.0, "B.run": 7 / 12})
    assert m["variance"] == pytest.approx(1 / 18)
    assert m["variance_source"] == "variance of the per-query differences of the two runs"
    expected = TTestPower().solve_power(effect_size=0.1 / math.sqrt(1 / 18), alpha=0.05, power=0.8)
    assert m["topic_set_size"] == pytest.approx(expected, rel=1e-6)
    assert m["sentence"].startswith(f"2 queries detect {m['detectable']:.3f}".rstrip("0"))
    assert f"0.1 needs about {math.ceil(expected)}." in m["sentence"]
    assert out["settings"]["correction"] == "tukey-hsd" and out["source"] == "golden.qrels"


def test_table_names_the_variance_and_correction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reliability", *_files(tmp_path), "--metric", "P@3", "--correction", "holm"]) == 0
    out = capsys.readouterr().out
    assert "Reliability of golden.qrels" in out
    assert "(variance of the per-query differences of the two runs)" in out
    assert "discriminative power (paired t-tests, Holm-adjusted): 0 of 1 pairs" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "give either QRELS RUN"),
        (["--project", "demo"], "give either QRELS RUN"),
    ],
)
def test_files_or_project(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    files = _files(tmp_path) if extra else []
    assert main(["reliability", *files, *extra]) == 2
    assert message in capsys.readouterr().err


def test_a_qrels_alone_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reliability", _files(tmp_path)[0]]) == 2
    assert "at least one run file" in capsys.readouterr().err

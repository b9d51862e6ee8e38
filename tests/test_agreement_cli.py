"""`qrelkit agreement`: the issue-3 JSON shape, a readable table, and exit 2 with path:line on bad input."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from annotator.cli import agreement as cli_agreement
from eval_core.errors import InputError


def run(argv: list[str]) -> tuple[int, str, str]:
    """Run our commands the way annotator.cli.main does (InputError → 2), capturing stdout and stderr."""
    parser = argparse.ArgumentParser(prog="qrelkit")
    cli_agreement.register(parser.add_subparsers())
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        args = parser.parse_args(argv)
        try:
            code = args.func(args)
        except InputError as exc:
            print(f"qrelkit: error: {exc}", file=err)
            code = 2
    return code, out.getvalue(), err.getvalue()


HAYES = "1 1 2 . 2|1 1 0 1 .|2 3 3 3 .|. 0 0 . 0|0 0 0 . 0|0 0 0 . 0|1 0 2 . 1|1 . 2 0 .|2 2 2 . 2|2 1 1 1 ."


@pytest.fixture()
def judgments(tmp_path: Path) -> Path:
    """First 10 units of Hayes & Krippendorff (2007) Table 1, two queries, one note."""
    path = tmp_path / "j.jsonl"
    lines = []
    for u, unit in enumerate(HAYES.split("|")):
        for o, v in enumerate(unit.split()):
            lines.append({"query_id": f"q{u % 2}", "fragment_id": f"u{u}", "annotator": f"obs{o + 1}",
                          "grade": None if v == "." else int(v), "category": "news", "note": "sure" if u == 6 else ""})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_json_output(judgments: Path) -> None:
    code, out, _ = run(["agreement", str(judgments), "--format", "json", "--bootstrap", "100", "--seed", "3",
                        "--by", "category"])
    assert code == 0
    data = json.loads(out)
    mat = np.array([[np.nan if v == "." else float(v) for v in unit.split()] for unit in HAYES.split("|")]).T
    expected = krippendorff.alpha(mat, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert data["alpha"]["ordinal"]["value"] == pytest.approx(expected, abs=1e-9)
    assert data["n_units"] == 10 and data["n_annotators"] == 5
    assert data["alpha"]["ordinal"]["ci"] is not None
    assert data["diagnostics"]["by"]["groups"][0]["group"] == "news"
    assert data["assessment"]["threshold"] == 0.6
    again = json.loads(run(["agreement", str(judgments), "--format", "json", "--bootstrap", "100", "--seed", "3",
                            "--by", "category"])[1])
    assert again == data


def test_table_output_shows_paradox_columns(judgments: Path) -> None:
    code, out, _ = run(["agreement", str(judgments), "--bootstrap", "50", "--level", "interval",
                        "--threshold", "0.9"])
    assert code == 0
    for needle in ("grade prevalence", "raw agreement", "Krippendorff α interval *", "Gwet AC1", "Gwet AC2 quadratic",
                   "Fleiss κ", "α at cut ≥ 2", "Cohen's κ per annotator pair", "most disputed pairs", "verdict"):
        assert needle in out


def test_bad_input_exits_2_with_location(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d1,b,7\n", encoding="utf-8")
    code, _, err = run(["agreement", str(path)])
    assert code == 2
    assert f"{path}:3: grade 7 is outside the scale 0-3" in err
    code, _, err = run(["agreement", str(path), "--scale", "0-9", "--by", "guideline"])
    assert code == 2 and "no guideline column" in err


def test_registered_in_qrelkit_main(judgments: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`qrelkit agreement` / `qrelkit consensus` are reachable from the real entry point."""
    from annotator.cli import main

    assert main(["agreement", str(judgments), "--bootstrap", "0", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_units"] == 10
    out = judgments.parent / "q.trec"
    assert main(["consensus", str(judgments), "--rule", "min", "-o", str(out)]) == 0
    assert out.read_text().splitlines()[0] == "q0 0 u0 1"

"""`qrelkit agreement`: the issue-3 JSON shape, a readable table, and exit 2 with path:line on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from tests.helpers import run

HAYES = "1 1 2 . 2|1 1 0 1 .|2 3 3 3 .|. 0 0 . 0|0 0 0 . 0|0 0 0 . 0|1 0 2 . 1|1 . 2 0 .|2 2 2 . 2|2 1 1 1 ."


@pytest.fixture()
def judgments(tmp_path: Path) -> Path:
    """First 10 units of Hayes & Krippendorff (2007) Table 1, five queries (the fewest given a CI), one note."""
    path = tmp_path / "j.jsonl"
    lines = []
    for u, unit in enumerate(HAYES.split("|")):
        for o, v in enumerate(unit.split()):
            lines.append(
                {
                    "query_id": f"q{u % 5}",
                    "fragment_id": f"u{u}",
                    "annotator": f"obs{o + 1}",
                    "grade": None if v == "." else int(v),
                    "category": "news",
                    "note": "sure" if u == 6 else "",
                }
            )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_json_output(judgments: Path) -> None:
    code, out, _ = run(
        ["agreement", str(judgments), "--format", "json", "--bootstrap", "100", "--seed", "3", "--by", "category"]
    )
    assert code == 0
    data = json.loads(out)
    mat = np.array([[np.nan if v == "." else float(v) for v in unit.split()] for unit in HAYES.split("|")]).T
    expected = krippendorff.alpha(mat, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert data["alpha"]["ordinal"]["value"] == pytest.approx(expected, abs=1e-9)
    assert data["n_units"] == 10 and data["n_annotators"] == 5
    assert data["alpha"]["ordinal"]["ci"] is not None
    assert data["diagnostics"]["by"]["groups"][0]["group"] == "news"
    assert data["assessment"]["threshold"] == 0.6
    again = json.loads(
        run(["agreement", str(judgments), "--format", "json", "--bootstrap", "100", "--seed", "3", "--by", "category"])[
            1
        ]
    )
    assert again == data


def test_a_handful_of_queries_gets_no_interval_but_says_why(tmp_path: Path) -> None:
    # The same 10 units over 2 queries: a query-clustered bootstrap has only 3 distinct resamples of 2 clusters,
    # so no CI is printed; the value stays, and the report says why there is no interval.
    path = tmp_path / "two.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "query_id": f"q{u % 2}",
                    "fragment_id": f"u{u}",
                    "annotator": f"obs{o}",
                    "grade": None if v == "." else int(v),
                }
            )
            + "\n"
            for u, unit in enumerate(HAYES.split("|"))
            for o, v in enumerate(unit.split())
        )
    )
    data = json.loads(run(["agreement", str(path), "--format", "json", "--bootstrap", "100"])[1])
    assert data["alpha"]["ordinal"]["value"] is not None and data["alpha"]["ordinal"]["ci"] is None
    assert data["bootstrap"]["status"].startswith("no CIs: 2 queries, too few to resample")
    table = run(["agreement", str(path), "--bootstrap", "100"])[1]
    assert "CIs: none (no CIs: 2 queries, too few to resample" in table


def test_table_output_shows_paradox_columns(judgments: Path) -> None:
    code, out, _ = run(["agreement", str(judgments), "--bootstrap", "50", "--level", "interval", "--threshold", "0.9"])
    assert code == 0
    for needle in (
        "grade prevalence",
        "Raw agreement",
        "Krippendorff α (interval) *",
        "Gwet AC1",
        "Gwet AC2 (quadratic)",
        "Fleiss κ",
        "α at boundary 1|2",
        "Cohen's κ per annotator pair",
        "most disputed pairs",
        "verdict",
    ):
        assert needle in out


def test_bad_input_exits_2_with_location(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d1,b,7\n", encoding="utf-8")
    code, _, err = run(["agreement", str(path)])
    assert code == 2
    assert f"{path}:3: grade 7 is outside the scale 0-3" in err
    assert "grades on another scale need --scale LOW-HIGH" in err  # a 1–4 project's export, read at 0-3
    code, _, err = run(["consensus", str(path), "-o", str(tmp_path / "q.trec")])
    assert code == 2 and "need --scale LOW-HIGH" in err
    code, _, err = run(["agreement", str(path), "--scale", "1-5"])
    assert code == 2 and "outside the scale 1-5" in err and "need --scale" not in err  # a scale was given
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


def test_cross_check_reports_reference_libraries_agree(judgments: Path) -> None:
    """--cross-check: α by krippendorff.alpha (3 levels) and κ by scikit-learn for all 10 pairs, within 1e-9."""
    code, out, _ = run(["agreement", str(judgments), "--bootstrap", "0", "--cross-check"])
    assert code == 0
    section = out.split("cross-check against the reference libraries", 1)[1]
    for level in ("ordinal", "nominal", "interval"):
        assert f"Krippendorff's α ({level})" in section
    lines = [line for line in section.splitlines() if "sklearn.metrics.cohen_kappa_score" in line]
    assert len(lines) == 3 and all(" 10 compared" in line for line in lines)
    assert "qrelkit and the reference libraries agree (tolerance 1e-9)" in section
    code, out, _ = run(["agreement", str(judgments), "--bootstrap", "0", "--cross-check", "--format", "json"])
    checks = json.loads(out)["cross_check"]
    assert code == 0 and len(checks) == 6
    assert all(c["agrees"] and c["largest_difference"] <= 1e-9 and c["mismatched"] == 0 for c in checks)


def test_cross_check_on_a_one_to_five_scale(tmp_path: Path) -> None:
    """Grades 1–4 of a 1–5 scale: the references get the whole scale (value_domain, labels) and still agree."""
    rng = np.random.default_rng(2)
    truth = rng.integers(1, 5, 60)
    rows = [
        {
            "query_id": f"q{u % 6}",
            "fragment_id": f"f{u}",
            "annotator": f"a{a}",
            "grade": int(np.clip(truth[u] + rng.integers(-1, 2), 1, 4)),
        }
        for u in range(60)
        for a in range(3)
    ]
    path = tmp_path / "five.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, out, _ = run(
        ["agreement", str(path), "--scale", "1-5", "--bootstrap", "0", "--cross-check", "--format", "json"]
    )
    data = json.loads(out)
    assert code == 0 and all(c["agrees"] for c in data["cross_check"])
    assert set(data["cuts"]) == {"2", "3", "4", "5"}
    assert len(data["kappa"][0]["confusion"]) == 5


def test_cross_check_flags_a_difference(judgments: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report whose ordinal α is off by 0.01 is caught: MISMATCH, the difference printed, exit 1."""
    import dataclasses

    import eval_core.agreement.report as agreement
    from eval_core.agreement.types import Coefficient

    real = agreement.agreement_report

    def tampered(*args, **kwargs):
        report = real(*args, **kwargs)
        alpha = dict(report.alpha, ordinal=Coefficient(report.alpha["ordinal"].value + 0.01))
        return dataclasses.replace(report, alpha=alpha)

    monkeypatch.setattr(agreement, "agreement_report", tampered)
    code, out, _ = run(["agreement", str(judgments), "--bootstrap", "0", "--cross-check"])
    assert code == 1
    line = next(line for line in out.splitlines() if "Krippendorff's α (ordinal)" in line)
    assert "max |diff| 1.0e-02" in line and "MISMATCH" in line
    assert "qrelkit and the reference libraries DISAGREE" in out


def test_cross_check_without_the_reference_extra(judgments: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without krippendorff installed the command says which extra to install and exits 2."""
    import sys

    monkeypatch.setitem(sys.modules, "krippendorff", None)
    code, out, err = run(["agreement", str(judgments), "--cross-check"])
    assert code == 2 and out == ""
    assert "pip install qrelkit[reference]" in err

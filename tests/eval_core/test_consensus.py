"""Consensus rules against hand-worked pairs and an independent per-pair reference implementation."""

from __future__ import annotations

import json
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eval_core.consensus import consensus


def frame(grades: dict[str, list]) -> pd.DataFrame:
    """One pair per key: fragment id → grades by annotators a0, a1, … (None = can't judge)."""
    rows = [("q1", frag, f"a{i}", g) for frag, gs in grades.items() for i, g in enumerate(gs)]
    out = pd.DataFrame(rows, columns=["query_id", "fragment_id", "annotator", "grade"])
    out["grade"] = out["grade"].astype("Int64")
    return out


PAIRS = {
    "tie": [1, 2],
    "odd": [0, 3, 1],
    "two_two": [0, 0, 2, 2],
    "cant": [3, None, None],
    "none": [None, None],
    "half": [1, 2, 2, 1, 0, 3],
}


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("median", {"tie": 1, "odd": 1, "two_two": 0, "cant": 3, "half": 1}),  # lower median on ties
        ("majority", {"tie": 1, "odd": 0, "two_two": 0, "cant": 3, "half": 1}),  # ties go to the lower grade
        ("mean", {"tie": 2, "odd": 1, "two_two": 1, "cant": 3, "half": 2}),  # 1.5→2, 4/3→1, 1→1, 9/6=1.5→2
        ("min", {"tie": 1, "odd": 0, "two_two": 0, "cant": 3, "half": 0}),
    ],
)
def test_rules_by_hand(rule: str, expected: dict[str, int]) -> None:
    out = consensus(frame(PAIRS), rule=rule).set_index("fragment_id")
    assert out["grade"].to_dict() == expected  # "none" (only can't judge) is left out
    assert out.loc["cant", "n_grades"] == 1
    assert out.loc["cant", "grades"] == {"a0": 3, "a1": None, "a2": None}
    assert (out["rule"] == rule).all() and not out["adjudicated"].any()


def test_adjudication_wins_and_min_grades() -> None:
    adj = pd.DataFrame({"query_id": ["q1", "q1"], "fragment_id": ["odd", "none"], "grade": [3, 2]})
    out = consensus(frame(PAIRS), adjudications=adj, min_grades=3).set_index("fragment_id")
    assert sorted(out.index) == ["half", "none", "odd", "two_two"]
    assert out.loc["odd", "grade"] == 3 and out.loc["odd", "adjudicated"]
    assert out.loc["none", "grade"] == 2 and out.loc["none", "n_grades"] == 0
    assert not out.loc["half", "adjudicated"]


def test_bad_adjudications() -> None:
    with pytest.raises(ValueError, match="not an integer in 0-3"):
        consensus(frame(PAIRS), adjudications=pd.DataFrame({"query_id": ["q1"], "fragment_id": ["odd"], "grade": [7]}))
    with pytest.raises(ValueError, match="more than one adjudication"):
        consensus(
            frame(PAIRS),
            adjudications=pd.DataFrame({"query_id": ["q1", "q1"], "fragment_id": ["odd"] * 2, "grade": [1, 2]}),
        )
    with pytest.raises(ValueError, match="must be integers"):
        consensus(
            frame(PAIRS), adjudications=pd.DataFrame({"query_id": ["q1"], "fragment_id": ["odd"], "grade": [1.5]})
        )
    with pytest.raises(ValueError, match="rule"):
        consensus(frame(PAIRS), rule="max")


def reference(grades: list[int], rule: str) -> int:
    """Per-pair reference, written independently of the vectorised code."""
    ordered = sorted(grades)
    if rule == "median":
        return ordered[(len(ordered) - 1) // 2]
    if rule == "majority":
        counts = Counter(ordered)
        best = max(counts.values())
        return min(g for g, c in counts.items() if c == best)
    if rule == "mean":
        return math.floor(Fraction(sum(ordered), len(ordered)) + Fraction(1, 2))
    return ordered[0]


@pytest.mark.parametrize("rule", ["median", "majority", "mean", "min"])
def test_matches_reference_on_random_judgments(rule: str) -> None:
    rng = np.random.default_rng(42)
    rows = []
    for p in range(400):
        for a in range(rng.integers(1, 7)):
            rows.append((f"q{p % 37}", f"d{p}", f"a{a}", None if rng.random() < 0.15 else int(rng.integers(0, 4))))
    data = pd.DataFrame(rows, columns=["query_id", "fragment_id", "annotator", "grade"]).sample(frac=1, random_state=1)
    data["grade"] = data["grade"].astype("Int64")
    out = consensus(data, rule=rule, min_grades=2).set_index(["query_id", "fragment_id"])
    expected = {}
    for key, group in data.groupby(["query_id", "fragment_id"]):
        real = [int(g) for g in group["grade"].dropna()]
        if len(real) >= 2:
            expected[key] = reference(real, rule)
    assert out["grade"].to_dict() == expected
    assert list(out.index) == sorted(out.index)


def test_cli_writes_trec_beir_jsonl(tmp_path: Path) -> None:
    from tests.helpers import run

    src = tmp_path / "j.jsonl"
    src.write_text(
        "".join(
            json.dumps({"query_id": "q1", "fragment_id": f, "annotator": a, "grade": g}) + "\n"
            for f, a, g in [("d1", "x", 1), ("d1", "y", 2), ("d2", "x", 3), ("d2", "y", None)]
        ),
        encoding="utf-8",
    )
    adj = tmp_path / "adj.csv"
    adj.write_text("query_id,fragment_id,grade\nq1,d2,0\n", encoding="utf-8")
    assert run(["consensus", str(src), "--rule", "mean", "-o", str(tmp_path / "q.trec")])[0] == 0
    assert (tmp_path / "q.trec").read_text() == "q1 0 d1 2\nq1 0 d2 3\n"
    assert (
        run(["consensus", str(src), "--adjudications", str(adj), "-o", str(tmp_path / "q.tsv"), "--format", "beir"])[0]
        == 0
    )
    assert (tmp_path / "q.tsv").read_text() == "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n"
    assert (
        run(["consensus", str(src), "-o", str(tmp_path / "q.jsonl"), "--format", "jsonl", "--min-grades", "2"])[0] == 0
    )
    lines = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert lines == [
        {
            "query_id": "q1",
            "fragment_id": "d1",
            "grade": 1,
            "n_grades": 2,
            "grades": {"x": 1, "y": 2},
            "rule": "median",
            "adjudicated": False,
        }
    ]
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,fragment_id,grade\nq1,d2,\n", encoding="utf-8")
    code, _, err = run(["consensus", str(src), "--adjudications", str(bad), "-o", str(tmp_path / "x.trec")])
    assert code == 2 and f"{bad}:2: an adjudication needs a grade" in err
    assert not (tmp_path / "x.trec").exists()

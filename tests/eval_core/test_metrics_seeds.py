"""The seeds' worked numbers, asserted as published (rounded as the articles round them).

Seed 000 (Spanish, "Métricas de recuperación: recall@k, MRR y nDCG"): R = {d3:3, d7:2, d12:2, d20:1},
ranking d5 d7 d11 d3 d2 d20 d9 d14 d1 d6 ⇒ recall@3/5/10 = 0.25/0.50/0.75, precision@3/5/10 =
0.33/0.40/0.30, RR = 0.50, nDCG@10 = 0.554 with binary relevance, 0.486 with gain 2^rel − 1.
Seed 002 (Vietnamese, precision ceiling): query A1, rel = {d023:2, d028:1}, R = 2 ⇒ Precision@5 ≤ 2/5 = 0.40.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_core import evaluate
from tests.conftest import ROOT

EXAMPLES = ROOT / "examples"
DATA = ROOT / "tests" / "data"  # the articles' worked examples, copied verbatim (the passages we assert)
RANKING = ["d5", "d7", "d11", "d3", "d2", "d20", "d9", "d14", "d1", "d6"]
GRADED = {"q1": {"d3": 3, "d7": 2, "d12": 2, "d20": 1}}
BINARY = {"q1": {"d3": 1, "d7": 1, "d12": 1, "d20": 1}}


def test_seed_texts_hold_the_numbers_we_assert() -> None:
    """Guard against the seeds changing under us: the published figures are in the article text."""
    text = (DATA / "retrieval_metrics_worked_example_es.txt").read_text(encoding="utf-8")
    for figure in (
        "recall@3 = 1/4 = 0,25",
        "recall@10 = 3/4 = 0,75",
        "precision@3 = 1/3 = 0,33",
        "RR = 1/2 = 0,50",
        "nDCG@10 = 1,418 / 2,562 = 0,554",
        "nDCG@10 = 5,264 / 10,824 = 0,486",
    ):
        assert figure in text
    ceiling = (DATA / "precision_ceiling_worked_example_vi.txt").read_text(encoding="utf-8")
    assert "Precision@5≤2/5=0.40" in ceiling.replace(" ", "")


@pytest.mark.parametrize(
    ("source", "run"),
    [
        ("dict", {"q1": RANKING}),
        ("files", None),
    ],
)
def test_seed000_every_number(source: str, run: object) -> None:
    qrels: object = GRADED
    if source == "files":
        qrels, run = EXAMPLES / "seed000.qrels", EXAMPLES / "seed000.run"
    ev = evaluate(qrels, run, metrics=["recall@k", "P@k", "mrr", "ndcg_exp@10"], k=(3, 5, 10))
    m = ev.mean
    assert (m["recall@3"], m["recall@5"], m["recall@10"]) == pytest.approx((0.25, 0.50, 0.75), abs=1e-12)
    assert round(m["P@3"], 3) == 0.333
    assert (m["P@5"], m["P@10"]) == pytest.approx((0.40, 0.30), abs=1e-12)
    assert m["mrr"] == pytest.approx(0.50, abs=1e-12)
    assert round(m["ndcg_exp@10"], 3) == 0.486


def test_seed000_binary_ndcg_and_its_parts() -> None:
    """Binary grades: DCG@10 = 1.418, IDCG@10 = 2.562, nDCG@10 = 0.554 (seed 000's arithmetic).

    The exact ratio is 0.55349; the article rounds it up to 0.554 (via 0.5535), so that figure is held
    to ±0.001 while DCG and IDCG are held to their three published decimals.
    """
    ev = evaluate(BINARY, {"q1": RANKING}, metrics=["dcg@10", "ndcg@10"])
    assert round(ev.mean["dcg@10"], 3) == 1.418
    assert ev.mean["ndcg@10"] == pytest.approx(0.554, abs=1e-3)
    assert ev.mean["ndcg@10"] == pytest.approx(1.418 / 2.562, abs=1e-3)
    assert round(ev.mean["dcg@10"] / ev.mean["ndcg@10"], 3) == 2.562


def test_seed000_rel_level_does_not_change_ndcg() -> None:
    """DESIGN.md: rel_level never changes nDCG gains; it does change the binary metrics (only d3 is ≥ 3)."""
    a = evaluate(GRADED, {"q1": RANKING}, metrics=["ndcg_exp@10", "recall@10"], rel_level=1).mean
    b = evaluate(GRADED, {"q1": RANKING}, metrics=["ndcg_exp@10", "recall@10"], rel_level=3).mean
    assert a["ndcg_exp@10"] == b["ndcg_exp@10"]
    assert b["recall@10"] == 1.0  # d3, the only grade-3 fragment, is retrieved


def test_seed000_rbp_from_moffat_zobel_formula() -> None:
    """RBP = (1−p) Σ rel_i p^(i−1): hits at 2, 4, 6 with p = 0.8 ⇒ 0.2·(0.8 + 0.8³ + 0.8⁵) = 0.327936.

    Residual (Moffat & Zobel 2008): the weight of unjudged ranks plus everything past the list; here
    every retrieved fragment is judged, so it is p^10 = 0.8^10.
    """
    ev = evaluate(EXAMPLES / "seed000.qrels", EXAMPLES / "seed000.run", metrics=["rbp@0.8", "rbp_residual@0.8"])
    assert ev.mean["rbp@0.8"] == pytest.approx(0.2 * (0.8 + 0.8**3 + 0.8**5), abs=1e-12)
    assert ev.mean["rbp_residual@0.8"] == pytest.approx(0.8**10, abs=1e-12)


def test_seed000_judged_at_k_flags_incomplete_annotation() -> None:
    """With only the four graded fragments judged, 3 of the top 10 are judged (the seed's 'anotación incompleta')."""
    ev = evaluate(GRADED, {"q1": RANKING}, metrics=["judged@10", "P@10_condensed"])
    assert ev.mean["judged@10"] == pytest.approx(0.3, abs=1e-12)
    assert ev.mean["P@10_condensed"] == pytest.approx(0.3, abs=1e-12)  # 3 judged, all relevant, over k = 10


def test_seed002_precision_ceiling() -> None:
    """A1 has R = 2, so even a perfect ranking scores P@5 = 0.40 — exactly the ceiling min(k, R)/k."""
    ev = evaluate(EXAMPLES / "seed002.qrels", EXAMPLES / "seed002.run", metrics=["P@5", "P_ceiling@5", "rprec"])
    assert ev.mean["P_ceiling@5"] == pytest.approx(0.4, abs=1e-12)
    assert ev.mean["P@5"] == pytest.approx(0.4, abs=1e-12)
    assert ev.mean["rprec"] == 1.0  # R-precision's ceiling is always 1 (seed 002, option a)


def test_examples_exist_as_documented() -> None:
    for name in ("seed000.qrels", "seed000.run", "seed002.qrels", "seed002.run"):
        assert Path(EXAMPLES / name).is_file()


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from annotator.cli import main

    code = main(["eval", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_carries_the_seed_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(
        capsys,
        str(EXAMPLES / "seed000.qrels"),
        str(EXAMPLES / "seed000.run"),
        "--metrics",
        "recall@k,P@k,mrr",
        "--metrics",
        "ndcg_exp@10",
        "--k",
        "3,5,10",
        "--format",
        "json",
        "--per-query",
    )
    assert code == 0
    doc = json.loads(out)
    (run,) = doc["runs"]
    assert run["name"] == "seed000.run"
    assert run["mean"]["recall@5"] == pytest.approx(0.5) and run["mean"]["mrr"] == pytest.approx(0.5)
    assert round(run["per_query"]["q1"]["ndcg_exp@10"], 3) == 0.486
    assert run["warnings"] == []


def test_cli_gates_exit_1_and_name_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    args = (str(EXAMPLES / "seed000.qrels"), str(EXAMPLES / "seed000.run"), "--metrics", "P@5")
    assert _cli(capsys, *args, "--fail-below", "mrr=0.5")[0] == 0  # 0.5 is not below 0.5
    code, _, err = _cli(capsys, *args, "--fail-below", "mrr=0.5", "--fail-below", "recall@10=0.8")
    assert code == 1
    assert "gate failed: seed000.run: recall@10 = 0.7500 < 0.8" in err


def test_cli_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _cli(capsys, str(EXAMPLES / "seed000.qrels"), str(EXAMPLES / "seed000.run"), "--metrics", "ndgc@10")
    assert code == 2 and "unknown metric 'ndgc@10'" in err
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d5 1 10 x\nq1 Q0 d7 2 nine x\n")
    code, _, err = _cli(capsys, str(EXAMPLES / "seed000.qrels"), str(bad))
    assert code == 2 and f"{bad}:2: score 'nine' is not a number" in err


def test_cli_table_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(
        capsys,
        str(EXAMPLES / "seed002.qrels"),
        str(EXAMPLES / "seed002.run"),
        str(EXAMPLES / "seed000.run"),
        "--metrics",
        "P@5,P_ceiling@5",
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "missing queries: zero; trec_eval 10 ranking"  # the averaging and ranking rules used
    assert lines[1].split() == ["metric", "seed002.run", "seed000.run"]
    assert lines[2].split() == ["P@5", "0.4000", "0.0000"]
    assert "seed000.run: 1 of 1 qrels queries are missing from the run" in err
    code, out, _ = _cli(
        capsys,
        str(EXAMPLES / "seed002.qrels"),
        str(EXAMPLES / "seed002.run"),
        "--metrics",
        "P@5",
        "--format",
        "csv",
        "--per-query",
    )
    assert out.splitlines() == ["run,query_id,P@5", "seed002.run,all,0.400000", "seed002.run,A1,0.400000"]


def test_several_runs_and_categories_on_the_seed_examples(tmp_path: Path) -> None:
    """A dict of runs gives a dict of Evaluations sharing one qrels; categories give per-category means."""
    qrels = {**GRADED, "A1": {"d023": 2, "d028": 1}}
    runs = {"seed000": {"q1": RANKING}, "perfect": {"A1": ["d023", "d028", "d011", "d004", "d017"]}}
    cats = tmp_path / "cats.tsv"
    cats.write_text("query_id\tcategory\nq1\treturns\nA1\tcatalog\n", encoding="utf-8")
    evs = evaluate(qrels, runs, metrics=["P@5", "recall@5"], categories=cats)
    assert set(evs) == {"seed000", "perfect"}
    seed = evs["seed000"]
    assert seed.per_query.loc["q1", "P@5"] == pytest.approx(0.4) and seed.per_query.loc["A1", "P@5"] == 0.0
    assert seed.mean["P@5"] == pytest.approx(0.2)  # (0.4 + 0) / 2 qrels queries, trec_eval -c
    assert seed.by_category.loc["returns", "recall@5"] == pytest.approx(0.5)
    assert seed.by_category.loc["catalog", "queries"] == 1
    assert evs["perfect"].by_category.loc["catalog", "P@5"] == pytest.approx(0.4)
    as_list = evaluate(qrels, [runs["seed000"], runs["perfect"]], metrics=["P@5"])
    assert [e.mean["P@5"] for e in as_list] == pytest.approx([0.2, 0.2])

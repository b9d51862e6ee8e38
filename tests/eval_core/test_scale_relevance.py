"""On a scale whose lowest grade is not 0 (1–3, 1–5) that lowest grade still means "not relevant": the store's
evaluations count relevance from the scale's second grade, and with a scale its lowest grade gains nothing in
nDCG; checked against pytrec_eval's relevance_level and pytrec_eval on qrels shifted to start at 0."""

from __future__ import annotations

import pandas as pd
import pytest
import pytrec_eval

from db.evaluations import score_run
from eval_core.io.judgments import relevant_from

QRELS = {"q1": {"a": 1, "b": 3, "c": 2, "d": 1}, "q2": {"e": 1, "f": 1, "g": 2}}
RUN = {"q1": {"a": 9.0, "d": 8.0, "b": 7.0, "x": 6.0, "c": 5.0}, "q2": {"e": 9.0, "f": 8.0, "g": 7.0, "y": 6.0}}


def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    qrels = pd.DataFrame(
        [(q, d, g) for q, docs in QRELS.items() for d, g in docs.items()], columns=["query_id", "doc_id", "grade"]
    )
    run = pd.DataFrame(
        [(q, d, s) for q, docs in RUN.items() for d, s in docs.items()], columns=["query_id", "doc_id", "score"]
    )
    return qrels, run


@pytest.mark.parametrize(("scale", "expected"), [((0, 3), 1), ((1, 3), 2), ((1, 5), 2), ((2, 4), 3)])
def test_relevance_starts_at_the_second_grade(scale: tuple[int, int], expected: int) -> None:
    assert relevant_from(scale) == expected


@pytest.mark.parametrize("scale", [(0, 3), (1, 3)])
def test_stored_evaluation_counts_relevance_from_the_scales_second_grade(scale: tuple[int, int]) -> None:
    qrels, run = frames()
    result = score_run(qrels, run, "r", scale)
    reference = pytrec_eval.RelevanceEvaluator(
        QRELS, {"P_5", "recip_rank", "map"}, relevance_level=relevant_from(scale)
    ).evaluate(RUN)
    for metric, name in (("P@5", "P_5"), ("mrr", "recip_rank"), ("map", "map")):
        expected = sum(reference[q][name] for q in QRELS) / len(QRELS)
        assert result.mean[metric] == pytest.approx(expected, abs=1e-12), metric
    if scale == (1, 3):  # grade 1 ("off topic") no longer counts: q1's first hit is b at rank 3, q2's g at rank 3
        assert result.mean["mrr"] == pytest.approx(1 / 3)


# ---------------------------------------------------------------- gains on a scale that does not start at 0
# `scale=(low, high)` / `--scale LOW-HIGH`: the lowest grade gains 0 in nDCG (gain = grade − low), relevance
# counts from low + 1. The reference is pytrec_eval (trec_eval) on the same qrels with every grade shifted
# down by `low`, which is what a lead would have to do by hand without the option.

OURS_TO_TREC = {
    "ndcg": "ndcg",
    "ndcg@5": "ndcg_cut_5",
    "dcg@5": None,
    "map": "map",
    "P@5": "P_5",
    "mrr": "recip_rank",
    "recall@5": "recall_5",
    "rprec": "Rprec",
    "bpref": "bpref",
}
TREC_MEASURES = {m for m in OURS_TO_TREC.values() if m}
QRELS_1_5 = {"q1": {"a": 1, "b": 5, "c": 3, "d": 2, "e": 1}, "q2": {"f": 4, "g": 1, "h": 2}, "q3": {"i": 1, "j": 1}}
RUN_1_5 = {
    "q1": {"e": 9.0, "a": 8.5, "b": 7.0, "c": 6.0, "z": 5.0, "d": 4.0},
    "q2": {"g": 9.0, "h": 8.0, "f": 7.0},
    "q3": {"i": 3.0, "j": 2.0},
}


def shifted(qrels: dict[str, dict[str, int]], low: int) -> dict[str, dict[str, int]]:
    """The qrels a trec_eval user would write by hand for the same judgments: grades − low."""
    return {q: {d: g - low for d, g in docs.items()} for q, docs in qrels.items()}


def trec_means(qrels: dict, run: dict, low: int, rel_level: int) -> dict[str, float]:
    """pytrec_eval's means over the qrels queries, on the shifted qrels, named as qrelkit names them."""
    per_query = pytrec_eval.RelevanceEvaluator(
        shifted(qrels, low), TREC_MEASURES, relevance_level=rel_level - low
    ).evaluate(run)
    return {ours: sum(per_query[q][trec] for q in qrels) / len(qrels) for ours, trec in OURS_TO_TREC.items() if trec}


@pytest.mark.parametrize(
    ("qrels", "run", "scale", "rel_level"),
    [
        (QRELS, RUN, (1, 3), None),
        (QRELS, RUN, (1, 3), 3),
        (QRELS_1_5, RUN_1_5, (1, 5), None),
        (QRELS_1_5, RUN_1_5, (1, 5), 4),
        (shifted(QRELS_1_5, 1), RUN_1_5, (0, 4), None),
    ],
)
def test_evaluate_on_a_scale_equals_trec_eval_on_qrels_shifted_to_start_at_0(qrels, run, scale, rel_level) -> None:
    from eval_core.ranking.evaluation import evaluate

    result = evaluate(qrels, run, metrics=list(OURS_TO_TREC), scale=scale, rel_level=rel_level)
    expected = trec_means(qrels, run, scale[0], relevant_from(scale) if rel_level is None else rel_level)
    for metric, value in expected.items():
        assert result.mean[metric] == pytest.approx(value, abs=1e-12), metric


def test_without_a_scale_the_lowest_grade_keeps_its_gain_as_in_trec_eval() -> None:
    from eval_core.ranking.evaluation import evaluate

    plain = evaluate(QRELS_1_5, RUN_1_5, metrics=["ndcg@5"], rel_level=2)
    on_scale = evaluate(QRELS_1_5, RUN_1_5, metrics=["ndcg@5"], scale=(1, 5))
    reference = pytrec_eval.RelevanceEvaluator(QRELS_1_5, {"ndcg_cut_5"}).evaluate(RUN_1_5)
    assert plain.mean["ndcg@5"] == pytest.approx(sum(r["ndcg_cut_5"] for r in reference.values()) / 3, abs=1e-12)
    # q3 holds only grade-1 ("not relevant") fragments: as written they gain 1 and q3 scores a perfect 1.0;
    # on the scale they gain nothing and q3 scores 0 (no ideal gain), as trec_eval does on shifted qrels
    assert plain.per_query.loc["q3", "ndcg@5"] == pytest.approx(1.0)
    assert on_scale.per_query.loc["q3", "ndcg@5"] == 0.0


def test_the_stored_evaluation_gains_from_the_scales_lowest_grade() -> None:
    qrels, run = frames()
    result = score_run(qrels, run, "r", (1, 3))
    assert result.mean["ndcg@10"] == pytest.approx(trec_ndcg10(QRELS, RUN, low=1), abs=1e-12)


def trec_ndcg10(qrels: dict, run: dict, low: int) -> float:
    """pytrec_eval's mean ndcg_cut_10 on qrels shifted down by `low`."""
    per_query = pytrec_eval.RelevanceEvaluator(shifted(qrels, low), {"ndcg_cut_10"}).evaluate(run)
    return sum(per_query[q]["ndcg_cut_10"] for q in qrels) / len(qrels)


def write_trec(path, qrels: dict, run: dict | None = None) -> None:
    """TREC qrels (or, with `run`, a TREC run) at `path`."""
    if run is None:
        lines = [f"{q} 0 {d} {g}" for q, docs in qrels.items() for d, g in docs.items()]
    else:
        lines = [
            f"{q} Q0 {d} {i + 1} {s} r"
            for q, docs in run.items()
            for i, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]))
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_qrelkit_eval_scale_option_equals_trec_eval_on_shifted_qrels(tmp_path, capsys) -> None:
    import json

    from annotator.cli import main

    write_trec(tmp_path / "q.txt", QRELS_1_5)
    write_trec(tmp_path / "r.txt", QRELS_1_5, RUN_1_5)
    assert (
        main(
            [
                "eval",
                str(tmp_path / "q.txt"),
                str(tmp_path / "r.txt"),
                "--scale",
                "1-5",
                "--metrics",
                ",".join(OURS_TO_TREC),
                "--format",
                "json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    mean = out["runs"][0]["mean"]
    for metric, value in trec_means(QRELS_1_5, RUN_1_5, 1, 2).items():
        assert mean[metric] == pytest.approx(value, abs=1e-12), metric


def test_a_grade_outside_the_scale_names_the_file_line_and_pair(tmp_path, capsys) -> None:
    from annotator.cli import main

    write_trec(tmp_path / "q.txt", {"q1": {"a": 1, "b": 3}, "q2": {"c": 0, "d": 2}})
    write_trec(tmp_path / "r.txt", QRELS, RUN)
    assert main(["eval", str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), "--scale", "1-3"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'q.txt'}:3:" in err and "grade 0 of query q2, fragment c is outside the scale 1-3" in err


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--rel-level", "1"], "rel_level 1 is not above the lowest grade of the scale 1-3"),
        (["--max-grade", "5"], "max_grade 5 contradicts the scale 1-3"),
    ],
)
def test_options_that_contradict_the_scale_are_refused(tmp_path, capsys, options, problem) -> None:
    from annotator.cli import main

    write_trec(tmp_path / "q.txt", QRELS)
    write_trec(tmp_path / "r.txt", QRELS, RUN)
    assert main(["eval", str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), "--scale", "1-3", *options]) == 2
    assert problem in capsys.readouterr().err


# ------------------------------------------------- a release's JSONL and CSV name their scale: eval reads it
# A release writes its TREC and BEIR qrels as gains (grade − low) and its JSONL and CSV with the grades as
# judged, `"scale": "1-5"` on every line. `qrelkit eval` reads all four as qrels; read as gains, the JSONL and
# CSV of a 1–5 release would count grade 1 (not relevant) as relevant and give every nDCG gain one too many.


def test_every_release_file_of_a_1_5_project_evaluates_alike(tmp_path, capsys) -> None:
    """Grades imported as qrels on 1–5, released (median of one annotator: the grades themselves), exported as
    TREC, BEIR, JSONL and CSV: `qrelkit eval` gives each file pytrec_eval's numbers on the qrels shifted by hand."""
    import json

    from annotator.cli import main

    db = f"sqlite:///{tmp_path / 'p.db'}"
    assert main(["init", "--db", db, "--project", "p", "--scale", "1-5"]) == 0
    queries = sorted(QRELS_1_5)
    (tmp_path / "q.tsv").write_text("".join(f"{q}\tquery {q}\n" for q in queries), encoding="utf-8")
    docs = sorted({d for judged in QRELS_1_5.values() for d in judged} | {"z"})
    (tmp_path / "f.jsonl").write_text(
        "".join(json.dumps({"id": d, "contents": f"text {d}"}) + "\n" for d in docs), encoding="utf-8"
    )
    write_trec(tmp_path / "grades.txt", QRELS_1_5)
    write_trec(tmp_path / "r.txt", QRELS_1_5, RUN_1_5)
    for argv in (
        ["import", "queries", str(tmp_path / "q.tsv")],
        ["import", "fragments", str(tmp_path / "f.jsonl")],
        ["import", "judgments", str(tmp_path / "grades.txt"), "--annotator", "nist"],
        ["user", "add", "lea", "--role", "lead", "--no-password"],
    ):
        assert main([*argv, "--db", db] + (["--project", "p"] if argv[0] == "import" else [])) == 0, argv
    assert main(["release", "--project", "p", "--db", db, "--user", "lea"]) == 0
    expected = trec_means(QRELS_1_5, RUN_1_5, 1, 2)
    for fmt, name in (("trec", "rel.trec"), ("beir", "rel.tsv"), ("jsonl", "rel.jsonl"), ("csv", "rel.csv")):
        out = tmp_path / name
        assert main(["export", "--project", "p", "--db", db, "--release", "1", "--format", fmt, "-o", str(out)]) == 0
        capsys.readouterr()
        assert (
            main(["eval", str(out), str(tmp_path / "r.txt"), "--metrics", ",".join(OURS_TO_TREC), "--format", "json"])
            == 0
        )
        mean = json.loads(capsys.readouterr().out)["runs"][0]["mean"]
        for metric, value in expected.items():
            assert mean[metric] == pytest.approx(value, abs=1e-12), (name, metric)


def release_lines(qrels: dict[str, dict[str, int]], scale: str = "1-5") -> list[dict]:
    """A release's JSONL records, as qrelkit writes them: grades as judged, the scale on every line."""
    return [
        {"query_id": q, "fragment_id": d, "grade": g, "grades": {"nist": g}, "rule": "median", "scale": scale}
        for q, docs in qrels.items()
        for d, g in docs.items()
    ]


def test_evaluate_compare_and_diagnose_read_the_scale_a_release_file_names(tmp_path) -> None:
    """The Python API as the CLI: a 1–5 release JSONL without `scale=` is on 1–5, as pytrec_eval on grade − 1."""
    from eval_core import compare, evaluate
    from eval_core.ranking.report import diagnose
    from tests.helpers import write_jsonl

    path = write_jsonl(tmp_path / "release.jsonl", release_lines(QRELS_1_5))
    write_trec(tmp_path / "r.txt", QRELS_1_5, RUN_1_5)
    expected = trec_means(QRELS_1_5, RUN_1_5, 1, 2)
    result = evaluate(path, tmp_path / "r.txt", metrics=list(OURS_TO_TREC))
    for metric, value in expected.items():
        assert result.mean[metric] == pytest.approx(value, abs=1e-12), metric
    ndcg10 = trec_ndcg10(QRELS_1_5, RUN_1_5, low=1)
    assert diagnose(path, tmp_path / "r.txt").mean["ndcg@10"] == pytest.approx(ndcg10, abs=1e-12)
    both = compare(path, {"a": tmp_path / "r.txt", "b": tmp_path / "r.txt"}, metrics=["ndcg@10"])
    assert both.means["a"]["ndcg@10"] == pytest.approx(ndcg10, abs=1e-12)


def test_a_scale_the_release_file_contradicts_is_refused(tmp_path, capsys) -> None:
    from annotator.cli import main
    from tests.helpers import write_jsonl

    path = write_jsonl(tmp_path / "release.jsonl", release_lines(QRELS_1_5))
    write_trec(tmp_path / "r.txt", QRELS_1_5, RUN_1_5)
    assert main(["eval", str(path), str(tmp_path / "r.txt"), "--scale", "0-4"]) == 2
    assert f"{path}:1: the file names the scale 1-5, not 0-4" in capsys.readouterr().err
    assert main(["eval", str(path), str(tmp_path / "r.txt"), "--scale", "1-5", "--metrics", "map"]) == 0
    mixed = release_lines(QRELS_1_5)
    mixed[2]["scale"] = "0-4"
    write_jsonl(tmp_path / "mixed.jsonl", mixed)
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "mixed.jsonl"), str(tmp_path / "r.txt")]) == 2
    assert (
        f"{tmp_path / 'mixed.jsonl'}:3: names the scale 0-4, but the first record names 1-5" in capsys.readouterr().err
    )

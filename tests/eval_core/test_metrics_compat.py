"""Files trec_eval reads: run lines with fields after the sixth, multi-judge qrels (-R qrels_jg), and the
ERR grade clip — checked against pytrec_eval (trec_eval's C code) given the same data as dicts."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
import pytrec_eval

from eval_core import evaluate
from eval_core.errors import InputError
from eval_core.ranking.evaluation import evaluate_judge_groups
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"
TREC = {
    "map": "map",
    "P_5": "P@5",
    "P_10": "P@10",
    "recall_10": "recall@10",
    "ndcg_cut_10": "ndcg@10",
    "ndcg": "ndcg",
    "recip_rank": "mrr",
    "bpref": "bpref",
    "Rprec": "rprec",
}
OURS = list(TREC.values())


def read_run_as_trec_eval(path: Path) -> dict[str, dict[str, float]]:
    """The reference reading: fields 1, 3 and 5 of each line; anything after the sixth ignored."""
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        f = line.split()
        run[f[0]][f[2]] = float(f[4])
    return dict(run)


def read_qrels(path: Path, judge_column: bool = False) -> dict[str, dict[str, dict[str, int]]]:
    """{judge: {qid: {docid: grade}}} (one judge, "", for plain qrels)."""
    out: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for line in path.read_text().splitlines():
        q, j, d, g = line.split()
        out[j if judge_column else ""][q][d] = int(g)
    return {j: dict(v) for j, v in out.items()}


def reference(qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    """pytrec_eval per query, with trec_eval -c: a qrels query missing from the run scores 0."""
    got = pytrec_eval.RelevanceEvaluator(qrels, set(TREC)).evaluate(run)
    return {q: {TREC[m]: got.get(q, {}).get(m, 0.0) for m in TREC} for q in qrels}


# --- fields after the sixth -------------------------------------------------------------------------------


def test_trailing_fields_are_ignored_like_trec_eval() -> None:
    qp, rp = DATA / "trailing_fields.qrels", DATA / "trailing_fields.run"
    ev = evaluate(qp, rp, metrics=OURS)
    want = reference(read_qrels(qp)[""], read_run_as_trec_eval(rp))
    for q, row in want.items():
        for m, v in row.items():
            assert ev.per_query.loc[q, m] == pytest.approx(v, abs=1e-12), (q, m)


def test_trailing_fields_give_one_warning_naming_the_first_line() -> None:
    rp = DATA / "trailing_fields.run"
    ev = evaluate(DATA / "trailing_fields.qrels", rp, metrics=["map"])
    extra = [w for w in ev.warnings if "fields after the sixth" in w]
    assert extra == [
        f"{rp}:2: 7 fields where a run line has 6 (qid Q0 docid rank score tag); fields after the "
        "sixth are ignored on this and every such line, as trec_eval does"
    ]


def test_trailing_fields_in_blocks_warn_once_with_the_same_line(tmp_path: Path) -> None:
    rp = DATA / "trailing_fields.run"
    whole = evaluate(DATA / "trailing_fields.qrels", rp, metrics=OURS)
    blocked = evaluate(DATA / "trailing_fields.qrels", rp, metrics=OURS, block_bytes=200)
    assert whole.per_query.equals(blocked.per_query)
    assert [w for w in blocked.warnings if "sixth" in w] == [w for w in whole.warnings if "sixth" in w]
    assert len([w for w in blocked.warnings if "sixth" in w]) == 1


def test_fewer_than_six_fields_is_still_an_error(tmp_path: Path) -> None:
    rp = tmp_path / "short.run"
    rp.write_text("q1 Q0 d1 1 2.0 t extra\nq1 Q0 d2 2 1.0\n")
    with pytest.raises(InputError, match=rf"^{rp}:2: expected 6 fields .* found 5"):
        evaluate({"q1": {"d1": 1}}, rp)


def test_cli_warns_once_for_trailing_fields(capsys: pytest.CaptureFixture[str]) -> None:
    from annotator.cli import main

    assert (
        main(["eval", str(DATA / "trailing_fields.qrels"), str(DATA / "trailing_fields.run"), "--metrics", "map"]) == 0
    )
    err = capsys.readouterr().err
    assert err.count("fields after the sixth") == 1 and f"{DATA / 'trailing_fields.run'}:2: 7 fields" in err


# --- multi-judge qrels ------------------------------------------------------------------------------------


def judge_reference() -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]]]:
    """pytrec_eval run once per judge group; per query, the mean over the judge groups that judged it."""
    judges = read_qrels(DATA / "judges.qrels_jg", judge_column=True)
    run = read_run_as_trec_eval(DATA / "judges.run")
    per_judge = {j: reference(qrels, run) for j, qrels in sorted(judges.items())}
    queries = {q for values in per_judge.values() for q in values}
    avg = {
        q: {
            m: sum(v[q][m] for v in per_judge.values() if q in v) / sum(q in v for v in per_judge.values())
            for m in OURS
        }
        for q in queries
    }
    return per_judge, avg


def test_judge_groups_match_pytrec_eval_per_judge_and_their_average() -> None:
    per_judge, avg = judge_reference()
    ev = evaluate_judge_groups(DATA / "judges.qrels_jg", DATA / "judges.run", metrics=OURS)
    assert sorted(ev.per_judge) == ["A", "B", "C"]
    for j, want in per_judge.items():
        for q, row in want.items():
            for m, v in row.items():
                assert ev.per_judge[j].loc[q, m] == pytest.approx(v, abs=1e-12), (j, q, m)
    assert sorted(ev.per_query.index) == sorted(avg)
    for q, row in avg.items():
        for m, v in row.items():
            assert ev.per_query.loc[q, m] == pytest.approx(v, abs=1e-12), (q, m)
    for m in OURS:  # the run mean: over every judged query (q5, missing from the run, counts as 0)
        assert ev.mean[m] == pytest.approx(sum(r[m] for r in avg.values()) / len(avg), abs=1e-12)
        means = [sum(v[m] for v in rows.values()) / len(rows) for rows in per_judge.values()]
        assert ev.judge_spread[m] == pytest.approx((min(means), max(means)), abs=1e-12)


def test_cli_jg_json_has_the_average_per_query_and_per_judge(capsys: pytest.CaptureFixture[str]) -> None:
    from annotator.cli import main

    per_judge, avg = judge_reference()
    code = main(
        [
            "eval",
            str(DATA / "judges.qrels_jg"),
            str(DATA / "judges.run"),
            "--qrels-format",
            "jg",
            "--metrics",
            "map,P@5",
            "--format",
            "json",
            "--per-query",
        ]
    )
    assert code == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["per_query"]["q3"]["map"] == pytest.approx(avg["q3"]["map"], abs=1e-12)
    assert run["per_query"]["q2"]["P@5"] == pytest.approx(avg["q2"]["P@5"], abs=1e-12)
    assert run["per_judge"]["B"]["q3"]["map"] == pytest.approx(per_judge["B"]["q3"]["map"], abs=1e-12)
    assert set(run["per_judge"]["C"]) == {"q1", "q3", "q4", "q5"}  # only the queries judge C judged
    means = [sum(r["map"] for r in rows.values()) / len(rows) for rows in per_judge.values()]
    assert (run["spread"]["map"]["min"], run["spread"]["map"]["max"]) == pytest.approx((min(means), max(means)))
    assert run["judges"]["A"]["map"] == pytest.approx(means[0], abs=1e-12)


def test_cli_jg_table_shows_the_spread(capsys: pytest.CaptureFixture[str]) -> None:
    from annotator.cli import main

    assert (
        main(
            [
                "eval",
                str(DATA / "judges.qrels_jg"),
                str(DATA / "judges.run"),
                "--qrels-format",
                "jg",
                "--metrics",
                "map",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "judges.run over 3 judge groups" in out


def test_jg_repeated_doc_for_one_judge_is_an_error(tmp_path: Path) -> None:
    qp = tmp_path / "dup.jg"
    qp.write_text("q1 A d1 1\nq1 B d1 0\nq1 A d1 2\n")
    with pytest.raises(
        InputError, match=rf"^{qp}:3: doc 'd1' repeated for query 'q1' by judge 'A' \(first on line 1\)"
    ):
        evaluate_judge_groups(qp, {"q1": ["d1"]})


# --- ERR above the scale, directories ---------------------------------------------------------------------


def test_err_warns_once_about_grades_above_max_grade() -> None:
    qrels = {"q1": {"a": 4, "b": 3, "c": 5}, "q2": {"d": 4}}
    ev = evaluate(qrels, {"q1": ["a", "b", "c"], "q2": ["d"]}, metrics=["err@10"], max_grade=3)
    clip = [w for w in ev.warnings if "max_grade" in w]
    assert clip == [
        "3 judgments have a grade above max_grade = 3 (highest: 5); ERR counts them as grade 3. "
        "Set max_grade (--max-grade) to the scale's top grade"
    ]
    assert not [w for w in evaluate(qrels, {"q1": ["a"]}, metrics=["err@10"], max_grade=5).warnings if "max_grade" in w]
    assert not [w for w in evaluate(qrels, {"q1": ["a"]}, metrics=["P@5"]).warnings if "max_grade" in w]


def test_a_directory_is_named_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from annotator.cli import main

    assert main(["eval", str(tmp_path), str(DATA / "judges.run")]) == 2
    assert f"{tmp_path}: is a directory, not a file" in capsys.readouterr().err
    assert main(["eval", str(DATA / "trailing_fields.qrels"), str(tmp_path)]) == 2
    assert f"{tmp_path}: is a directory, not a file" in capsys.readouterr().err

"""Evaluations of stored runs against releases, their history with CI-based drop alerts, comparisons, and
judging the holes."""

from __future__ import annotations

import json

import pytest
import pytrec_eval
from sqlalchemy import func, select

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.assignment import assign
from db.evaluations import (
    HEADLINE,
    AlertCause,
    compare_runs,
    drop_alerts,
    ensure_evaluation,
    evaluate_stored_run,
    holes_without_text,
    judge_holes,
    list_runs,
    release_qrels,
    run_history,
    stored_run_frame,
)
from db.releases import create_release
from db.store.engine import session_scope
from db.store.models import Evaluation as EvaluationRow
from tests.helpers import judge, pairs_of, seed

# Seed 000 (recall@k, MRR y nDCG): R = {d3:3, d7:2, d12:2, d20:1} and the ranking below.
RANKING = ["d5", "d7", "d11", "d3", "d2", "d20", "d9", "d14", "d1", "d6"]
GRADED = {"d3": 3, "d7": 2, "d12": 2, "d20": 1, "d5": 0}
DOCS = {d: f"text of {d}" for d in [*RANKING, "d12"]}


def seeded(engine, project, grades=GRADED) -> None:
    """Seed 000's query, fragments, ranking (as run 'R') and judgments (one annotator)."""
    seed(engine, project.id, {"q1": "¿qué es recall@k?"}, DOCS, {"R": {"q1": RANKING}})
    judge(engine, project.id, {("q1", d): {"ann": g} for d, g in grades.items()})


def test_stored_run_scores_match_seed_000(engine, project):
    seeded(engine, project)
    create_release(engine, "demo", actor=OPERATOR)
    result, stored = evaluate_stored_run(engine, "demo", "R")
    mean = result.mean
    assert [mean["recall@3"], mean["recall@5"], mean["recall@10"]] == pytest.approx([0.25, 0.50, 0.75])
    assert [mean["P@3"], mean["P@5"], mean["P@10"]] == pytest.approx([1 / 3, 0.40, 0.30])
    assert mean["mrr"] == pytest.approx(0.50)
    assert mean["ndcg_exp@10"] == pytest.approx(0.486, abs=5e-4)
    with session_scope(engine) as s:
        row = s.get(EvaluationRow, stored)
        assert row.means["recall@10"] == pytest.approx(0.75) and row.per_query["q1"]["mrr"] == pytest.approx(0.5)


def test_binary_release_gives_seed_ndcg_and_reevaluation_replaces(engine, project):
    seeded(engine, project, {d: 1 for d in ("d3", "d7", "d12", "d20")})
    create_release(engine, "demo", actor=OPERATOR)
    first, _ = evaluate_stored_run(engine, "demo", "R", version=1)
    again, _ = evaluate_stored_run(engine, "demo", "R", version="1")
    assert (
        first.mean["ndcg@10"] == again.mean["ndcg@10"] == pytest.approx(0.554, abs=1e-3)
    )  # seed 000: 1.418 / 2.562, 3 decimals
    with session_scope(engine) as s:
        assert s.execute(select(func.count()).select_from(EvaluationRow)).scalar() == 1
    assert stored_run_frame(engine, "demo", "R")["doc_id"].tolist() == RANKING
    assert release_qrels(engine, "demo", 1).sort_values("doc_id")["doc_id"].tolist() == ["d12", "d20", "d3", "d7"]
    assert [(r.name, r.n_lines, r.evaluations) for r in list_runs(engine, "demo")] == [("R", 10, 1)]


def test_missing_queries_are_warned_and_stored(engine, project):
    seeded(engine, project)
    seed(engine, project.id, {"q2": "other"}, {"z1": "zeta"})
    judge(engine, project.id, {("q2", "z1"): {"ann": 2}})
    create_release(engine, "demo", actor=OPERATOR)
    result, stored = evaluate_stored_run(engine, "demo", "R")
    assert any("missing from the run" in w and "q2" in w for w in result.warnings)
    with session_scope(engine) as s:
        assert s.get(EvaluationRow, stored).warnings == result.warnings


def _ndcg10(grades: dict[str, int]) -> float:
    """Reference nDCG@10 (linear gain, trec_eval ndcg_cut_10) of seed 000's ranking from pytrec_eval."""
    run = {"q1": {d: float(100 - r) for r, d in enumerate(RANKING, start=1)}}
    return pytrec_eval.RelevanceEvaluator({"q1": grades}, {"ndcg_cut_10"}).evaluate(run)["q1"]["ndcg_cut_10"]


def test_history_flags_drops_below_the_previous_ci(engine, project):
    seeded(engine, project)
    create_release(engine, "demo", actor=OPERATOR)  # v1: graded
    binary = {"d3": 1, "d7": 1, "d12": 1, "d20": 1}
    judge(engine, project.id, {("q1", d): {"ann": g} for d, g in binary.items()})
    create_release(engine, "demo", actor=OPERATOR)  # v2: binary, nDCG@10 0.554 (seed 000)
    judge(engine, project.id, {("q1", "d7"): {"ann": 0}})
    create_release(engine, "demo", actor=OPERATOR)  # v3: d7 judged not relevant
    history = run_history(engine, "demo", "R", metrics=["ndcg@10", "recall@10"])
    assert list(history.columns) == ["version", "released_at", "metric", "value", "low", "high", "change", "drop"]
    ndcg = history[history["metric"] == "ndcg@10"]
    third = {"d3": 1, "d7": 0, "d12": 1, "d20": 1, "d5": 0}
    values = ndcg["value"].tolist()
    assert values[0] == pytest.approx(_ndcg10(GRADED), abs=1e-9)
    assert values[1] == pytest.approx(0.554, abs=1e-3)  # seed 000
    assert values[2] == pytest.approx(_ndcg10(third), abs=1e-9)
    # One query: every bootstrap resample is that query, so the CI is the point itself: it cannot tell a fall
    # from noise, and no fall against it is a drop.
    assert ndcg["low"].tolist() == pytest.approx(values) and ndcg["high"].tolist() == pytest.approx(values)
    assert ndcg["drop"].tolist() == [False, False, False]
    recall = history[history["metric"] == "recall@10"]
    # recall@10: 3/4 while d7 is relevant; then hits d3, d20 of R = {d3, d12, d20} ⇒ 2/3.
    assert recall["value"].tolist() == pytest.approx([0.75, 0.75, 2 / 3])
    assert recall["drop"].tolist() == [False, False, False]
    assert drop_alerts(engine, "demo") == []
    assert set(run_history(engine, "demo", "R")["metric"]) == set(HEADLINE)
    with pytest.raises(ValueError, match="not in the stored evaluations: nope@3"):
        run_history(engine, "demo", "R", metrics=["nope@3"])


def two_query_project(engine, project) -> None:
    """Seed 000's query q1 plus q2 (relevant e1, e2 at ranks 1–2), ranked by runs R and S alike.

    Release 1: recall@10 per query (0.75, 1.0); with two queries a 1000-resample percentile bootstrap puts
    a quarter of its means on each query's own value, so the 95% CI of the mean is exactly [0.75, 1.0].
    """
    ranking = {"q1": RANKING, "q2": ["e1", "e2", "e3", "e4"]}
    seed(
        engine,
        project.id,
        {"q1": "recall@k", "q2": "other"},
        {**DOCS, **{f"e{i}": f"e text {i}" for i in (1, 2, 3, 4, 9)}},
        {"R": ranking, "S": ranking},
    )
    judge(
        engine,
        project.id,
        {
            **{("q1", d): {"ann": g} for d, g in GRADED.items()},
            ("q2", "e1"): {"ann": 2},
            ("q2", "e2"): {"ann": 2},
            ("q2", "e3"): {"ann": 0},
        },
    )
    create_release(engine, "demo", actor=OPERATOR)


def test_one_label_change_alerts_once_per_run_and_metric_beyond_the_ci(engine, project):
    two_query_project(engine, project)
    assert drop_alerts(engine, "demo") == []  # nothing to compare with yet
    # One change: e9 (never retrieved) becomes relevant for q2. q2's recall@10 falls 1 → 2/3, the mean
    # 0.875 → 0.7083 < 0.75, the CI's low end: an alert. AP of q2 falls 1 → 2/3 too, but mean AP
    # (0.375 + 1)/2 → (0.375 + 2/3)/2 = 0.521 stays inside [0.375, 1]; nDCG@10 likewise; P@10 and MRR
    # do not move. So exactly one alert per run, on recall@10 — where a fixed margin flagged every metric.
    judge(engine, project.id, {("q2", "e9"): {"ann": 2}})
    create_release(engine, "demo", actor=OPERATOR)
    alerts = drop_alerts(engine, "demo")
    assert [(a.run, a.metric, a.version, a.previous_version) for a in alerts] == [
        ("R", "recall@10", 2, 1),
        ("S", "recall@10", 2, 1),
    ]
    first = alerts[0]
    # The runs did not change: on q1, the one query both releases label alike, recall@10 stays 3/4 (a point
    # CI), so the fall is the golden set's — q2 relabelled — and the alert says so instead of blaming the run.
    assert (first.cause, first.n_same, first.same_previous, first.same_value) == (
        AlertCause.GOLDEN_SET,
        1,
        pytest.approx(0.75),
        pytest.approx(0.75),
    )
    assert (first.added, first.removed, first.relabelled) == (0, 0, 1)
    assert first.value == pytest.approx((0.75 + 2 / 3) / 2) and first.previous == pytest.approx(0.875)
    assert first.previous_ci == pytest.approx((0.75, 1.0))
    history = run_history(engine, "demo", "R")
    dropped = history[history["drop"]]
    assert dropped[["metric", "version"]].values.tolist() == [["recall@10", 2]]
    map_rows = history[history["metric"] == "map"]
    assert map_rows["value"].tolist() == pytest.approx([(0.375 + 1) / 2, (0.375 + 2 / 3) / 2])
    assert drop_alerts(engine, "demo", version=1) == []


def test_alerts_tell_the_run_falling_from_queries_added(engine, project):
    """Release 2 adds q3 (relevant e9, answered by neither run) and run R loses e2 from q2's ranking.
    By hand, recall@10 at release 1: q1 3/4, q2 1 ⇒ mean 0.875, 95% CI [0.75, 1.0] (two queries).
    R at release 2: q1 3/4, q2 1/2, q3 0 ⇒ 0.4167; on q1 and q2 (labelled alike) 0.625 < 0.75: the run fell.
    S at release 2: q1 3/4, q2 1, q3 0 ⇒ 0.5833 < 0.75, but on q1 and q2 still 0.875: the golden set's change."""
    from sqlalchemy import delete

    from db.store.models import Run, RunEntry

    two_query_project(engine, project)
    seed(engine, project.id, {"q3": "added later"}, {})
    judge(engine, project.id, {("q3", "e9"): {"ann": 2}})
    with session_scope(engine, write=True) as s:
        run_id = s.execute(select(Run.id).where(Run.project_id == project.id, Run.name == "R")).scalar_one()
        s.execute(delete(RunEntry).where(RunEntry.run_id == run_id, RunEntry.doc_external_id == "e2"))
    create_release(engine, "demo", actor=OPERATOR)
    recall = {a.run: a for a in drop_alerts(engine, "demo") if a.metric == "recall@10"}
    r, s_ = recall["R"], recall["S"]
    assert (r.cause, r.n_same, r.added, r.removed, r.relabelled) == (AlertCause.RUN, 2, 1, 0, 0)
    assert (r.value, r.same_value, r.same_previous) == pytest.approx(((0.75 + 0.5) / 3, 0.625, 0.875))
    assert r.same_ci == pytest.approx((0.75, 1.0))
    assert (s_.cause, s_.same_value, s_.value) == (AlertCause.GOLDEN_SET, pytest.approx(0.875), pytest.approx(1.75 / 3))


def test_a_point_interval_never_alerts(engine, project):
    """The trial's case: two queries both fully recalled at release 1 (recall@10 CI [1.0, 1.0], a point),
    release 2 adds a query the run does not answer. The mean falls 1.0 → 2/3, yet a point CI raises nothing."""
    seed(
        engine,
        project.id,
        {"q1": "one", "q2": "two", "q3": "three"},
        {"a": "a", "b": "b", "c": "c"},
        {"R": {"q1": ["a"], "q2": ["b"]}},
    )
    judge(engine, project.id, {("q1", "a"): {"ann": 2}, ("q2", "b"): {"ann": 2}})
    create_release(engine, "demo", actor=OPERATOR)
    judge(engine, project.id, {("q3", "c"): {"ann": 2}})
    create_release(engine, "demo", actor=OPERATOR)
    history = run_history(engine, "demo", "R", metrics=["recall@10"])
    assert history["value"].tolist() == pytest.approx([1.0, 2 / 3])
    assert drop_alerts(engine, "demo") == []


def test_a_run_imported_after_the_release_is_stored_once(engine, project):
    seeded(engine, project)
    create_release(engine, "demo", actor=OPERATOR)
    seed(engine, project.id, {}, {}, {"late": {"q1": RANKING[:5]}})
    with session_scope(engine) as s:
        assert s.execute(select(func.count()).select_from(EvaluationRow)).scalar() == 1  # R, at release time
    assert ensure_evaluation(engine, "demo", "late", 1) is True
    assert ensure_evaluation(engine, "demo", "late", "latest") is False
    assert ensure_evaluation(engine, "demo", "R", 1) is False
    history = run_history(engine, "demo", "late", metrics=["recall@5", "mrr"])
    assert history["value"].tolist() == pytest.approx([0.5, 0.5])  # seed 000: recall@5 0.50, MRR 0.50
    with session_scope(engine) as s:
        assert s.execute(select(func.count()).select_from(EvaluationRow)).scalar() == 2


def test_compare_runs_scores_both_on_the_release(engine, project):
    seeded(engine, project)
    seed(engine, project.id, {}, {}, {"dense": {"q1": ["d3", "d12", "d7", "d20", "d5"]}})
    create_release(engine, "demo", actor=OPERATOR)
    comparison = compare_runs(
        engine, "demo", 1, ("R", stored_run_frame(engine, "demo", "R")), ["dense"], metrics=["recall@10", "mrr"]
    )
    means = comparison.means
    assert means["R"]["recall@10"] == pytest.approx(0.75) and means["R"]["mrr"] == pytest.approx(0.5)
    assert means["dense"]["recall@10"] == pytest.approx(1.0) and means["dense"]["mrr"] == pytest.approx(1.0)
    assert [(p.run_a, p.run_b, p.metric) for p in comparison.pairs] == [
        ("R", "dense", "recall@10"),
        ("R", "dense", "mrr"),
    ]
    # rel_level 3: only d3 is relevant; R finds it at rank 4 (MRR 1/4), dense at rank 1.
    strict = compare_runs(
        engine, "demo", 1, ("R", stored_run_frame(engine, "demo", "R")), ["dense"], metrics=["mrr"], rel_level=3
    )
    assert strict.means["R"]["mrr"] == pytest.approx(0.25) and strict.means["dense"]["mrr"] == pytest.approx(1.0)


def test_judge_the_holes(engine, project):
    seeded(engine, project)
    # z9 has d14's exact text: a hole already covered once d14 is a pair, so it never becomes a second pair.
    seed(engine, project.id, {}, {"z9": DOCS["d14"]}, {"S": {"q1": ["d14", "z9", "ghost", "d3"]}})
    # Top-9 of R minus the judged d5 d7 d3 d20: d11 d2 d9 d14 d1.
    assert judge_holes(engine, "demo", "R", k=9, actor=OPERATOR) == 5
    pairs = pairs_of(engine, project.id)
    assert {f for (_, f), (src, _) in pairs.items() if src == ["holes:R"]} == {"d11", "d2", "d9", "d14", "d1"}
    assert pairs[("q1", "d11")] == (["holes:R"], 3)
    assert judge_holes(engine, "demo", "R", k=9, actor=OPERATOR) == 0
    # d14 covered, z9 same text, d3 judged; ghost (a run stored before 0017 left it without a fragment) becomes
    # a fragment waiting for its text, and its pair waits with it
    assert judge_holes(engine, "demo", "S", k=4, actor=OPERATOR) == 1
    assert pairs_of(engine, project.id)[("q1", "ghost")] == (["holes:S"], 3)
    # ghost (rank 3 of S) has no text in the project and no grade
    assert (holes_without_text(engine, "demo", "S", k=4), holes_without_text(engine, "demo", "S", k=2)) == (1, 0)
    assert judge_holes(engine, "demo", "R", k=20, actor=OPERATOR) == 1  # d6 at rank 10
    create_user(engine, "bob", "annotator", actor=OPERATOR)
    assert assign(engine, "demo", overlap=1, annotators=["bob"], actor=OPERATOR).created == 6


def test_errors_name_what_is_missing(engine, project):
    seeded(engine, project)
    with pytest.raises(LookupError, match="has no releases yet"):
        evaluate_stored_run(engine, "demo", "R")
    create_release(engine, "demo", actor=OPERATOR)
    with pytest.raises(LookupError, match="no run named 'X'"):
        evaluate_stored_run(engine, "demo", "X")
    with pytest.raises(LookupError, match="has no release 5"):
        evaluate_stored_run(engine, "demo", "R", version=5)


def test_cli_evaluate_run_and_holes(engine, project, store_url, capsys):
    seeded(engine, project)
    create_release(engine, "demo", actor=OPERATOR)
    assert main(["evaluate-run", "--project", "demo", "R", "--format", "json", "--db", store_url]) == 0
    assert json.loads(capsys.readouterr().out)["mean"]["recall@5"] == pytest.approx(0.5)
    assert main(["holes", "--project", "demo", "R", "--k", "10", "--db", store_url]) == 0
    assert capsys.readouterr().out.startswith("6 new pairs")


def test_holes_are_a_leads_call(engine, project):
    seeded(engine, project)
    create_user(engine, "ann2", "annotator", actor=OPERATOR)
    with pytest.raises(PermissionError, match="only a lead"):
        judge_holes(engine, "demo", "R", k=9, actor="ann2")
    create_user(engine, "lea", "lead", actor=OPERATOR)
    assert judge_holes(engine, "demo", "R", k=9, actor="lea") == 5

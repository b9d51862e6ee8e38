"""Diagnostics: every expected number is the seeds' own (000, 002, 004) or worked by hand in the comments."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from annotator.cli import main
from eval_core.ranking.evaluation import Evaluation, evaluate
from eval_core.ranking.report import (
    Thresholds,
    category_breakdown,
    diagnose,
    judged_check,
    low_recall_queries,
    ranked,
    recall_curve,
    two_depth_diagnosis,
    unjudged_pairs,
)


def qrels_frame(rows: list[tuple[str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "grade"]).astype({"grade": "int64"})


def run_frame(lists: dict[str, list[str]]) -> pd.DataFrame:
    rows = [(q, d, float(len(docs) - i)) for q, docs in lists.items() for i, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


# Seed 000: R = {d3:3, d7:2, d12:2, d20:1}; the system returns d5 d7 d11 d3 d2 d20 d9 d14 d1 d6.
SEED000_QRELS = qrels_frame([("q", "d3", 3), ("q", "d7", 2), ("q", "d12", 2), ("q", "d20", 1)])
SEED000_RUN = run_frame({"q": ["d5", "d7", "d11", "d3", "d2", "d20", "d9", "d14", "d1", "d6"]})

# Seed 004 demo: relevant_doc_ids graded 2, partially_relevant_ids graded 1 (its relevance_map); with
# rel_level=2 "relevant" means relevant_doc_ids, exactly the seed's compute_recall_at_k.
SEED004_QRELS = qrels_frame(
    [
        ("q1", "doc_003", 2),
        ("q1", "doc_007", 2),
        ("q2", "doc_015", 2),
        ("q2", "doc_022", 1),
        ("q3", "doc_042", 2),
        ("q3", "doc_043", 2),
        ("q3", "doc_044", 2),
    ]
)
SEED004_RUN = run_frame(
    {
        "q1": ["doc_003", "doc_001", "doc_007", "doc_010"],
        "q2": ["doc_022", "doc_018", "doc_025"],
        "q3": ["doc_042", "doc_050", "doc_060"],
    }
)
SEED004_CATEGORIES = {"q1": "programming", "q2": "database", "q3": "vector_db"}
SEED004_DOCS = {
    "doc_003": "Python asyncio 库提供了异步 IO 能力...",
    "doc_007": "使用 async/await 语法进行异步编程...",
    "doc_015": "Redis 支持多种过期策略，包括惰性删除...",
}


def one_relevant_at(ranks: list[int | None], depth: int = 100) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One relevant fragment per query, placed at the given rank (None = not retrieved) in a `depth`-long list."""
    qrels, lists = [], {}
    for i, rank in enumerate(ranks):
        q = f"q{i:02d}"
        qrels.append((q, f"{q}-rel", 1))
        docs = [f"{q}-junk{j:03d}" for j in range(depth)]
        if rank is not None:
            docs[rank - 1] = f"{q}-rel"
        lists[q] = docs
    return qrels_frame(qrels), run_frame(lists)


def test_seed002_high_candidate_recall_low_context_recall_is_a_ranking_problem() -> None:
    # Seed 002: recall@100 = 0.95, recall@5 = 0.55 ⇒ retrieval is fine, invest in a reranker.
    # 20 queries: 11 find their one relevant in the top 5, 8 at rank 50, 1 not at all ⇒ 19/20 and 11/20.
    qrels, run = one_relevant_at([1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1] + [50] * 8 + [None])
    d = diagnose(qrels, run, candidate_depth=100, context_depth=5)
    assert d.depth.recall_candidate == pytest.approx(0.95)
    assert d.depth.recall_context == pytest.approx(0.55)
    assert d.depth.problem == "ranking"
    assert "reranker" in d.depth.verdict and d.depth.verdict.startswith("Ranking problem")
    assert d.depth.thresholds == {"min_candidate_recall": 0.8, "min_context_share": 0.8, "min_context_ndcg": 0.5}
    assert d.depth.hopeless_queries == 1


def test_seed002_low_candidate_recall_says_do_not_touch_the_reranker() -> None:
    # Seed 002: recall@100 = 0.60 ⇒ don't touch the reranker; 40% of queries are hopeless from the start.
    qrels, run = one_relevant_at([1] * 6 + [None] * 4)
    d = diagnose(qrels, run, candidate_depth=100, context_depth=5)
    assert d.depth.recall_candidate == pytest.approx(0.60)
    assert d.depth.problem == "retrieval"
    assert "Don't touch the reranker" in d.depth.verdict and "40%" in d.depth.verdict
    assert "index, chunking, embeddings" in d.depth.verdict
    assert d.depth.hopeless_queries == 4


def test_a_20_deep_run_gets_no_retrieval_verdict_from_its_recall_at_100() -> None:
    # 10 queries, one relevant each: 5 find it at rank 1, 5 not in their 20 results. recall@100 = recall@20 =
    # 5/10 = 0.5 < 0.8, which for a 100-deep run is a retrieval problem; here ranks 21-100 were never returned.
    qrels, run = one_relevant_at([1] * 5 + [None] * 5, depth=20)
    d = diagnose(qrels, run, candidate_depth=100, context_depth=5)
    assert d.depth.recall_candidate == pytest.approx(0.5)
    assert d.depth.problem == "undetermined"
    assert d.depth.verdict.startswith("Undetermined: the run is only 20 deep, so recall@100 = 0.500 is recall@20")
    assert "Don't touch the reranker" not in d.depth.verdict
    assert d.curve.healthy is None and d.curve.verdict.startswith("undetermined: the run is only 20 deep")
    assert any("at most 20 fragments per query" in w for w in d.warnings)
    # the same grades in a 100-deep run (the 5 misses really missing from all 100): a retrieval problem
    deep_qrels, deep_run = one_relevant_at([1] * 5 + [None] * 5, depth=100)
    deep = diagnose(deep_qrels, deep_run, candidate_depth=100, context_depth=5)
    assert deep.depth.problem == "retrieval" and deep.curve.healthy is False
    # the function alone, told the depth: the same rule
    ev = evaluate(qrels, run, metrics=["recall@100", "recall@5", "ndcg@5"])
    assert two_depth_diagnosis(ev, 100, 5, run_depth=20).problem == "undetermined"
    assert two_depth_diagnosis(ev, 100, 5).problem == "retrieval"  # depth unknown: as before


def test_a_shallow_run_with_high_recall_still_clears_retrieval() -> None:
    # 9 of 10 queries have their relevant at rank 1 of 20: recall@20 = 0.9 ≥ 0.8, and recall only grows with
    # depth, so retrieval is fine at 100 too; recall@5 = 0.9 (share 1.0), nDCG@5 = 9/10 × 1 = 0.9: healthy.
    qrels, run = one_relevant_at([1] * 9 + [None], depth=20)
    d = diagnose(qrels, run, candidate_depth=100, context_depth=5)
    assert d.depth.problem == "none" and d.depth.ndcg_context == pytest.approx(0.9)


def test_seed000_high_recall50_low_ndcg5_blames_the_reranker_and_thresholds_are_settable() -> None:
    # Seed 000: "si recall@50 es alto y nDCG@5 es bajo, el reranker es el culpable". Every query has its one
    # relevant at rank 5: recall@50 = recall@5 = 1, nDCG@5 = 1/log2(6) = 0.3869 < 0.5.
    qrels, run = one_relevant_at([5] * 4, depth=50)
    d = diagnose(qrels, run, candidate_depth=50, context_depth=5)
    assert d.depth.ndcg_context == pytest.approx(0.386852807, abs=1e-9)
    assert d.depth.problem == "ranking" and "nDCG@5 = 0.387 < 0.5" in d.depth.verdict
    relaxed = diagnose(qrels, run, candidate_depth=50, context_depth=5, thresholds=Thresholds(min_context_ndcg=0.3))
    assert relaxed.depth.problem == "none"
    strict = two_depth_diagnosis(
        evaluate(qrels, run, metrics=["recall@50", "recall@5", "ndcg@5"]), 50, 5, min_candidate_recall=1.01
    )
    assert strict.problem == "retrieval" and strict.thresholds["min_candidate_recall"] == 1.01


def test_two_depth_diagnosis_names_a_missing_metric() -> None:
    ev = evaluate(SEED000_QRELS, SEED000_RUN, metrics=["recall@5"])
    with pytest.raises(ValueError, match="recall@100"):
        two_depth_diagnosis(ev, 100, 5)


def test_recall_curve_of_seed000_and_its_rule() -> None:
    # Seed 000: recall@3/5/10 = 0.25/0.50/0.75 (and recall@1 = 0: d5 is not relevant).
    ev = evaluate(SEED000_QRELS, SEED000_RUN, metrics=["recall@k"], k=(1, 3, 5, 10))
    curve = recall_curve(ev, fast_k=5, share=0.8)
    assert curve.ks == [1, 3, 5, 10]
    assert curve.recall == pytest.approx([0.0, 0.25, 0.50, 0.75])
    # 0.50 < 0.8 × 0.75 = 0.60: it rises slowly; still rising at the deepest k (0.75 − 0.50 ≥ 0.02).
    assert curve.healthy is False and curve.verdict.startswith("rises slowly")
    assert curve.flat_from == 10
    assert "recall@5 ≥ 0.8 × recall@10" in curve.rule
    assert recall_curve(ev, fast_k=5, share=0.6, min_recall=0.7).healthy is True  # 0.50 ≥ 0.6 × 0.75; 0.75 ≥ 0.7
    # With the default floor (0.8) the same curve is too low to be called healthy: 0.75 < 0.8.
    low = recall_curve(ev, fast_k=5, share=0.6)
    assert low.healthy is False and "healthy" not in low.verdict and low.verdict.startswith("too low")
    assert recall_curve(ev, fast_k=10).healthy is None  # nothing measured beyond k = 10


def test_recall_curve_that_rises_fast_and_flattens() -> None:
    # Every query's relevant at rank 1 or 2: recall@k = 1 from k = 3 on ⇒ healthy, flat from k = 3.
    qrels, run = one_relevant_at([1, 2, 1, 2])
    curve = diagnose(qrels, run).curve
    assert curve.recall[:2] == pytest.approx([0.5, 1.0])
    assert curve.healthy is True and curve.flat_from == 3
    assert curve.verdict.startswith("rises fast and flattens")


def test_low_recall_queries_reproduce_seed004_diagnose_low_recall() -> None:
    # Seed 004 (rel_level 2): recall@5 = 2/2, 0/1, 1/3 for q1..q3; only q2 is < 0.2.
    ev = evaluate(SEED004_QRELS, SEED004_RUN, metrics=["recall@5"], rel_level=2)
    (q2,) = low_recall_queries(ev, SEED004_QRELS, SEED004_RUN, k=5, threshold=0.2, rel_level=2, fragments=SEED004_DOCS)
    assert (q2.query_id, q2.recall, q2.n_relevant) == ("q2", 0.0, 1)
    # missed = relevant_doc_ids − retrieved = {doc_015}, shown with its text cut at 50 characters.
    assert [(f.doc_id, f.rank, f.grade) for f in q2.missed] == [("doc_015", None, 2)]
    assert q2.missed[0].snippet == SEED004_DOCS["doc_015"]
    assert q2.ranked_deep == []
    # top-3 non-relevant: all three retrieved (doc_022 is only partially relevant, grade 1 < 2).
    assert [(f.doc_id, f.rank, f.grade, f.snippet) for f in q2.top_nonrelevant] == [
        ("doc_022", 1, 1, None),
        ("doc_018", 2, None, None),
        ("doc_025", 3, None, None),
    ]
    assert q2.issues[0] == "1 of 1 relevant fragments not retrieved at all: doc_015"
    json.dumps(q2.to_dict(), ensure_ascii=False)


def test_low_recall_reports_relevant_ranked_beyond_ten_with_snippets() -> None:
    docs = [f"x{i:02d}" for i in range(1, 16)]  # x12 and x15 relevant, at ranks 12 and 15
    qrels = qrels_frame([("q", "x12", 1), ("q", "x15", 3), ("q", "x99", 1), ("q", "x01", 0)])
    run = run_frame({"q": docs})
    ev = evaluate(qrels, run, metrics=["recall@5"])
    texts = {"x01": "a" * 60, "x02": "short"}
    (q,) = low_recall_queries(ev, qrels, run, fragments=texts)
    assert [(f.doc_id, f.rank) for f in q.ranked_deep] == [("x12", 12), ("x15", 15)]
    assert [f.doc_id for f in q.missed] == ["x99"]
    assert [(f.doc_id, f.grade, f.snippet) for f in q.top_nonrelevant] == [
        ("x01", 0, "a" * 50 + "…"),
        ("x02", None, "short"),
        ("x03", None, None),
    ]
    assert "relevant x12 ranked 12, outside the top 10" in q.issues


def test_ranked_follows_trec_eval_order_score_desc_then_docid_desc() -> None:
    run = pd.DataFrame(
        {"query_id": ["q", "q", "q", "q"], "doc_id": ["a", "c", "b", "d"], "score": [1.0, 1.0, 2.0, 0.5]}
    )
    assert list(ranked(run)["doc_id"]) == ["b", "c", "a", "d"]
    assert list(ranked(run, depth=2)["doc_id"]) == ["b", "c"]


def test_judged_check_on_seed000_lists_the_holes() -> None:
    # Seed 000's top-10 holds d7, d3, d20 (judged) and seven unjudged fragments: judged@10 = 3/10.
    ev = evaluate(SEED000_QRELS, SEED000_RUN, metrics=["judged@10"])
    check = judged_check(ev, SEED000_QRELS, SEED000_RUN, k=10, threshold=0.9)
    assert check.judged == pytest.approx(0.3)
    assert check.flagged and check.message.startswith("Incomplete annotation: judged@10 = 0.300 < 0.9")
    assert [(p["doc_id"], p["rank"]) for p in check.unjudged] == [
        ("d5", 1),
        ("d11", 3),
        ("d2", 5),
        ("d9", 7),
        ("d14", 8),
        ("d1", 9),
        ("d6", 10),
    ]
    assert not judged_check(ev, SEED000_QRELS, SEED000_RUN, k=10, threshold=0.3).flagged


def test_unjudged_pairs_ignore_run_queries_outside_the_qrels() -> None:
    run = pd.concat([SEED000_RUN, run_frame({"other": ["z1", "z2"]})], ignore_index=True)
    holes = unjudged_pairs(SEED000_QRELS, run, k=3)
    assert list(holes.itertuples(index=False, name=None)) == [("q", "d5", 1), ("q", "d11", 3)]


def test_category_breakdown_matches_seed004() -> None:
    # Seed 004 category_breakdown with rel_level 2: programming 1 query, recall@5 1.0, MRR 1.0;
    # database 1 query, 0.0, 0.0; vector_db 1 query, recall@5 1/3, MRR 1.0 (doc_042 at rank 1).
    ev = evaluate(SEED004_QRELS, SEED004_RUN, metrics=["recall@5", "mrr"], rel_level=2, categories=SEED004_CATEGORIES)
    table = category_breakdown(ev)
    rows = {r["category"]: r for r in table.rows}
    assert rows["programming"] == {"category": "programming", "queries": 1, "recall@5": 1.0, "mrr": 1.0}
    assert rows["database"] == {"category": "database", "queries": 1, "recall@5": 0.0, "mrr": 0.0}
    assert rows["vector_db"]["recall@5"] == pytest.approx(1 / 3) and rows["vector_db"]["mrr"] == 1.0
    assert table.note.startswith("recall@5 ranges from 0.000 (database, 1 query) to 1.000 (programming, 1 query)")
    with pytest.raises(ValueError, match="no categories"):
        category_breakdown(Evaluation("x", ev.per_query, ev.mean))


def test_diagnose_is_json_able_and_complete_for_seed004() -> None:
    d = diagnose(
        SEED004_QRELS,
        SEED004_RUN,
        fragments=SEED004_DOCS,
        rel_level=2,
        categories=SEED004_CATEGORIES,
        name="mock_retriever",
    )
    out = json.loads(json.dumps(d.to_dict(), ensure_ascii=False))
    assert out["run"] == "mock_retriever" and out["n_queries"] == 3
    assert [q["query_id"] for q in out["low_recall"]] == ["q2"]
    assert out["mean"]["recall@5"] == pytest.approx(4 / 9)  # (1 + 0 + 1/3) / 3
    assert any("at most 4 fragments per query" in w for w in out["warnings"])
    assert out["thresholds"]["low_recall"] == 0.2


def write_trec(tmp_path, qrels: pd.DataFrame, run: pd.DataFrame) -> tuple[str, str]:
    qp, rp = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.itertuples(index=False)))
    lines = []
    for q, grp in run.groupby("query_id", sort=False):
        lines += [
            f"{q} Q0 {d} {i} {s} sys\n"
            for i, (d, s) in enumerate(zip(grp["doc_id"], grp["score"], strict=True), start=1)
        ]
    rp.write_text("".join(lines))
    return str(qp), str(rp)


def test_cli_diagnose_table_and_json(tmp_path, capsys) -> None:
    qp, rp = write_trec(tmp_path, SEED004_QRELS, SEED004_RUN)
    frags = tmp_path / "corpus.jsonl"
    frags.write_text(
        "".join(json.dumps({"_id": k, "text": v}, ensure_ascii=False) + "\n" for k, v in SEED004_DOCS.items()),
        encoding="utf-8",
    )
    assert main(["diagnose", qp, rp, "--fragments", str(frags), "--rel-level", "2", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["low_recall"][0]["missed"][0]["snippet"] == SEED004_DOCS["doc_015"]
    # recall@100 = 4/9 < 0.8, but the run is only 4 deep: no retrieval verdict from ranks it never returned
    assert out["depth"]["problem"] == "undetermined"
    assert out["depth"]["verdict"].startswith("Undetermined: the run is only 4 deep, so recall@100 = 0.444")
    assert main(["diagnose", qp, rp, "--context-depth", "5"]) == 0
    text = capsys.readouterr().out
    assert "Two-depth diagnosis" in text and "Incomplete annotation" in text


def test_cli_diagnose_bad_file_exits_2_naming_the_line(tmp_path, capsys) -> None:
    qp, _ = write_trec(tmp_path, SEED004_QRELS, SEED004_RUN)
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 Q0 doc_003 1 2.0 sys\nq1 Q0 doc_001 2 oops sys\n")
    assert main(["diagnose", qp, str(bad)]) == 2
    assert f"{bad}:2:" in capsys.readouterr().err


# --- Wording: findings that do not contradict their own numbers ---------------------------------------------


def one_query_of_32() -> tuple[pd.DataFrame, pd.DataFrame]:
    """32 qrels queries, each with one judged relevant fragment; the run answers only q00, fully judged."""
    qrels = qrels_frame([(f"q{i:02d}", f"d{i:02d}", 1) for i in range(32)] + [("q00", "x", 0)])
    return qrels, run_frame({"q00": ["d00", "x"]})


def test_missing_queries_are_not_reported_as_unjudged_fragments() -> None:
    # The run covers 1 of 32 queries and both its fragments are judged: judged@10 over what it answers = 1.
    qrels, run = one_query_of_32()
    d = diagnose(qrels, run)
    assert d.judged.judged == 1.0 and not d.judged.flagged and d.judged.unjudged == []
    assert "never judged" not in d.judged.message and "Judge the 0" not in d.judged.message
    assert "over the 1 query" in d.judged.message
    assert d.coverage.flagged and d.coverage.n_answered == 1 and len(d.coverage.missing) == 31
    assert d.coverage.message.startswith("Missing queries:") and "31 of 32 qrels queries" in d.coverage.message
    assert json.loads(json.dumps(d.to_dict()))["coverage"]["missing"][:2] == ["q01", "q02"]


def test_a_fully_covered_run_has_no_missing_query_finding() -> None:
    check = diagnose(SEED000_QRELS, SEED000_RUN).coverage
    assert not check.flagged and check.missing == []


def test_judged_counts_unjudged_holes_only_in_answered_queries() -> None:
    # q answered: top-10 = seed 000's ranking, 3 of 10 judged; q2 in the qrels but missing from the run.
    qrels = pd.concat([SEED000_QRELS, qrels_frame([("q2", "z", 1)])], ignore_index=True)
    ev = evaluate(qrels, SEED000_RUN, metrics=["judged@10"])
    check = judged_check(ev, qrels, SEED000_RUN, k=10)
    assert check.judged == pytest.approx(0.3)  # not (0.3 + 0) / 2
    assert check.flagged and "Judge the 7 unjudged (query, fragment) pairs" in check.message


def test_low_recall_curve_is_never_called_healthy() -> None:
    # 40 queries with 40 relevant fragments each; the run finds one of them at rank 1 and one at rank 40:
    # recall@10 = 1/40 = 0.025, recall@100 = 2/40 = 0.05 ⇒ recall@10 is 50% of the deepest (not fast), and
    # with only the rank-1 hit recall@10 = recall@100 = 0.025: fast by shape, far too low by level.
    rows, runs = [], {}
    for i in range(40):
        rel = [f"r{i}_{j}" for j in range(40)]
        rows += [(f"q{i}", d, 1) for d in rel]
        runs[f"q{i}"] = [rel[0]] + [f"junk{i}_{j}" for j in range(99)]
    d = diagnose(qrels_frame(rows), run_frame(runs))
    assert d.curve.recall[d.curve.ks.index(10)] == pytest.approx(0.025)
    assert d.curve.healthy is False
    assert "healthy" not in d.curve.verdict and "0.025 < 0.8" in d.curve.verdict.replace("recall@100 = ", "")


def test_no_range_sentence_for_one_category() -> None:
    cats = {"q": "brewing"}
    ev = evaluate(SEED000_QRELS, SEED000_RUN, metrics=["recall@5", "mrr"], categories=cats)
    assert category_breakdown(ev).note == ""


def test_equal_categories_are_not_a_range() -> None:
    qrels = qrels_frame([("a", "d1", 1), ("b", "d2", 1)])
    ev = evaluate(qrels, run_frame({"a": ["d1"], "b": ["d2"]}), metrics=["recall@5"], categories={"a": "x", "b": "y"})
    assert category_breakdown(ev).note == "recall@5 is 1.000 in all 2 categories"


def test_cli_diagnose_prints_coverage_and_judged_apart(tmp_path, capsys) -> None:
    qp, rp = write_trec(tmp_path, *one_query_of_32())
    assert main(["diagnose", qp, rp]) == 0
    out = capsys.readouterr().out
    assert "Missing queries: run.txt returns nothing for 31 of 32" in out
    assert "judged@10 = 1.000 ≥ 0.9 over the 1 query run.txt answers" in out

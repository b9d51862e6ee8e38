"""evaluate_retriever on seed 004's demo (three QueryCases, mock_retriever), concurrency, failures, files."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import numpy as np
import pandas as pd
import pytest

from eval_core.errors import InputError
from eval_core.io.formats import read_run
from eval_core.ranking.evaluation import evaluate
from eval_core.ranking.retriever import aevaluate_retriever, evaluate_retriever, ranking

# Seed 004's test_cases: relevant_doc_ids graded 2, partially_relevant_ids graded 1 (its relevance_map).
QRELS = pd.DataFrame(
    [
        ("q1", "doc_003", 2),
        ("q1", "doc_007", 2),
        ("q2", "doc_015", 2),
        ("q2", "doc_022", 1),
        ("q3", "doc_042", 2),
        ("q3", "doc_043", 2),
        ("q3", "doc_044", 2),
    ],
    columns=["query_id", "doc_id", "grade"],
).astype({"grade": "int64"})
QUERIES = {"q1": "如何在 Python 中使用异步 IO", "q2": "Redis 缓存过期策略", "q3": "Milvus 向量检索性能优化"}
MOCK_RESULTS = {
    "如何在 Python 中使用异步 IO": ["doc_003", "doc_001", "doc_007", "doc_010"],
    "Redis 缓存过期策略": ["doc_022", "doc_018", "doc_025"],
    "Milvus 向量检索性能优化": ["doc_042", "doc_050", "doc_060"],
}
SEED_METRICS = ["recall@1", "recall@3", "recall@5", "recall@10", "mrr", "ndcg_exp@5", "success@10"]


async def mock_retriever(query: str) -> list[str]:
    """Seed 004's mock_retriever, verbatim in behaviour."""
    return MOCK_RESULTS.get(query, [])


def check_seed004_means(mean: dict[str, float]) -> None:
    """Seed 004's overall_metrics for its demo, worked by hand from the seed's own formulas (rel_level 2).

    Recall@k = |top-k ∩ relevant_doc_ids| / |relevant_doc_ids|:
      q1 {003, 007} in [003, 001, 007, 010]: @1 1/2, @3 @5 @10 1;  q2 {015}: 0 everywhere;
      q3 {042, 043, 044} in [042, 050, 060]: 1/3 at every k.
      ⇒ Recall@1 = (1/2 + 0 + 1/3)/3 = 5/18 = 0.2778; Recall@3 = Recall@5 = Recall@10 = (1 + 0 + 1/3)/3 = 4/9.
    MRR: q1 1/1, q2 0, q3 1/1 ⇒ 2/3.  Hit rate (any relevant retrieved): q1, q3 ⇒ 2/3.
    NDCG@5 with gain 2^rel − 1 (relevant 2 → 3, partial 1 → 1), discount log2(i + 1):
      q1 DCG = 3/1 + 3/2 = 4.5, IDCG = 3 + 3/log2 3 = 4.892789 ⇒ 0.919720
      q2 DCG = 1 (doc_022 at 1), IDCG = 3 + 1/log2 3 = 3.630930 ⇒ 0.275412
      q3 DCG = 3, IDCG = 3 + 3/log2 3 + 3/2 = 6.392789 ⇒ 0.469279      ⇒ mean 0.554804
    """
    assert mean["recall@1"] == pytest.approx(5 / 18)
    for k in (3, 5, 10):
        assert mean[f"recall@{k}"] == pytest.approx(4 / 9)
    assert mean["mrr"] == pytest.approx(2 / 3)
    assert mean["success@10"] == pytest.approx(2 / 3)
    assert mean["ndcg_exp@5"] == pytest.approx(0.554804, abs=1e-6)


def test_seed004_demo_with_its_async_mock_retriever(tmp_path) -> None:
    path = tmp_path / "mock.run"
    result = evaluate_retriever(
        QRELS, QUERIES, mock_retriever, metrics=SEED_METRICS, rel_level=2, run_path=path, progress=False
    )
    check_seed004_means(result.evaluation.mean)
    assert result.errors == {} and result.evaluation.name == "mock_retriever"
    assert list(result.run["doc_id"][result.run["query_id"] == "q1"]) == MOCK_RESULTS[QUERIES["q1"]]
    # The kept TREC file is a run like any other: reading it back gives the same evaluation.
    again = evaluate(QRELS, str(path), metrics=SEED_METRICS, rel_level=2)
    pd.testing.assert_frame_equal(again.per_query, result.evaluation.per_query)
    assert len(read_run(str(path))) == 10
    assert result.run_path == str(path)
    json.dumps(result.to_dict(per_query=True), ensure_ascii=False)


def test_sync_retriever_returning_id_score_pairs_from_a_queries_file(tmp_path) -> None:
    queries = tmp_path / "queries.jsonl"  # BEIR queries.jsonl: _id, text
    queries.write_text(
        "".join(json.dumps({"_id": q, "text": t}, ensure_ascii=False) + "\n" for q, t in QUERIES.items()),
        encoding="utf-8",
    )

    def scored(query: str) -> list[tuple[str, float]]:
        ids = MOCK_RESULTS[query]
        return [(d, 0.9 - 0.1 * i) for i, d in enumerate(ids)]

    result = evaluate_retriever(QRELS, str(queries), scored, metrics=SEED_METRICS, rel_level=2, progress=False)
    check_seed004_means(result.evaluation.mean)
    assert result.run["score"].iloc[0] == pytest.approx(0.9)


def test_retriever_failures_are_reported_per_query_and_score_zero() -> None:
    def flaky(query: str) -> list[str]:
        if "Redis" in query:
            raise ConnectionError("vector store timed out")
        return MOCK_RESULTS[query]

    result = evaluate_retriever(
        QRELS, {**QUERIES, "q9": "not golden"}, flaky, metrics=["recall@5"], rel_level=2, progress=False
    )
    assert result.errors == {"q2": "ConnectionError: vector store timed out"}
    assert result.evaluation.per_query.loc["q2", "recall@5"] == 0.0
    assert result.evaluation.per_query.loc["q1", "recall@5"] == 1.0
    assert result.evaluation.warnings[0].startswith("1 of 3 queries got no ranking from the retriever")
    assert "q2 (ConnectionError: vector store timed out)" in result.evaluation.warnings[0]


def test_bad_answers_and_missing_query_texts_are_errors_not_silence() -> None:
    answers = {"q1": "doc_003", "q2": ["doc_015", "doc_015"], "q3": [("doc_042", 1.0)]}

    def bad(query: str):
        return answers[next(q for q, t in QUERIES.items() if t == query)]

    result = evaluate_retriever(QRELS, QUERIES, bad, metrics=["recall@5"], progress=False)
    assert result.errors["q1"].startswith("TypeError: retriever must return a list")
    assert result.errors["q2"] == "ValueError: fragment 'doc_015' returned twice"
    assert "q3" not in result.errors
    partial = evaluate_retriever(QRELS, {"q1": QUERIES["q1"]}, mock_retriever, metrics=["recall@5"], progress=False)
    assert partial.errors == {"q2": "no query text given", "q3": "no query text given"}


def test_a_retriever_that_fails_everywhere_raises_with_the_failures() -> None:
    def broken(query: str) -> list[str]:
        raise KeyError("index not loaded")

    with pytest.raises(RuntimeError, match=r"no fragment for any of the 3 golden queries.*q1 \(KeyError"):
        evaluate_retriever(QRELS, QUERIES, broken, progress=False)


def test_ranking_normalises_ids_and_pairs() -> None:
    assert ranking(["a", 7]) == [("a", None), ("7", None)]
    assert ranking([("a", 2), ["b", 1.5]]) == [("a", 2.0), ("b", 1.5)]
    assert ranking(np.array([3, 1])) == [("3", None), ("1", None)]
    with pytest.raises(TypeError, match="expected an id"):
        ranking([True])
    with pytest.raises(ValueError, match="non-finite score"):
        ranking([("a", float("nan"))])
    with pytest.raises(TypeError, match="mixed"):
        ranking(["a", ("b", 1.0)])


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_concurrency_is_bounded_and_used(kind: str) -> None:
    many_qrels = pd.DataFrame({"query_id": [f"q{i}" for i in range(24)], "doc_id": "d", "grade": 1})
    texts = {f"q{i}": f"text {i}" for i in range(24)}
    active, peak = 0, 0
    lock = threading.Lock()

    def enter() -> None:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)

    def leave() -> None:
        nonlocal active
        with lock:
            active -= 1

    async def slow_async(query: str) -> list[str]:
        enter()
        await asyncio.sleep(0.02)
        leave()
        return ["d"]

    def slow_sync(query: str) -> list[str]:
        enter()
        time.sleep(0.02)
        leave()
        return ["d"]

    retriever = slow_async if kind == "async" else slow_sync
    result = evaluate_retriever(many_qrels, texts, retriever, metrics=["recall@1"], concurrency=4, progress=False)
    assert result.evaluation.mean["recall@1"] == 1.0
    # 24 calls of 20 ms: the gate fills up and never lets a fifth through. The event loop starts the first four
    # coroutines in one pass, so async peaks at exactly 4; threads may start late on a loaded machine.
    assert peak == 4 if kind == "async" else 1 < peak <= 4


def test_works_inside_a_running_event_loop() -> None:
    async def notebook_cell():
        inner = evaluate_retriever(QRELS, QUERIES, mock_retriever, metrics=SEED_METRICS, rel_level=2, progress=False)
        awaited = await aevaluate_retriever(
            QRELS, QUERIES, mock_retriever, metrics=SEED_METRICS, rel_level=2, progress=False
        )
        return inner, awaited

    inner, awaited = asyncio.run(notebook_cell())
    check_seed004_means(inner.evaluation.mean)
    check_seed004_means(awaited.evaluation.mean)


def test_queries_files_are_read_as_qrelkit_import_queries_reads_them(tmp_path) -> None:
    """MS MARCO's headerless qid<TAB>text TSV, TREC topics and a CSV header with `qid`/`query` (none of which the
    retriever's old private reader took) give the same seed 004 numbers as the dict."""
    tsv = tmp_path / "queries.dev.tsv"
    tsv.write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()), encoding="utf-8")
    topics = tmp_path / "topics.txt"
    topics.write_text(
        "".join(
            f"<top>\n<num> Number: {q}\n<title> {t}\n<desc> Description:\nabout {q}\n</top>\n"
            for q, t in QUERIES.items()
        ),
        encoding="utf-8",
    )
    named = tmp_path / "queries.csv"
    named.write_text("qid,query\n" + "".join(f"{q},{t}\n" for q, t in QUERIES.items()), encoding="utf-8")
    for path in (tsv, topics, named):
        result = evaluate_retriever(QRELS, path, mock_retriever, metrics=SEED_METRICS, rel_level=2, progress=False)
        assert result.errors == {}, path.name
        check_seed004_means(result.evaluation.mean)


@pytest.mark.parametrize(
    ("name", "text", "where", "problem"),
    [
        (
            "dup.jsonl",
            '{"_id": "q1", "text": "a"}\n\n{"_id": "q1", "text": "b"}\n',
            "dup.jsonl:3",
            "duplicate query id 'q1' (first at line 1)",
        ),
        (
            "notext.jsonl",
            '{"_id": "q1", "text": "a"}\n{"_id": "q2"}\n',
            "notext.jsonl:2",
            "query text is missing or empty",
        ),
        ("space.tsv", "q1\ta\nq 2\tb\n", "space.tsv:2", "query id 'q 2' contains whitespace"),
        ("three.tsv", "q1\ta\nq2\tb\tc\n", "three.tsv:2", "expected 2 tab-separated fields (id, text), found 3"),
    ],
)
def test_a_bad_queries_line_is_named_by_file_and_line(tmp_path, name: str, text: str, where: str, problem: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        evaluate_retriever(QRELS, path, mock_retriever, progress=False)
    assert str(caught.value).startswith(f"{path.parent}/{where}: {problem}")

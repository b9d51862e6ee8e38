"""Pooling: TREC depth-k union of stored runs, BM25 for uncovered queries, dedup by id and text, idempotence."""

from __future__ import annotations

import json

import pytest

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.pooling import pool, tokenize
from tests.helpers import pairs_of, seed

TEXTS = {f"d{i}": f"fragment number {i} about topic {i % 3}" for i in range(1, 9)}
RUNS = {
    "A": {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d5", "d6"]},
    "B": {"q1": ["d3", "d5", "d1"], "q2": ["d6", "d7", "d8"]},
}


def test_depth_k_union_with_provenance(engine, project):
    # TREC pooling (Voorhees & Harman): the pool of a query is the union of every run's top-k.
    # Depth 2 by hand: q1 = A{d1,d2} ∪ B{d3,d5}; q2 = A{d5,d6} ∪ B{d6,d7}.
    seed(engine, project.id, {"q1": "topic one", "q2": "topic two"}, TEXTS, RUNS)
    report = pool(engine, "demo", depth=2, bm25=0, actor=OPERATOR)
    assert pairs_of(engine, project.id) == {
        ("q1", "d1"): (["A"], 1),
        ("q1", "d2"): (["A"], 2),
        ("q1", "d3"): (["B"], 1),
        ("q1", "d5"): (["B"], 2),
        ("q2", "d5"): (["A"], 1),
        ("q2", "d6"): (["A", "B"], 1),
        ("q2", "d7"): (["B"], 2),
    }
    assert (report.created, report.existing, report.duplicates) == (7, 0, 0)
    # Each new pair is credited once, to the source ranking it best: q2/d6 is B's rank 1 and A's rank 2, so B.
    assert report.per_source == {
        "A": {"candidates": 4, "created": 3, "found_new": 4},
        "B": {"candidates": 4, "created": 4, "found_new": 4},
    }
    assert sum(s["created"] for s in report.per_source.values()) == report.created


def test_repooling_is_idempotent_and_only_adds(engine, project):
    seed(engine, project.id, {"q1": "topic one", "q2": "topic two"}, TEXTS, RUNS)
    pool(engine, "demo", depth=2, bm25=0, actor=OPERATOR)
    again = pool(engine, "demo", depth=2, bm25=0, actor=OPERATOR)
    assert (again.created, again.existing, again.provenance_updated) == (0, 7, 0)
    deeper = pool(engine, "demo", depth=3, bm25=0, actor=OPERATOR)
    # Depth 3 adds q1: d3 from A (already there from B, provenance grows), d1 from B (same); q2: d8 from B.
    assert deeper.created == 1
    pairs = pairs_of(engine, project.id)
    assert pairs[("q2", "d8")] == (["B"], 3)
    assert pairs[("q1", "d3")] == (["A", "B"], 1)
    assert pairs[("q1", "d1")] == (["A", "B"], 1)
    assert deeper.provenance_updated == 2
    assert len(pairs) == 8


def test_pooling_chosen_runs_only(engine, project):
    seed(engine, project.id, {"q1": "topic one", "q2": "topic two"}, TEXTS, RUNS)
    pool(engine, "demo", depth=1, runs=["B"], bm25=0, actor=OPERATOR)
    assert set(pairs_of(engine, project.id)) == {("q1", "d3"), ("q2", "d6")}
    with pytest.raises(LookupError, match="no stored run named 'C'"):
        pool(engine, "demo", depth=1, runs=["C"], actor=OPERATOR)


def test_identical_texts_become_one_pair_and_are_reported(engine, project):
    texts = {"x1": "the same words", "x2": "the same words", "x3": "something else"}
    seed(engine, project.id, {"q1": "words"}, texts, {"A": {"q1": ["x2", "x1", "x3"]}, "B": {"q1": ["x1"]}})
    report = pool(engine, "demo", depth=3, bm25=0, actor=OPERATOR)
    pairs = pairs_of(engine, project.id)
    # x2 comes first (A rank 1), so x1 (A rank 2, B rank 1) folds into it, provenance merged.
    assert pairs == {("q1", "x2"): (["A", "B"], 1), ("q1", "x3"): (["A"], 3)}
    assert report.duplicates == 1 and report.duplicate_pairs == [("q1", "x2", "x1")]


def test_unknown_documents_are_counted_and_named_not_pooled(engine, project):
    seed(
        engine,
        project.id,
        {"q1": "topic", "q2": "other"},
        {"d1": "a text"},
        {"A": {"q1": ["d1", "ghost"], "q2": ["spook", "ghost"]}},
    )
    report = pool(engine, "demo", depth=2, bm25=0, actor=OPERATOR)
    assert report.created == 1 and report.unknown_docs == {"A": {"count": 2, "examples": ["ghost", "spook"]}}


def test_bm25_for_queries_without_runs(engine, project):
    texts = {
        "f1": "python asyncio event loop tutorial",
        "f2": "python packaging guide",
        "f3": "redis cache eviction",
        "f4": "gardening for beginners",
    }
    seed(engine, project.id, {"q1": "python asyncio", "q2": "redis cache"}, texts, {"A": {"q2": ["f3"]}})
    report = pool(engine, "demo", depth=3, actor=OPERATOR)
    pairs = pairs_of(engine, project.id)
    # q1 has no run: BM25 ranks f1 (both terms) above f2 (one term); f3/f4 share no term (score 0, not pooled).
    assert pairs[("q1", "f1")] == (["bm25"], 1)
    assert pairs[("q1", "f2")] == (["bm25"], 2)
    assert ("q1", "f3") not in pairs and ("q1", "f4") not in pairs
    # q2 is covered by run A, so BM25 is not asked for it by default.
    assert pairs[("q2", "f3")] == (["A"], 1) and len(pairs) == 3
    assert report.per_source["bm25"] == {"candidates": 2, "created": 2, "found_new": 2}
    everyone = pool(engine, "demo", depth=1, bm25=2, actor=OPERATOR)
    assert pairs_of(engine, project.id)[("q2", "f3")] == (["A", "bm25"], 1)
    assert everyone.created == 0 and everyone.provenance_updated == 1


def test_bm25_matches_cjk_text(engine, project):
    texts = {"c1": "向量搜索的召回率评测", "c2": "Python 异步编程教程", "c3": "gardening"}
    seed(engine, project.id, {"q1": "召回率"}, texts)
    pool(engine, "demo", depth=2, actor=OPERATOR)
    assert set(pairs_of(engine, project.id)) == {("q1", "c1")}


def test_tokenize_splits_cjk_and_lowercases():
    assert tokenize("Recall@K 召回率") == ["recall", "k", "召", "回", "率"]


def test_depth_must_be_positive(engine, project):
    with pytest.raises(ValueError, match="depth must be at least 1"):
        pool(engine, "demo", depth=0, actor=OPERATOR)
    with pytest.raises(LookupError, match="no project named 'nope'"):
        pool(engine, "nope", depth=1, actor=OPERATOR)


def test_cli_pool(engine, project, store_url, capsys):
    seed(engine, project.id, {"q1": "topic one", "q2": "topic two"}, TEXTS, RUNS)
    assert (
        main(["pool", "--project", "demo", "--depth", "2", "--bm25", "0", "--db", store_url, "--format", "json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["created"] == 7
    assert main(["pool", "--project", "demo", "--depth", "2", "--run", "Z", "--db", store_url]) == 2
    assert "no stored run named 'Z'" in capsys.readouterr().err

"""A release's reliability from the store: the pool's recorded sources decide each run's own pairs
(SQLite and PostgreSQL)."""

from __future__ import annotations

import json

import pytest

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.pooling import pool
from db.releases import create_release
from db.reliability import NO_RUNS, project_reliability, release_sentence
from eval_core.reliability import Settings
from tests.helpers import judge, seed

TEXTS = {d: f"text {d}" for d in "abcdefgx"}
RUNS = {"A": {"q1": ["a", "b", "c"], "q2": ["e", "f"]}, "B": {"q1": ["a", "d", "x"], "q2": ["f", "g"]}}
GRADES = {("q1", "a"): 2, ("q1", "b"): 1, ("q1", "c"): 0, ("q1", "d"): 1, ("q2", "e"): 1, ("q2", "f"): 0}


def _released(engine, project) -> None:
    """The hand-built case of tests/eval_core/test_reliability.py pooled at depth 3 from runs A and B, x and g left
    unjudged, released."""
    seed(engine, project.id, {"q1": "one", "q2": "two"}, TEXTS, RUNS)
    pool(engine, "demo", depth=3, bm25=0, actor=OPERATOR)
    judge(engine, project.id, {pair: {"ann": g} for pair, g in GRADES.items()})
    create_release(engine, "demo", actor=OPERATOR)


def test_pool_bias_from_the_pool_sources(engine, project):
    """Same numbers as the file case (tests/eval_core/test_reliability.py derives them): P@3 drops A 1/3, B 1/6."""
    _released(engine, project)
    report = project_reliability(engine, "demo", metrics=["P@3"], settings=Settings(resamples=50, judged_k=3))
    m = report.metrics[0]
    assert {b.run: (b.own_pairs, b.drop) for b in m.pool_bias} == {
        "A": (3, pytest.approx(1 / 3)),
        "B": (1, pytest.approx(1 / 6)),
    }
    assert m.judged == pytest.approx({"A": 1.0, "B": 7 / 12})
    assert report.source == "release 1 of demo" and report.pooled == ["A", "B"]
    assert "Runs lose up to" in release_sentence(engine, "demo", 1)


def test_no_runs_no_report(engine, project):
    """No stored run: the report refuses, naming the way out; the card's sentence says so
    (tests/db/test_release_reliability.py)."""
    seed(engine, project.id, {"q1": "one"}, TEXTS)
    judge(engine, project.id, {("q1", "a"): {"ann": 2}})
    create_release(engine, "demo", actor=OPERATOR)
    assert release_sentence(engine, "demo", 1) == NO_RUNS
    with pytest.raises(ValueError, match="no stored runs"):
        project_reliability(engine, "demo")


def test_cli_project(engine, project, store_url, capsys):
    _released(engine, project)
    assert (
        main(
            [
                "reliability",
                "--project",
                "demo",
                "--metric",
                "P@3",
                "--resamples",
                "50",
                "--format",
                "json",
                "--db",
                store_url,
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["source"] == "release 1 of demo"
    assert max(b["drop"] for b in out["metrics"][0]["pool_bias"]) == pytest.approx(1 / 3)
    assert main(["reliability", "--project", "demo", "--release", "2", "--db", store_url]) == 2
    assert "has no release 2" in capsys.readouterr().err

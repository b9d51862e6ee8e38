"""Every release card carries the release's reliability sentence and the numbers behind it (SQLite and
PostgreSQL): the numbers are pytrec_eval's per-query nDCG@10, statsmodels' two-way ANOVA and TTestPower, and
Zobel's leave-one-run-out drop computed here by hand; the rest equals eval_core.reliability on the same data."""

from __future__ import annotations

import json
import math
import random
import statistics

import pandas as pd
import pytest
import pytrec_eval
import sqlalchemy as sa
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.power import TTestPower

from db.accounts.permissions import OPERATOR
from db.pooling import pool
from db.releases import RELEASE_STEPS, create_release, release_files
from db.reliability import (
    CARD_MIN_RESAMPLES,
    CARD_RESAMPLES,
    NO_RUNS,
    card_settings,
    project_reliability,
    release_sentence,
)
from db.store.models import Release
from eval_core.reliability import reliability
from tests.helpers import judge, seed

N_QUERIES, N_FRAGMENTS, DEPTH = 12, 8, 3
QUERIES = {f"q{i:02d}": f"query {i}" for i in range(N_QUERIES)}
TEXTS = {f"{q}-f{j}": f"fragment {j} of {q}" for q in QUERIES for j in range(N_FRAGMENTS)}


def _world(seed_: int = 5) -> tuple[dict[tuple[str, str], int], dict[str, dict[str, list[str]]]]:
    """True grades 0-3 for every (query, fragment) (each query has a fragment graded 3), and three runs of rising
    quality ranking all of a query's fragments: A at random, B and C by grade plus less and less noise."""
    rng = random.Random(seed_)
    grades = {}
    runs: dict[str, dict[str, list[str]]] = {"A": {}, "B": {}, "C": {}}
    for q in QUERIES:
        frags = [f"{q}-f{j}" for j in range(N_FRAGMENTS)]
        for j, f in enumerate(frags):
            grades[(q, f)] = 3 if j == 0 else rng.choice([0, 0, 0, 1, 1, 2])
        for name, noise in (("A", None), ("B", 2.5), ("C", 1.0)):
            keys = {f: rng.random() if noise is None else -grades[(q, f)] + rng.gauss(0, noise) for f in frags}
            runs[name][q] = sorted(frags, key=keys.__getitem__)
    return grades, runs


def _top(runs: dict[str, dict[str, list[str]]]) -> dict[str, set[tuple[str, str]]]:
    """Each run's depth-DEPTH pool contribution: its top DEPTH fragments of every query."""
    return {name: {(q, f) for q, ranked in ranking.items() for f in ranked[:DEPTH]} for name, ranking in runs.items()}


def _released(engine, project, names=("A", "B", "C")) -> tuple[dict, dict]:
    """The world's runs stored and pooled at depth DEPTH, every pooled pair graded by one annotator with its true
    grade, released; returns (the released grades, the runs)."""
    grades, runs = _world()
    runs = {n: runs[n] for n in names}
    seed(engine, project.id, QUERIES, TEXTS, runs)
    pool(engine, "demo", depth=DEPTH, bm25=0, actor=OPERATOR)
    pooled = set().union(*_top(runs).values())
    released = {pair: grades[pair] for pair in sorted(pooled)}
    judge(engine, project.id, {pair: {"ann": g} for pair, g in released.items()})
    return released, runs


def _ndcg10(released: dict[tuple[str, str], int], runs: dict[str, dict[str, list[str]]]) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query ndcg_cut_10 of every run (gains = grades on the scale 0-3; scores 100 − rank, as the
    store keeps them)."""
    qrels: dict[str, dict[str, int]] = {}
    for (q, f), g in released.items():
        qrels.setdefault(q, {})[f] = g
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
    out = {}
    for name, ranking in runs.items():
        run = {q: {f: float(100 - r) for r, f in enumerate(ranked, start=1)} for q, ranked in ranking.items()}
        scored = evaluator.evaluate(run)
        out[name] = {q: scored[q]["ndcg_cut_10"] if q in scored else 0.0 for q in QUERIES}
    return out


def _three(x: float) -> str:
    """A difference as the sentence writes it (three decimals, trailing zeros dropped)."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


def test_the_card_carries_the_sentence_and_the_numbers_behind_it(engine, project):
    released, runs = _released(engine, project)
    info = create_release(engine, "demo", actor=OPERATOR)
    entry = info.card["reliability"]
    m = entry["metrics"][0]

    per_query = _ndcg10(released, runs)
    frame = pd.DataFrame(
        [{"run": n, "query": q, "score": s} for n, scores in per_query.items() for q, s in scores.items()]
    )
    variance = 2 * anova_lm(ols("score ~ C(run) + C(query)", data=frame).fit()).loc["Residual", "mean_sq"]
    assert m["variance"] == pytest.approx(variance, rel=1e-9)
    assert m["variance_source"] == "2 × residual variance of the two-way ANOVA (runs × queries)"
    size = TTestPower().solve_power(effect_size=0.02 / math.sqrt(variance), alpha=0.05, power=0.8)
    assert m["topic_set_size"] == pytest.approx(size, rel=1e-6) and m["needed"] == math.ceil(size)
    detectable = TTestPower().solve_power(nobs=N_QUERIES, alpha=0.05, power=0.8) * math.sqrt(variance)
    assert m["detectable"] == pytest.approx(detectable, rel=1e-4)
    assert m["means"] == pytest.approx({n: sum(s.values()) / N_QUERIES for n, s in per_query.items()}, rel=1e-12)

    # Zobel's test by hand: a run's own pairs are the pooled pairs no other run's top 3 holds.
    top = _top(runs)
    drops = {}
    for name in runs:
        own = top[name] - set().union(*(top[o] for o in runs if o != name))
        kept = {pair: g for pair, g in released.items() if pair not in own}
        without = _ndcg10(kept, {name: runs[name]})[name]
        drops[name] = (len(own), sum(per_query[name].values()) / N_QUERIES - sum(without.values()) / N_QUERIES)
    assert {b["run"]: (b["own_pairs"], pytest.approx(b["drop"], abs=1e-12)) for b in m["pool_bias"]} == drops
    worst = max(d for _, d in drops.values())
    assert worst > 0 and m["max_drop"] == pytest.approx(worst, abs=1e-12)

    assert m["needed"] > N_QUERIES  # so the sentence says "needs about"
    expected = (
        f"{N_QUERIES} queries detect {_three(detectable)} ndcg@10 with power 0.8; 0.02 needs about "
        f"{math.ceil(size)}. Runs lose up to {_three(worst)} when their own pairs are left out: an unpooled "
        "run may be underrated by that much."
    )
    assert entry["sentence"] == m["sentence"] == expected
    assert entry["runs"] == entry["pooled"] == ["A", "B", "C"]
    assert entry["source"] == "release 1 of demo"

    # The rest is eval_core's report on the same data (the release's qrels, the runs, their top-3 pools).
    qrels = pd.DataFrame([(q, f, g) for (q, f), g in released.items()], columns=["query_id", "doc_id", "grade"])
    run_frames = {
        n: pd.DataFrame(
            [(q, f, float(100 - r)) for q, ranked in ranking.items() for r, f in enumerate(ranked, start=1)],
            columns=["query_id", "doc_id", "score"],
        )
        for n, ranking in runs.items()
    }
    report = reliability(
        qrels, run_frames, ["ndcg@10"], pool_depth=DEPTH, scale=(0, 3), settings=card_settings(3, N_QUERIES)
    )
    ours = report.metrics[0].to_dict()
    assert entry["settings"] == report.settings.to_dict() and entry["settings"]["resamples"] == CARD_RESAMPLES
    assert [(p["a"], p["b"], p["asl"]) for p in m["pairs"]] == [(p["a"], p["b"], p["asl"]) for p in ours["pairs"]]
    assert m["split_half_tau"] == pytest.approx(ours["split_half_tau"], abs=1e-12)
    assert m["discriminative_power"] == ours["discriminative_power"] and m["judged"] == pytest.approx(ours["judged"])

    # What reads the card: the exported card.json (strict JSON) and the store's own report and sentence.
    exported = json.loads(release_files(engine, "demo", 1)["card.json"], parse_constant=_refuse)
    assert exported["reliability"] == entry
    assert release_sentence(engine, "demo", 1) == expected
    assert project_reliability(engine, "demo", 1).sentence() == expected
    # a release cut before cards kept the sentence: measured now, the same way
    with engine.begin() as conn:
        conn.execute(sa.update(Release).values(card={k: v for k, v in info.card.items() if k != "reliability"}))
    assert "reliability" not in json.loads(release_files(engine, "demo", 1)["card.json"])
    assert release_sentence(engine, "demo", 1) == expected


def _refuse(token: str) -> None:
    """json.loads hook: NaN and Infinity are not JSON."""
    raise ValueError(f"card.json holds {token}, which is not JSON")


def test_one_run_is_named_and_the_card_stays_strict_json(engine, project):
    """With one run the variance is undefined: the card says so in its sentence and stores null, not NaN (which
    PostgreSQL's JSON refuses and json.loads calls invalid); the single run's own pairs are all of them."""
    released, runs = _released(engine, project, names=("C",))
    card = create_release(engine, "demo", actor=OPERATOR).card
    m = card["reliability"]["metrics"][0]
    assert m["variance"] is None and m["topic_set_size"] is None and m["needed"] is None
    assert m["pairs"] == [] and m["discriminative_power"] is None
    assert card["reliability"]["sentence"].startswith(
        f"{N_QUERIES} queries and 1 run(s) are too few to size a paired t-test for ndcg@10."
    )
    assert m["pool_bias"][0]["own_pairs"] == len(released)
    exported = json.loads(release_files(engine, "demo", 1)["card.json"], parse_constant=_refuse)
    assert exported["reliability"]["metrics"][0]["variance"] is None
    scores = list(_ndcg10(released, runs)["C"].values())
    assert exported["reliability"]["metrics"][0]["query_variance"]["C"] == pytest.approx(
        statistics.variance(scores), rel=1e-12
    )


def test_no_runs_says_so_in_one_sentence(engine, project):
    seed(engine, project.id, {"q1": "one"}, {"a": "text a"})
    judge(engine, project.id, {("q1", "a"): {"ann": 2}})
    steps: list[str] = []
    card = create_release(engine, "demo", actor=OPERATOR, progress=steps.append).card
    assert card["reliability"]["sentence"] == NO_RUNS
    assert card["reliability"]["runs"] == [] and card["reliability"]["metrics"] == []
    assert NO_RUNS.count(". ") == 0 and NO_RUNS.endswith(".") and NO_RUNS.startswith("No stored runs")
    assert len(steps) == RELEASE_STEPS and "reliability" in steps
    assert release_sentence(engine, "demo", 1) == NO_RUNS


def test_card_resamples_are_bounded():
    """10 runs × 1,000 queries × 1,000 resamples is the budget (10⁷): 5,000 queries get 10⁷ / 50,000 = 200;
    100 runs × 100,000 queries would get 1, raised to the floor of 100; a small release keeps 1,000."""
    assert card_settings(10, 1000).resamples == CARD_RESAMPLES == 1000
    assert card_settings(10, 5000).resamples == 200
    assert card_settings(100, 100_000).resamples == CARD_MIN_RESAMPLES == 100
    assert card_settings(2, 30).resamples == 1000

"""A release by an annotator model: the JSONL's posteriors equal crowd-kit's Dawid–Skene with the control pairs
and adjudications as its true labels, the card names the decision and the doubtful pairs, the CLI lists them,
and the adjudication queue can be ordered by the posterior's entropy."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from db.accounts.permissions import OPERATOR
from db.adjudication import disputes
from db.control import add_control
from db.releases import create_release, release_files
from eval_core.consensus.simulate import simulate_crowd
from tests.helpers import judge, run, seed

crowdkit = pytest.importorskip("crowdkit.aggregation")

KINDS = ["good", "lenient", "harsh", "spammer", "spammer"]
ADJUDICATED = ("q000000", "f0000002")
CONTROL = ("q000001", "f0000011")


def _store(engine, project) -> pd.DataFrame:
    judgments, _ = simulate_crowd(60, KINDS, per_pair=3, seed=6)
    queries = {q: f"query {q}" for q in judgments["query_id"].unique()}
    fragments = {f: f"text {f}" for f in judgments["fragment_id"].unique()}
    seed(engine, project.id, queries, fragments)
    grades: dict[tuple[str, str], dict[str, int | None]] = {}
    for q, f, a, g in judgments.itertuples(index=False):
        grades.setdefault((q, f), {})[a] = int(g)
    judge(engine, project.id, grades, {ADJUDICATED: (3, "the lead read it", "lea")})
    add_control(engine, "demo", *CONTROL, 0, "settled: off topic", actor=OPERATOR)
    return judgments


def _crowdkit(judgments: pd.DataFrame) -> pd.DataFrame:
    """crowd-kit's Dawid–Skene posteriors (defaults) with the adjudication and the control pair as true labels."""
    df = pd.DataFrame(
        {
            "task": judgments["query_id"] + "|" + judgments["fragment_id"],
            "worker": judgments["annotator"],
            "label": judgments["grade"].astype(int),
        }
    )
    gold = pd.Series({"|".join(ADJUDICATED): 3, "|".join(CONTROL): 0})
    return crowdkit.DawidSkene(n_iter=100, tol=1e-5).fit_predict_proba(df, true_labels=gold)


def test_a_dawid_skene_release_carries_crowdkits_posteriors_and_names_its_doubt(engine, project, store_url):
    judgments = _store(engine, project)
    expected = _crowdkit(judgments)
    info = create_release(engine, "demo", rule="dawid-skene", actor=OPERATOR)
    lines = [json.loads(line) for line in release_files(engine, "demo", info.version)["judgments.jsonl"].splitlines()]
    assert len(lines) == len(expected) == 60
    for line in lines:
        want = expected.loc[f"{line['query_id']}|{line['fragment_id']}"]
        got = line["posterior"]
        assert set(got) == {"0", "1", "2", "3"}
        for grade, p in want.items():
            assert got[str(grade)] == pytest.approx(p, abs=1e-6)
        assert line["grade"] == int(want.idxmax())
        assert line["rule"] == "dawid-skene"
    by_pair = {(r["query_id"], r["fragment_id"]): r for r in lines}
    assert by_pair[ADJUDICATED]["grade"] == 3 and by_pair[CONTROL]["grade"] == 0
    model = info.card["model"]
    assert model["decision"] == "most-probable"
    assert model["known_truth"] == {"adjudications": 1, "control_pairs": 1}
    tops = expected.max(axis=1)
    doubtful = sorted(tops[tops < 0.6].index)
    assert model["doubt"]["pairs"] == len(doubtful) > 0
    assert sorted(f"{d['query_id']}|{d['fragment_id']}" for d in model["doubt"]["listed"]) == doubtful
    assert [d["top_posterior"] for d in model["doubt"]["listed"]] == sorted(
        d["top_posterior"] for d in model["doubt"]["listed"]
    )
    # the CLI prints the card and, on stderr, the count and every doubtful pair
    code, out, err = run(["release", "--project", "demo", "--rule", "dawid-skene", "--db", store_url])
    assert code == 0, err
    assert "doubt:" in out and "known truth:" in out  # the card, as readable lines
    assert f"{len(doubtful)} pair(s) with a top posterior below 0.6" in err
    for key in doubtful:
        q, f = key.split("|")
        assert f"{q}\t{f}\t" in err


def test_disputes_by_doubt_follow_the_posterior_entropy(engine, project, store_url):
    judgments = _store(engine, project)
    expected = _crowdkit(judgments)
    p = expected.to_numpy()
    entropy = pd.Series(-(np.where(p > 1e-9, p * np.log2(np.clip(p, 1e-300, None)), 0.0)).sum(axis=1), expected.index)
    queue = disputes(engine, "demo", order="doubt")
    keys = [f"{q}|{f}" for q, f in zip(queue["query_id"], queue["fragment_id"], strict=True)]
    assert set(keys) == set(disputes(engine, "demo")["query_id"] + "|" + disputes(engine, "demo")["fragment_id"])
    np.testing.assert_allclose(queue["entropy"].to_numpy(), entropy.loc[keys].to_numpy(), atol=1e-5)
    assert list(queue["entropy"]) == sorted(queue["entropy"], reverse=True)
    decided = queue[queue["adjudicated"]]
    assert len(decided) == 1 and decided["entropy"].iloc[0] == 0.0  # a decided pair is settled: last
    code, out, err = run(["disputes", "--project", "demo", "--order", "doubt", "--db", store_url])
    assert code == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0][-2:] == ["entropy", "top"]
    assert [f"{r[0]}|{r[1]}" for r in rows[1:]] == keys


def test_annotators_cli_shows_crowdkits_confusion_and_flags_the_spammer(engine, project, store_url):
    judgments, _ = simulate_crowd(400, ["good", "good", "lenient", "harsh", "spammer"], per_pair=3, seed=8)
    queries = {q: f"query {q}" for q in judgments["query_id"].unique()}
    fragments = {f: f"text {f}" for f in judgments["fragment_id"].unique()}
    seed(engine, project.id, queries, fragments)
    grades: dict[tuple[str, str], dict[str, int | None]] = {}
    for q, f, a, g in judgments.itertuples(index=False):
        grades.setdefault((q, f), {})[a] = int(g)
    judge(engine, project.id, grades)
    code, out, err = run(["annotators", "--project", "demo", "--format", "json", "--db", store_url])
    assert code == 0, err
    data = json.loads(out)
    df = pd.DataFrame(
        {
            "task": judgments["query_id"] + "|" + judgments["fragment_id"],
            "worker": judgments["annotator"],
            "label": judgments["grade"].astype(int),
        }
    )
    ref = crowdkit.DawidSkene(n_iter=100, tol=1e-5).fit(df)
    flagged = [a["annotator"] for a in data["annotators"] if a["spammer"]]
    assert flagged == ["spammer-004"]
    for entry in data["annotators"]:
        errors = ref.errors_.loc[entry["annotator"]]  # rows: grade given; columns: true grade
        for given in errors.index:
            for true in errors.columns:
                assert entry["confusion"][true][given] == pytest.approx(errors.loc[given, true], abs=1e-6)
        assert entry["control_accuracy"] is None  # the project has no control pairs
    assert "spammer-004's MACE competence" in err and "qualification round" in err

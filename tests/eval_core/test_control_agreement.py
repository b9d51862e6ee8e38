"""Control pairs on files: accuracy and weighted κ against settled grades, checked against scikit-learn,
with the query-clustered bootstrap CIs recomputed through scikit-learn's sample weights."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from eval_core.agreement.bootstrap import cluster_weights
from eval_core.agreement.control import control_report, vs_reference

LABELS = [0, 1, 2, 3]


def _case(seed: int = 4, queries: int = 12, per_query: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Settled grades for queries × fragments; ann grades them with some noise, bob more, under two versions."""
    rng = np.random.default_rng(seed)
    control = pd.DataFrame(
        [(f"q{q}", f"f{q}-{j}", int(rng.integers(0, 4))) for q in range(queries) for j in range(per_query)],
        columns=["query_id", "fragment_id", "grade"],
    )
    rows = []
    for who, noise in (("ann", 0.2), ("bob", 0.6)):
        for i, c in enumerate(control.itertuples()):
            grade = c.grade if rng.random() > noise else int(rng.integers(0, 4))
            rows.append(
                (c.query_id, c.fragment_id, who, grade, "v1" if i < 30 else "v2", f"2026-01-01T00:{i:02d}:00+00:00")
            )
    judgments = pd.DataFrame(rows, columns=["query_id", "fragment_id", "annotator", "grade", "guideline", "time"])
    return judgments, control


@pytest.mark.parametrize("weights", ["unweighted", "linear", "quadratic"])
def test_kappa_and_accuracy_are_scikit_learn(weights: str) -> None:
    judgments, control = _case()
    report = control_report(judgments, control, weights=weights, replicates=0)
    for s in report.per_annotator:
        own = judgments[judgments["annotator"] == s.annotator].merge(control, on=["query_id", "fragment_id"])
        expected = cohen_kappa_score(
            own["grade_y"], own["grade_x"], labels=LABELS, weights=None if weights == "unweighted" else weights
        )
        assert s.kappa.value == pytest.approx(expected, abs=1e-12)
        assert s.accuracy.value == pytest.approx((own["grade_x"] == own["grade_y"]).mean())
        assert (s.pairs, s.queries) == (60, 12)


def test_ci_is_the_query_clustered_bootstrap() -> None:
    """Each replicate redraws whole queries: its κ is scikit-learn's with every pair weighted by how often its
    query was drawn; the CI is the 2.5–97.5 percentile of those."""
    judgments, control = _case()
    report = control_report(judgments, control, weights="linear", replicates=200, seed=9)
    ann = next(s for s in report.per_annotator if s.annotator == "ann")
    own = judgments[judgments["annotator"] == "ann"].merge(control, on=["query_id", "fragment_id"])
    codes = pd.factorize(own["query_id"], sort=True)[0]
    weights = np.vstack(list(cluster_weights(12, 200, 9)))
    reps = [
        cohen_kappa_score(own["grade_y"], own["grade_x"], labels=LABELS, weights="linear", sample_weight=w[codes])
        for w in weights
    ]
    assert ann.kappa.ci == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-9)
    assert ann.kappa.ci[0] <= ann.kappa.value <= ann.kappa.ci[1]


def test_by_guideline_over_time_and_drift() -> None:
    """bob's last 20 control grades are replaced by a 0, 1, 2 cycle that ignores the settled grades: his recent κ
    (scikit-learn's on those 20) is below 0.6 and he is alerted; ann, mostly right, is not. The guideline
    groups split at the version change (pair 30), the time windows every 20 control judgments."""
    judgments, control = _case()
    late = judgments.index[(judgments["annotator"] == "bob")][-20:]
    judgments.loc[late, "grade"] = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1]
    report = control_report(judgments, control, replicates=0, recent=20, threshold=0.6)
    assert [a.annotator for a in report.alerts] == ["bob"]
    own = judgments.loc[late].merge(control, on=["query_id", "fragment_id"])
    expected = cohen_kappa_score(own["grade_y"], own["grade_x"], labels=LABELS, weights="linear")
    assert report.alerts[0].kappa == pytest.approx(expected)
    assert {(s.annotator, s.group, s.pairs) for s in report.by_guideline} == {
        ("ann", "v1", 30),
        ("ann", "v2", 30),
        ("bob", "v1", 30),
        ("bob", "v2", 30),
    }
    assert [s.group for s in report.over_time if s.annotator == "ann"] == [
        "control judgments 1–20",
        "control judgments 21–40",
        "control judgments 41–60",
    ]


def test_cant_judge_and_other_pairs_are_left_out() -> None:
    control = pd.DataFrame({"query_id": ["q1"], "fragment_id": ["a"], "grade": [2]})
    judgments = pd.DataFrame(
        {
            "query_id": ["q1", "q1", "q2"],
            "fragment_id": ["a", "a", "b"],
            "annotator": ["ann", "bob", "ann"],
            "grade": [2, None, 1],
        }
    )
    report = control_report(judgments, control, replicates=0)
    assert [(s.annotator, s.pairs, s.accuracy.value) for s in report.per_annotator] == [("ann", 1, 1.0)]
    assert report.per_annotator[0].kappa.value is None  # one pair: no variation, undefined, never a fake 1


def test_agreement_cli_with_a_control_file(tmp_path, capsys) -> None:
    """`qrelkit agreement JUDGMENTS --control CONTROL.qrels`: the JSON's control block is the same κ as
    scikit-learn's on each annotator's matched pairs."""
    import json

    from annotator.cli import main

    judgments, control = _case()
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in judgments.to_dict(orient="records")))
    qrels = tmp_path / "control.qrels"
    qrels.write_text("".join(f"{r.query_id} 0 {r.fragment_id} {r.grade}\n" for r in control.itertuples()))
    assert main(["agreement", str(path), "--control", str(qrels), "--bootstrap", "0", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for s in out["control"]["per_annotator"]:
        own = judgments[judgments["annotator"] == s["annotator"]].merge(control, on=["query_id", "fragment_id"])
        expected = cohen_kappa_score(own["grade_y"], own["grade_x"], labels=LABELS, weights="linear")
        assert s["kappa"]["value"] == pytest.approx(expected)
    assert main(["agreement", str(path), "--control", str(qrels), "--bootstrap", "0"]) == 0
    table = capsys.readouterr().out
    assert "against the control grades (linear-weighted κ" in table and "by guideline version:" in table


def test_each_person_against_a_reference_is_cohen_s_kappa_with_it():
    """vs reference: nist's grades are the settled ones; ann and bob are each measured against them on the pairs
    they share (scikit-learn's linear-weighted κ on the full label set); nist itself and a model are not."""
    rng = np.random.default_rng(3)
    rows = []
    for q in range(10):
        for f in range(6):
            truth = int(rng.integers(0, 4))
            rows.append((f"q{q}", f"f{f}", "nist", truth, "reference"))
            for name, noise in (("ann", 0.2), ("bob", 0.5), ("gpt", 0.1)):
                given = truth if rng.random() > noise else int(rng.integers(0, 4))
                rows.append((f"q{q}", f"f{f}", name, given, "model" if name == "gpt" else "human"))
    frame = pd.DataFrame(rows, columns=["query_id", "fragment_id", "annotator", "grade", "annotator_kind"])
    reports = vs_reference(frame, (0, 3), replicates=200, seed=1)
    assert list(reports) == ["nist"]
    report = reports["nist"]
    assert [s.annotator for s in report.per_annotator] == ["ann", "bob"]
    truth = frame[frame["annotator"] == "nist"]["grade"].to_numpy()
    for s in report.per_annotator:
        own = frame[frame["annotator"] == s.annotator]["grade"].to_numpy()
        expected = cohen_kappa_score(truth, own, labels=LABELS, weights="linear")
        assert s.kappa.value == pytest.approx(expected, abs=1e-12)
        assert s.accuracy.value == pytest.approx(float(np.mean(truth == own)), abs=1e-12)
        assert s.kappa.ci is not None and s.kappa.ci[0] <= s.kappa.value <= s.kappa.ci[1]
    assert vs_reference(frame[frame["annotator"] != "nist"]) == {}


def test_no_interval_from_a_handful_of_queries() -> None:
    """Against a reference on 2 queries: the values, but no CI — a bootstrap over 2 query clusters has 3 distinct
    resamples, as agreement refuses below MIN_CI_QUERIES (before, [0.333, 0.500] was printed beside 0.400)."""
    from eval_core.thresholds import MIN_CI_QUERIES

    rows = [(f"q{q}", f"f{f}", who, g) for q in range(2) for f in range(5) for who, g in (("nist", f % 4), ("ann", 1))]
    frame = pd.DataFrame(rows, columns=["query_id", "fragment_id", "annotator", "grade"]).assign(
        annotator_kind=lambda f: f["annotator"].map({"nist": "reference", "ann": "human"})
    )
    (score,) = vs_reference(frame, (0, 3), replicates=200, seed=1)["nist"].per_annotator
    assert (score.queries, MIN_CI_QUERIES) == (2, 5)
    assert score.accuracy.value == pytest.approx(0.2) and score.accuracy.ci is None and score.kappa.ci is None

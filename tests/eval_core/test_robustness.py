"""Run rankings under disagreement: the flip a hand-built disagreement causes is reported in the sentence and the
data; τ is scipy's; each rule's metrics are eval_core.evaluate's (and pytrec_eval's) on eval_core.consensus'
qrels; the bootstrap is seeded and its replicates are consensus labels of redrawn grades; CLI file and store modes."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from scipy.stats import kendalltau

from annotator.cli import main
from eval_core.consensus import RULES, consensus
from eval_core.ranking.evaluation import evaluate
from eval_core.robustness import _signs, resample_labels, robustness, tau_b
from tests.helpers import judge, seed

L3 = 1 / math.log2(3)  # the discount at rank 2
COLS = ["query_id", "fragment_id", "annotator", "grade"]
RUN_A = {"q1": ["d1", "d2"]}
RUN_B = {"q1": ["d2", "d1"]}


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLS).astype({"grade": "Int64"})


# alice and bob find d1 highly relevant and d2 not; carol sees it the other way round. Run A ranks d1 first.
DISAGREE = frame(
    [
        ("q1", "d1", "alice", 3),
        ("q1", "d1", "bob", 3),
        ("q1", "d1", "carol", 1),
        ("q1", "d2", "alice", 0),
        ("q1", "d2", "bob", 0),
        ("q1", "d2", "carol", 2),
    ]
)


def ndcg2(first: int, second: int) -> float:
    """nDCG@10 by hand of a two-document ranking with these grades (linear gain, both documents judged)."""
    best, other = max(first, second), min(first, second)
    return (first + second * L3) / (best + other * L3)


def test_a_human_annotators_flip_is_in_the_sentence_and_the_data():
    report = robustness(DISAGREE, {"A": RUN_A, "B": RUN_B}, bootstrap=0)
    values = {c.name: c.values for c in report.conditions}
    # median/majority/min: d1=3 (min 1), d2=0; mean: d1 = 7/3 → 2, d2 = 2/3 → 1 (half up).
    assert values["rule median"] == pytest.approx({"A": 1.0, "B": ndcg2(0, 3)})
    assert values["rule mean"] == pytest.approx({"A": 1.0, "B": ndcg2(1, 2)})
    assert values["rule min"] == pytest.approx({"A": 1.0, "B": ndcg2(0, 1)})
    assert values["annotator carol"] == pytest.approx({"A": ndcg2(1, 2), "B": 1.0})
    (pair,) = report.pairs
    assert (pair.winner, pair.loser, pair.holds) == ("A", "B", False)
    assert pair.flips == ["annotator carol"] and pair.ties == []
    assert pair.agree == {"rule": (7, 7), "annotator": (2, 3)}  # the three models side with alice and bob too
    assert (
        pair.sentence == "A beats B on ndcg@10 under all 7 rules and 2 of 3 annotators; under carol's labels "
        "the order flips"
    )
    assert report.flips() == [pair]
    assert report.to_dict()["pairs"][0]["flips"] == ["annotator carol"]


def test_a_reference_is_the_base_under_every_rule_never_a_voter_or_a_condition():
    """alice and bob grade d1 and d2 of q1; nist, a reference (an imported NIST qrels), grades d1 0 and d3 3, which
    nobody else graded; llm, a model judge, grades all three 3. As in a release, every rule and humans + models
    keep people's labels on d1 and d2 and take nist's 3 on d3; nist votes nowhere and has no condition of its own
    (before, it was "model nist" and voted in humans + models); the bootstrap keeps d3 at 3 in every replicate.
    Run C ranks d3, d1, d2: nDCG@10 with d1 = 3, d2 = 0, d3 = 3 is (3 + 3·L3) / (3 + 3·L3) = 1; run A (d1, d2),
    which never retrieves d3, gets 3 / (3 + 3·L3)."""
    people = [("q1", "d1", a, 3) for a in ("alice", "bob")] + [("q1", "d2", a, 0) for a in ("alice", "bob")]
    others = [("q1", "d1", "nist", 0), ("q1", "d3", "nist", 3)] + [("q1", d, "llm", 3) for d in ("d1", "d2", "d3")]
    kind = {"alice": "human", "bob": "human", "nist": "reference", "llm": "model"}
    judgments = frame([*people, *others]).assign(annotator_kind=lambda f: f["annotator"].map(kind))
    runs = {"A": RUN_A, "C": {"q1": ["d3", "d1", "d2"]}}
    report = robustness(judgments, runs, bootstrap=20, seed=1)
    values = {c.name: c.values for c in report.conditions}
    assert [c.name for c in report.conditions if c.group != "rule"] == [
        "annotator alice",
        "annotator bob",
        "model llm",
        "humans + models",
    ]
    base = {"A": 3 / (3 + 3 * L3), "C": 1.0}
    for rule in RULES:
        assert values[f"rule {rule}"] == pytest.approx(base), rule
    assert next(c for c in report.conditions if c.name == "rule median").n_pairs == 3
    # humans + models: d1 (3, 3, 3) → 3, d2 (0, 0, 3) → 0, d3: llm's 3 alone (nist never votes) → 3.
    assert values["humans + models"] == pytest.approx(base)
    assert values["annotator alice"] == pytest.approx({"A": 1.0, "C": L3})  # her pairs only: d3 unjudged, d1 2nd
    assert report.bootstrap is not None and report.bootstrap.interval["A"] == pytest.approx((base["A"], base["A"]))
    assert any("the reference nist never votes" in n and "the 1 pair(s) no person labelled" in n for n in report.notes)
    assert not any("model judge nist" in n for n in report.notes)


def test_a_share_short_of_all_or_none_is_never_shown_as_all_or_none():
    from eval_core.robustness import percent

    assert [percent(x) for x in (1.0, 0.995, 0.97, 0.004, 0.0)] == ["100%", ">99%", "97%", "<1%", "0%"]


def test_a_model_judges_flip_is_told_apart_from_the_humans():
    # The three humans agree that B's first document is the relevant one; the model judge says the opposite.
    rows = [(q, d, a, g) for a in ("ann", "bob", "cat") for q, d, g in (("q1", "d1", 0), ("q1", "d2", 3))]
    judgments = frame([*rows, ("q1", "d1", "llm", 3), ("q1", "d2", "llm", 0)]).assign(
        annotator_kind=lambda f: np.where(f["annotator"] == "llm", "model", "human")
    )
    report = robustness(judgments, {"A": RUN_A, "B": RUN_B}, bootstrap=50, seed=3)
    (pair,) = report.pairs
    assert pair.sentence.startswith(
        "B beats A on ndcg@10 under all 7 rules and 3 of 3 annotators, also with "
        "humans' and models' labels together; under the model's labels the order flips"
    )
    assert pair.flips == ["model llm"] and pair.agree["model"] == (0, 1) and pair.agree["labels"] == (1, 1)
    # Unanimous humans: every replicate draws the same labels, so B is ahead in all of them.
    assert pair.bootstrap_share == 1.0 and pair.sentence.endswith("B is ahead in 100% of 50 bootstrap replicates")
    labels = {c.name: c.values for c in report.conditions}
    assert labels["model llm"] == pytest.approx({"A": 1.0, "B": ndcg2(0, 3)})
    assert labels["humans + models"]["B"] == 1.0  # lower median of (3, 3, 3, 0) on d2 is 3


def test_a_model_judge_that_graded_few_pairs_is_left_out_and_named():
    # Four pairs, every one graded by ann and bob. llm grades one of them (1/4 = 25% < MIN_MODEL_SHARE = 50%), the
    # opposite way: on that one pair its ranking would flip A and B. It gets no condition of its own and the notes
    # say why; its grade still joins "humans + models". Grading two of the four (exactly 50%) is enough.
    from eval_core.thresholds import MIN_MODEL_SHARE

    assert MIN_MODEL_SHARE == 0.5
    people = [(q, d, a, g) for a in ("ann", "bob") for q in ("q1", "q2") for d, g in (("d1", 3), ("d2", 0))]
    runs = {"A": {"q1": ["d1", "d2"], "q2": ["d1", "d2"]}, "B": {"q1": ["d2", "d1"], "q2": ["d2", "d1"]}}

    def with_model(*graded: tuple[str, str, int]) -> pd.DataFrame:
        rows = [*people, *((q, d, "llm", g) for q, d, g in graded)]
        return frame(rows).assign(annotator_kind=lambda f: np.where(f["annotator"] == "llm", "model", "human"))

    sparse = robustness(with_model(("q1", "d1", 0)), runs, bootstrap=0)
    names = [c.name for c in sparse.conditions]
    assert "model llm" not in names and "humans + models" in names
    assert (
        "model judge llm left out of the conditions: it graded 1 of the 4 pairs (25%), under the 50% a model judge "
        "needs for a condition of its own (MIN_MODEL_SHARE)" in " ".join(sparse.notes)
    )
    (pair,) = sparse.pairs
    assert pair.holds and pair.flips == [] and "model" not in pair.agree
    half = robustness(with_model(("q1", "d1", 0), ("q1", "d2", 3)), runs, bootstrap=0)
    assert "model llm" in [c.name for c in half.conditions] and half.pairs[0].flips == ["model llm"]
    assert not any("left out" in n for n in half.notes)
    # the share is settable: 0 keeps every model judge
    kept = robustness(with_model(("q1", "d1", 0)), runs, bootstrap=0, min_model_share=0)
    assert "model llm" in [c.name for c in kept.conditions]
    with pytest.raises(ValueError, match="min_model_share must be between 0 and 1"):
        robustness(with_model(("q1", "d1", 0)), runs, bootstrap=0, min_model_share=1.5)


def test_bootstrap_share_matches_the_exact_draw_probability():
    # Enumerate every draw of three grades with replacement per pair: the lower median of each draw gives the
    # labels, and A is ahead exactly when its nDCG@10 beats B's under them.
    d1, d2 = (3, 3, 1), (0, 0, 2)
    ahead = 0
    for g1 in itertools.product(d1, repeat=3):
        for g2 in itertools.product(d2, repeat=3):
            m1, m2 = sorted(g1)[1], sorted(g2)[1]
            ahead += ndcg2(m1, m2) > ndcg2(m2, m1)
    p = ahead / 27**2
    replicates = 2000
    report = robustness(DISAGREE, {"A": RUN_A, "B": RUN_B}, bootstrap=replicates, seed=11)
    assert report.pairs[0].bootstrap_share == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / replicates))


def test_runs_tied_under_the_reference_are_told_so():
    # Every rule labels d1 and d2 alike (median and majority 3, mean 2, min 0), and so does carol (3, 3): A and B
    # score the same there; alice alone prefers A's first document, bob B's.
    judgments = frame(
        [
            ("q1", "d1", "alice", 3),
            ("q1", "d1", "bob", 0),
            ("q1", "d1", "carol", 3),
            ("q1", "d2", "alice", 0),
            ("q1", "d2", "bob", 3),
            ("q1", "d2", "carol", 3),
        ]
    )
    report = robustness(judgments, {"A": RUN_A, "B": RUN_B}, bootstrap=0)
    (pair,) = report.pairs
    assert report.conditions[0].values == {"A": 1.0, "B": 1.0}
    assert (pair.winner, pair.holds) == (None, False)
    # the data are symmetric under swapping alice and bob (and d1 with d2), so every model labels both alike too
    assert pair.ties == [
        "rule median",
        "rule majority",
        "rule mean",
        "rule min",
        "rule dawid-skene",
        "rule mace",
        "rule glad",
        "annotator carol",
    ]
    assert pair.flips == ["annotator alice", "annotator bob"]  # the conditions that do order them
    assert pair.sentence == (
        "A and B tie on ndcg@10 under the median rule; A is ahead under 1 and B under 1 of the 10 conditions"
    )


def random_case(seed_: int, n_runs: int = 4):
    """Five queries × eight fragments, three annotators with some can't-judge grades, two adjudications, runs
    that are seeded shuffles of each query's fragments."""
    rng = np.random.default_rng(seed_)
    rows = []
    for q in range(5):
        for d in range(8):
            for a in ("ann", "bob", "cat"):
                if rng.random() < 0.85:
                    grade = None if rng.random() < 0.08 else int(rng.integers(0, 4))
                    rows.append((f"q{q}", f"d{d}", a, grade))
    judgments = frame(rows)
    adjudications = pd.DataFrame({"query_id": ["q0", "q3"], "fragment_id": ["d1", "d5"], "grade": [3, 0]})
    runs = {f"run{r}": {f"q{q}": [f"d{d}" for d in rng.permutation(8)] for q in range(5)} for r in range(n_runs)}
    return judgments, adjudications, runs


def test_each_rule_and_annotator_scores_as_evaluate_on_consensus_qrels():
    judgments, adjudications, runs = random_case(1)
    report = robustness(judgments, runs, metric="map", adjudications=adjudications, bootstrap=0, rel_level=2)
    values = {c.name: c.values for c in report.conditions}
    for rule in RULES:
        labels = consensus(judgments, rule, adjudications)
        qrels = labels.rename(columns={"fragment_id": "doc_id"})[["query_id", "doc_id", "grade"]]
        expected = {name: evaluate(qrels, run, metrics=["map"], rel_level=2).mean["map"] for name, run in runs.items()}
        assert values[f"rule {rule}"] == pytest.approx(expected, abs=1e-12)
    own = judgments[(judgments["annotator"] == "bob") & judgments["grade"].notna()]
    qrels = own.rename(columns={"fragment_id": "doc_id"})[["query_id", "doc_id", "grade"]].astype({"grade": int})
    assert values["annotator bob"] == pytest.approx(
        {name: evaluate(qrels, run, metrics=["map"], rel_level=2).mean["map"] for name, run in runs.items()}, abs=1e-12
    )
    assert [c.name for c in report.conditions] == [
        *(f"rule {r}" for r in RULES),
        "annotator ann",
        "annotator bob",
        "annotator cat",
    ]


def test_median_rule_ndcg_equals_pytrec_eval():
    judgments, adjudications, runs = random_case(2)
    report = robustness(judgments, runs, adjudications=adjudications, bootstrap=0)
    labels = consensus(judgments, "median", adjudications)
    qrels: dict[str, dict[str, int]] = {}
    for row in labels.itertuples():
        qrels.setdefault(row.query_id, {})[row.fragment_id] = int(row.grade)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
    for name, run in runs.items():
        scored = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in run.items()}
        per_query = evaluator.evaluate(scored)
        expected = np.mean([per_query[q]["ndcg_cut_10"] for q in qrels])
        assert report.conditions[0].values[name] == pytest.approx(expected, abs=1e-12)


def test_tau_matrix_equals_scipy_kendalltau():
    judgments, adjudications, runs = random_case(5, n_runs=6)
    report = robustness(judgments, runs, metric="P@5", adjudications=adjudications, bootstrap=0)
    matrix = [[c.values[r] for r in report.runs] for c in report.conditions]
    for i, x in enumerate(matrix):
        for j, y in enumerate(matrix):
            expected = kendalltau(x, y).statistic  # τ-b, as scipy computes it by default
            got = report.tau[i][j]
            assert (got is None) if np.isnan(expected) else got == pytest.approx(expected, abs=1e-12)


def kendall_tau(x: list[float], y: list[float]) -> float | None:
    """τ-b of two score vectors through robustness's own matrix form (None when either ranks every run equal)."""
    value = tau_b(_signs(np.asarray([x], dtype=np.float64)), _signs(np.asarray([y], dtype=np.float64)))[0, 0]
    return None if np.isnan(value) else float(value)


def test_kendall_tau_with_ties_and_undefined():
    rng = np.random.default_rng(0)
    for _ in range(50):
        x, y = rng.integers(0, 4, 7).astype(float), rng.integers(0, 4, 7).astype(float)
        expected = kendalltau(x, y).statistic
        got = kendall_tau(x, y)
        assert (got is None) if np.isnan(expected) else got == pytest.approx(expected, abs=1e-12)
    assert kendall_tau([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None


def test_bootstrap_is_seeded():
    judgments, adjudications, runs = random_case(3, n_runs=3)
    first = robustness(judgments, runs, adjudications=adjudications, bootstrap=30, seed=7).to_dict()
    again = robustness(judgments, runs, adjudications=adjudications, bootstrap=30, seed=7).to_dict()
    other = robustness(judgments, runs, adjudications=adjudications, bootstrap=30, seed=8).to_dict()
    shuffled = judgments.sample(frac=1, random_state=0)  # the same judgments in another row order
    assert robustness(shuffled, runs, adjudications=adjudications, bootstrap=30, seed=7).to_dict() == first == again
    assert first["bootstrap"]["mean"] != other["bootstrap"]["mean"]


def test_bootstrap_replicates_are_consensus_of_redrawn_grades_scored_by_evaluate():
    judgments, adjudications, runs = random_case(4, n_runs=3)
    replicates, seed_ = 12, 5
    report = robustness(
        judgments, runs, metric="map", adjudications=adjudications, bootstrap=replicates, seed=seed_, rel_level=2
    )
    # Rebuild the draws the way the report defines them: pairs in consensus order, each pair's real grades.
    pooled = consensus(judgments, "median", adjudications)
    index = pd.MultiIndex.from_frame(pooled[["query_id", "fragment_id"]])
    real = judgments[judgments["grade"].notna()]
    pair = index.get_indexer(pd.MultiIndex.from_frame(real[["query_id", "fragment_id"]]))
    order = np.lexsort((real["annotator"].to_numpy(dtype=str), pair))  # a pair's grades by annotator name
    pair, grade = pair[order], real["grade"].to_numpy(dtype=np.int64)[order]
    labels, picks = resample_labels(grade, pair, len(pooled), "median", replicates, np.random.default_rng(seed_))
    means = np.empty((replicates, len(runs)))
    for b in range(replicates):
        drawn = pd.DataFrame(
            {
                "query_id": pooled["query_id"].to_numpy()[pair],
                "fragment_id": pooled["fragment_id"].to_numpy()[pair],
                "annotator": [f"draw{k}" for k in range(len(pair))],
                "grade": grade[picks[b]],
            }
        )
        qrels = consensus(drawn, "median", adjudications)  # the consensus module's own median of the draws
        graded = labels[b][pooled["adjudicated"].to_numpy() == 0]
        assert graded.tolist() == qrels[~qrels["adjudicated"]]["grade"].tolist()
        qrels = qrels.rename(columns={"fragment_id": "doc_id"})[["query_id", "doc_id", "grade"]]
        means[b] = [evaluate(qrels, run, metrics=["map"], rel_level=2).mean["map"] for run in runs.values()]
    boot = report.bootstrap
    assert boot.mean == pytest.approx(dict(zip(runs, means.mean(0), strict=True)), abs=1e-12)
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    np.testing.assert_allclose([boot.interval[r] for r in runs], np.stack([low, high], axis=1), rtol=0, atol=1e-12)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="at least two"):
        robustness(DISAGREE, {"A": RUN_A}, bootstrap=0)
    with pytest.raises(ValueError, match="one metric with its cutoff"):
        robustness(DISAGREE, {"A": RUN_A, "B": RUN_B}, metric="ndcg@k", bootstrap=0)
    with pytest.raises(ValueError, match="no judgments by the model annotator"):
        robustness(DISAGREE, {"A": RUN_A, "B": RUN_B}, models=["gpt"], bootstrap=0)


# ------------------------------------------------------------------------------------------------ CLI


def write_case(tmp_path) -> list[str]:
    """The disagreement as a judgments file and two TREC run files; returns the CLI's file-mode arguments."""
    path = tmp_path / "judgments.jsonl"
    path.write_text(
        "".join(
            json.dumps(dict(zip(COLS, (q, d, a, int(g)), strict=True))) + "\n"
            for q, d, a, g in DISAGREE.itertuples(index=False)
        )
        + '{"query_id": "q1", "fragment_id": "d1", "annotator": "llm", "grade": 0}\n'
        '{"query_id": "q1", "fragment_id": "d2", "annotator": "llm", "grade": 3}\n'
    )
    for name, run in (("A", RUN_A), ("B", RUN_B)):
        (tmp_path / name).write_text("".join(f"q1 Q0 {d} {i} {10 - i} {name}\n" for i, d in enumerate(run["q1"], 1)))
    return ["--judgments", str(path), str(tmp_path / "A"), str(tmp_path / "B")]


def test_cli_file_mode_reports_the_flip(tmp_path, capsys):
    args = write_case(tmp_path)
    assert main(["robustness", *args, "--model", "llm", "--bootstrap", "20", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (pair,) = data["pairs"]
    assert pair["flips"] == ["annotator carol", "model llm"] and pair["holds"] is False
    assert pair["sentence"].startswith(
        "A beats B on ndcg@10 under all 7 rules and 2 of 3 annotators, also with "
        "humans' and models' labels together; under carol's labels and the model's "
        "labels the order flips"
    )
    assert main(["robustness", *args, "--model", "llm", "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "FLIPS  A beats B on ndcg@10" in out and "humans + models" in out


def test_cli_needs_one_source(tmp_path, capsys):
    assert main(["robustness", str(tmp_path / "A")]) == 2
    assert "either --project" in capsys.readouterr().err
    args = write_case(tmp_path)
    assert main(["robustness", *args, "--metric", "nope@3", "--bootstrap", "0"]) == 2
    assert "unknown metric 'nope@3'" in capsys.readouterr().err


def test_store_mode_matches_file_mode(engine, project, store_url, tmp_path, capsys):
    seed(engine, project.id, {"q1": "what is recall"}, {"d1": "one", "d2": "two"}, {"A": RUN_A, "B": RUN_B})
    grades: dict[tuple[str, str], dict[str, int | None]] = {}
    for q, d, a, g in DISAGREE.itertuples(index=False):
        grades.setdefault((q, d), {})[a] = int(g)
    judge(engine, project.id, grades)
    args = ["--bootstrap", "25", "--seed", "4", "--format", "json"]
    assert main(["robustness", "--db", store_url, "--project", "demo", "--runs", "A,B", *args]) == 0
    stored = json.loads(capsys.readouterr().out)
    path = tmp_path / "j.jsonl"
    DISAGREE.astype({"grade": int}).to_json(path, orient="records", lines=True)
    for name, run in (("A", RUN_A), ("B", RUN_B)):
        (tmp_path / name).write_text("".join(f"q1 Q0 {d} {i} {10 - i} {name}\n" for i, d in enumerate(run["q1"], 1)))
    assert main(["robustness", "--judgments", str(path), str(tmp_path / "A"), str(tmp_path / "B"), *args]) == 0
    files = json.loads(capsys.readouterr().out)
    assert stored == files
    assert stored["pairs"][0]["sentence"].startswith(
        "A beats B on ndcg@10 under all 7 rules and 2 of 3 annotators; under carol's labels the order flips"
    )
    assert main(["robustness", "--db", store_url, "--project", "demo", "--runs", "A,nope", *args]) == 2
    assert "no run named 'nope'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ the page


def test_evaluate_page_section_shows_the_flip_literally(tmp_path, monkeypatch):
    """The Evaluate page's section, switched on, says in a warning (Markdown escaped) that the order flips under
    one annotator's labels, and its table carries the same numbers as robustness() on those judgments."""
    from streamlit.testing.v1 import AppTest

    from annotator.app.components.robustness import TOGGLE
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.projects import create_project
    from db.releases import create_release
    from db.store.engine import get_engine
    from db.store.schema import init_db
    from tests.helpers import PAGES, log_in, shown

    url = f"sqlite:///{tmp_path / 'page.db'}"
    engine = init_db(url)
    create_user(engine, "lea", "lead", password="lead-pass", actor=OPERATOR)
    info = create_project(engine, "robust", actor=OPERATOR)
    seed(engine, info.id, {"q1": "what is recall"}, {"d1": "one", "d2": "two"}, {"A": RUN_A, "B": RUN_B})
    judgments = DISAGREE.assign(annotator=DISAGREE["annotator"].replace({"carol": "*carol*"}))
    grades: dict[tuple[str, str], dict[str, int | None]] = {}
    for q, d, a, g in judgments.itertuples(index=False):
        grades.setdefault((q, d), {})[a] = int(g)
    judge(engine, info.id, grades)
    create_release(engine, "robust", actor=OPERATOR)
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    at = log_in(AppTest.from_file(str(PAGES / "lead_evaluate.py"), default_timeout=60), engine, "lea")
    at.session_state["project"] = "robust"
    at.run()
    assert not at.exception
    next(t for t in at.toggle if t.label == TOGGLE).set_value(True).run()
    assert not at.exception
    expected = robustness(judgments, {"A": RUN_A, "B": RUN_B}, bootstrap=200, seed=0)
    flips = [w.value for w in at.warning if "order flips" in shown(w.value)]
    assert [shown(v) for v in flips] == [expected.pairs[0].sentence]
    assert "\\*carol\\*" in flips[0]  # shown literally, never as emphasis
    assert expected.pairs[0].sentence.startswith(
        "A beats B on ndcg@10 under all 7 rules and 2 of 3 annotators; under *carol*'s labels the order flips"
    )
    table = next(d.value for d in at.dataframe if "A" in d.value.columns and "B" in d.value.columns)
    np.testing.assert_allclose(table.to_numpy(dtype=float), expected.table().to_numpy(), rtol=0, atol=1e-12)
    assert list(table.index.get_level_values("condition")) == [c.name for c in expected.conditions]
    get_engine.cache_clear()


def test_store_mode_reads_model_judges_from_the_store(engine, project, store_url, tmp_path, capsys):
    """A model judge stored as such (users.kind = model) is a model condition, and "humans + models" appears,
    exactly as when the same judgments are given as a file with --model."""
    from db.accounts.permissions import OPERATOR
    from db.model_judges import model_annotator

    seed(engine, project.id, {"q1": "what is recall"}, {"d1": "one", "d2": "two"}, {"A": RUN_A, "B": RUN_B})
    model_annotator(engine, "llm", "some-model", actor=OPERATOR)
    rows = [*DISAGREE.itertuples(index=False), ("q1", "d1", "llm", 0), ("q1", "d2", "llm", 3)]
    grades: dict[tuple[str, str], dict[str, int | None]] = {}
    for q, d, a, g in rows:
        grades.setdefault((q, d), {})[a] = int(g)
    judge(engine, project.id, grades)
    args = ["--bootstrap", "10", "--format", "json"]
    assert main(["robustness", "--db", store_url, "--project", "demo", *args]) == 0
    stored = json.loads(capsys.readouterr().out)
    (pair,) = stored["pairs"]
    assert pair["flips"] == ["annotator carol", "model llm"]
    assert [c["name"] for c in stored["conditions"]][-2:] == ["model llm", "humans + models"]
    assert "under carol's labels and the model's labels the order flips" in pair["sentence"]
    files = write_case(tmp_path)
    assert main(["robustness", *files, "--model", "llm", *args]) == 0
    assert json.loads(capsys.readouterr().out) == stored


def test_one_annotator_gets_no_bootstrap_claim():
    # alice alone: every pair has one grade, so each of 200 replicates redraws that grade and is the same
    # labelling; "A is ahead in 100% of 200 bootstrap replicates" would be a certainty nobody measured.
    alone = DISAGREE[DISAGREE["annotator"] == "alice"]
    report = robustness(alone, {"A": RUN_A, "B": RUN_B}, bootstrap=200)
    (pair,) = report.pairs
    assert report.bootstrap is None and pair.bootstrap_share is None
    assert "replicates" not in pair.sentence
    assert any("no bootstrap over annotators" in n for n in report.notes)
    # carol grades only d1 as well: d1 has three grades, d2 alice's alone; the note says what the bootstrap varies.
    partial = pd.concat([DISAGREE[DISAGREE["fragment_id"] == "d1"], alone[alone["fragment_id"] == "d2"]])
    report = robustness(partial, {"A": RUN_A, "B": RUN_B}, bootstrap=20)
    assert report.bootstrap is not None
    assert any("on the 1 of 2 pairs with two or more grades" in n for n in report.notes)

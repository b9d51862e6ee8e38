"""Release policy: humans-only by default, model-fills-gaps only above the κ threshold, provenance on every label."""

from __future__ import annotations

import json
import re

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import select, update

from annotator.app.text import BREAK
from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.projects import add_guideline
from db.releases import create_release, release_files
from db.store.engine import session_scope
from db.store.models import Guideline, Judgment, User
from tests.helpers import judge, seed

# Five queries q1–q5 holding the same seven pairs with the same grades: the calibration shares 5 × 5 pairs over
# 5 queries, and every query-clustered resample has the same confusion proportions, so the model's κ CI is
# [κ, κ] (zero width) and the gate's lower bound is the κ itself.
COPIES = 5
QUERIES = {f"q{c}": f"what is recall, take {c}" for c in range(1, COPIES + 1)}
FRAGS = {f"f{i}": f"fragment text {i}" for i in range(1, 8)}
PATTERN = {
    "f1": {"ann": 3, "bob": 2, "gpt": 3},
    "f2": {"ann": 0, "bob": 1, "gpt": 0},
    "f3": {"ann": 1, "bob": 1, "gpt": 2},
    "f4": {"ann": 2, "bob": 3, "gpt": 2},
    "f5": {"ann": 0, "gpt": 1},
    "f6": {"gpt": 3},
    "f7": {"ann": None, "gpt": 0},
}
GRADES = {(q, f): by for q in QUERIES for f, by in PATTERN.items()}
# The humans' lower median per pair (f6 and f7 have no human grade) and the model's grades on the same pairs.
CONSENSUS = [2, 0, 1, 2, 0]
MODEL = [3, 0, 2, 2, 1]
KAPPA = cohen_kappa_score(CONSENSUS, MODEL, labels=[0, 1, 2, 3], weights="quadratic")


def judged(engine, project, versions: int = 0) -> None:
    """The GRADES above with gpt stored as a model judge; with `versions` guideline versions published, the
    model's grades are stamped with version 1."""
    seed(engine, project.id, QUERIES, FRAGS)
    judge(engine, project.id, GRADES)
    with session_scope(engine, write=True) as s:
        s.execute(update(User).where(User.username == "gpt").values(kind="model", model_name="gpt-test"))
    for v in range(1, versions + 1):
        add_guideline(engine, "demo", f"Grade 0-3 (version {v}).", actor=OPERATOR)
    if versions:
        with session_scope(engine, write=True) as s:
            gid = s.execute(select(Guideline.id).where(Guideline.version == 1)).scalar_one()
            uid = s.execute(select(User.id).where(User.username == "gpt")).scalar_one()
            s.execute(update(Judgment).where(Judgment.user_id == uid).values(guideline_id=gid))


def _lines(engine) -> list[dict]:
    return [json.loads(line) for line in release_files(engine, "demo")["judgments.jsonl"].decode().splitlines()]


def test_humans_only_is_the_default_and_leaves_the_model_out(engine, project):
    judged(engine, project)
    card = create_release(engine, "demo", actor=OPERATOR).card
    lines = _lines(engine)
    assert [(r["fragment_id"], r["grade"]) for r in lines] == COPIES * list(
        zip(["f1", "f2", "f3", "f4", "f5"], CONSENSUS, strict=True)
    )
    assert all("gpt" not in r["grades"] and r["provenance"] == "human consensus" for r in lines)
    # The card's α is the humans' alone (reference: krippendorff on ann × bob).
    data = np.tile(np.array([[3, 0, 1, 2, 0], [2, 1, 1, 3, np.nan]], dtype=float), COPIES)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert card["agreement"]["alpha_ordinal"]["value"] == pytest.approx(expected, abs=1e-12)
    assert card["counts"]["annotators"] == 2
    assert card["policy"]["name"] == "humans-only" and card["policy"]["model"] == "gpt"
    assert card["policy"]["model_kappa_quadratic"] == pytest.approx(KAPPA, abs=1e-12)
    assert card["provenance"] == {
        "human consensus": {"pairs": 25, "share": 1.0},
        "adjudication": {"pairs": 0, "share": 0.0},
        "reference": {"pairs": 0, "share": 0.0},
        "model": {"pairs": 0, "share": 0.0},
    }


def test_model_fills_gaps_above_the_threshold(engine, project):
    judged(engine, project)
    assert KAPPA >= 0.6
    card = create_release(engine, "demo", actor=OPERATOR, policy="model-fills-gaps").card
    lines = {r["fragment_id"]: r for r in _lines(engine)}
    assert sorted(lines) == ["f1", "f2", "f3", "f4", "f5", "f6", "f7"]
    f6 = {
        "query_id": "q5",
        "fragment_id": "f6",
        "grade": 3,
        "grades": {},
        "rule": "median",
        "provenance": "model",
        "model_judge": "gpt",
        "scale": "0-3",
    }
    assert json.dumps(f6, ensure_ascii=False) in release_files(engine, "demo")["judgments.jsonl"].decode()
    # the grades map holds people's grades only: the release read back has the humans' α whatever the policy
    assert all("gpt" not in r["grades"] for r in lines.values())
    assert lines["f7"]["grade"] == 0 and lines["f7"]["provenance"] == "model"
    assert lines["f5"]["grade"] == 0 and lines["f5"]["provenance"] == "human consensus"  # a human graded it
    policy = card["policy"]
    assert {
        k: policy[k]
        for k in ("name", "model", "calibration_pairs", "calibration_queries", "guideline_version", "threshold")
    } == {
        "name": "model-fills-gaps",
        "model": "gpt",
        "calibration_pairs": 25,
        "calibration_queries": 5,
        "guideline_version": None,
        "threshold": 0.6,
    }
    assert policy["model_kappa_quadratic"] == pytest.approx(KAPPA)
    assert policy["model_kappa_ci"] == [pytest.approx(KAPPA), pytest.approx(KAPPA)]  # identical clusters
    # Beside it, the people on the same pairs: ann × bob's quadratic κ on the 4 pairs both graded, ×5.
    humans = cohen_kappa_score([3, 0, 1, 2] * COPIES, [2, 1, 1, 3] * COPIES, labels=[0, 1, 2, 3], weights="quadratic")
    assert policy["humans_kappa_quadratic"]["value"] == pytest.approx(humans)
    assert card["provenance"]["model"] == {"pairs": 10, "share": pytest.approx(2 / 7)}
    assert card["provenance"]["human consensus"]["share"] == pytest.approx(5 / 7)


def test_model_fills_gaps_is_refused_below_the_threshold_with_the_kappa(engine, project):
    judged(engine, project)
    with pytest.raises(
        ValueError,
        match=rf"model judge gpt's quadratic-weighted κ with the human consensus on all "
        rf"its grades is {KAPPA:.2f} on 25 shared pairs \(5 queries\), 95% CI "
        rf"\[{KAPPA:.2f}, {KAPPA:.2f}\]: its lower bound {KAPPA:.2f} is below "
        rf"the threshold 0.95; people on the same pairs",
    ):
        create_release(engine, "demo", actor=OPERATOR, policy="model-fills-gaps", model_threshold=0.95)


def test_the_kappa_is_read_on_the_guideline_version_in_force(engine, project):
    judged(engine, project, versions=1)
    card = create_release(engine, "demo", actor=OPERATOR, policy="model-fills-gaps").card
    assert card["policy"]["guideline_version"] == 1 and card["provenance"]["model"]["pairs"] == 2 * COPIES


def test_a_model_that_graded_only_under_an_older_version_is_refused(engine, project):
    judged(engine, project, versions=2)  # version 2 in force, the model's grades under version 1
    with pytest.raises(ValueError, match="on guideline version 2 \\(in force\\) is undefined on 0 shared pairs"):
        create_release(engine, "demo", actor=OPERATOR, policy="model-fills-gaps")


def test_cli_release_policy(engine, project, store_url, capsys):
    judged(engine, project)
    assert (
        main(
            [
                "release",
                "--db",
                store_url,
                "--project",
                "demo",
                "--policy",
                "model-fills-gaps",
                "--model-threshold",
                "0.5",
                "--format",
                "json",
            ]
        )
        == 0
    )
    card = json.loads(capsys.readouterr().out)
    assert card["policy"]["threshold"] == 0.5 and card["provenance"]["model"]["pairs"] == 2 * COPIES
    assert (
        main(
            [
                "release",
                "--db",
                store_url,
                "--project",
                "demo",
                "--policy",
                "model-fills-gaps",
                "--model-threshold",
                "0.99",
            ]
        )
        == 2
    )
    assert "refused" in capsys.readouterr().err


def test_releases_page_policy_select_and_provenance_shares(tmp_path, monkeypatch):
    # The page is the same on both stores (the store functions above run on both): one SQLite store here.
    from streamlit.testing.v1 import AppTest

    from annotator.app.auth import TOKEN_KEY
    from db.accounts.sessions import create_session
    from db.accounts.users import create_user
    from db.projects import create_project
    from db.store.schema import init_db
    from tests.conftest import ROOT

    store_url = f"sqlite:///{tmp_path / 'releases.db'}"
    engine = init_db(store_url)
    project = create_project(engine, "demo", actor=OPERATOR)
    judged(engine, project)
    lead = create_user(engine, "lead", "lead", password="lead-password-1", actor=OPERATOR)
    monkeypatch.setenv("QRELKIT_DB_URL", store_url)
    at = AppTest.from_file(str(ROOT / "annotator" / "app" / "screens" / "lead_releases.py"), default_timeout=120)
    at.session_state[TOKEN_KEY] = create_session(engine, lead.id, client="apptest").token
    at.session_state["project"] = "demo"
    at.run()
    assert not at.exception
    policy = next(s for s in at.selectbox if s.label == "Label policy")
    assert policy.options == ["humans-only", "model-fills-gaps"] and policy.value == "humans-only"
    policy.set_value("model-fills-gaps")
    next(n for n in at.number_input if n.label.startswith("Least model κ")).set_value(0.95)
    at.button[0].click().run()
    shown = re.sub(r"\\(.)", r"\1", at.error[0].value.replace(BREAK, ""))  # shown literally (Markdown-escaped)
    assert (
        f"gpt's quadratic-weighted κ with the human consensus on all its grades is {KAPPA:.2f} on 25 shared "
        f"pairs (5 queries), 95% CI [{KAPPA:.2f}, {KAPPA:.2f}]: its lower bound {KAPPA:.2f} is below the "
        "threshold 0.95" in shown
    )
    next(n for n in at.number_input if n.label.startswith("Least model κ")).set_value(0.6)
    at.button[0].click().run()
    assert not at.exception and not at.error
    texts = [t.value for t in at.text]
    assert (
        f"Label policy: model-fills-gaps · model judge gpt: quadratic κ {KAPPA:.2f} with the human consensus "
        "on all its grades (25 pairs) · threshold 0.60."
    ) in texts
    shares = next(d.value for d in at.dataframe if "Labels from" in d.value.columns)
    assert shares.set_index("Labels from")["Share (%)"].to_dict() == pytest.approx(
        {"human consensus": 500 / 7, "adjudication": 0.0, "reference": 0.0, "model": 200 / 7}
    )


def test_the_gate_is_refused_on_too_few_queries_and_reads_the_lower_bound(engine, project):
    # The pattern in one query only: 5 calibration pairs, κ = KAPPA ≥ 0.6, but one query cluster gives no
    # interval, so the gate (which reads the lower bound) refuses and says why.
    seed(engine, project.id, {"q1": "what is recall"}, FRAGS)
    judge(engine, project.id, {("q1", f): by for f, by in PATTERN.items()})
    with session_scope(engine, write=True) as s:
        s.execute(update(User).where(User.username == "gpt").values(kind="model", model_name="gpt-test"))
    with pytest.raises(
        ValueError,
        match=rf"is {KAPPA:.2f} on 5 shared pairs, but over 1 query it has no confidence "
        r"interval \(no CIs: 1 query shared, too few to resample",
    ):
        create_release(engine, "demo", actor=OPERATOR, policy="model-fills-gaps")


def test_a_reference_is_not_a_person_in_the_models_gate(engine, project):
    """NIST-like reference grades, far from the people's, on every pair (f6 too, which no person graded): the
    model is still measured against the people's consensus on the 25 pairs they graded, and the people's own
    κ beside it is ann × bob's alone, as the release's labels and α leave the reference out."""
    judged(engine, project)
    nist = {"f1": 0, "f2": 3, "f3": 3, "f4": 0, "f5": 3, "f6": 0, "f7": 3}
    judge(engine, project.id, {(q, f): {"nist": g} for q in QUERIES for f, g in nist.items()})
    with session_scope(engine, write=True) as s:
        s.execute(update(User).where(User.username == "nist").values(kind="reference"))
    policy = create_release(engine, "demo", actor=OPERATOR).card["policy"]
    assert (policy["calibration_pairs"], policy["calibration_queries"]) == (25, 5)
    assert policy["model_kappa_quadratic"] == pytest.approx(KAPPA, abs=1e-12)
    humans = cohen_kappa_score([3, 0, 1, 2] * COPIES, [2, 1, 1, 3] * COPIES, labels=[0, 1, 2, 3], weights="quadratic")
    assert policy["humans_kappa_quadratic"]["value"] == pytest.approx(humans, abs=1e-12)

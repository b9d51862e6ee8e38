"""The Agreement page with a model judge: human–human numbers unchanged by it, and a "Model judges vs humans"
section whose numbers equal scikit-learn and krippendorff on the same pairs, the model's name shown literally."""

from __future__ import annotations

from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT
from tests.helpers import write_jsonl

PAGE = ROOT / "annotator" / "app" / "screens" / "lead_agreement.py"
MODEL = "![m](http://127.0.0.1:9/m.png)"
HUMANS = ["ana", "bob", "cy"]
DOMAIN = [0, 1, 2, 3]


def grades(seed: int = 3) -> tuple[list[dict], list[dict]]:
    """Seeded human grades on 4 queries × 10 fragments and a model judge that grades one higher half the time."""
    rng = np.random.default_rng(seed)
    humans, model = [], []
    for q in range(4):
        for f in range(10):
            truth = int(rng.integers(0, 4))
            pair = {"query_id": f"q{q}", "fragment_id": f"f{q}_{f}"}
            for a in HUMANS:
                humans.append(
                    {
                        **pair,
                        "annotator": a,
                        "grade": int(np.clip(truth + rng.choice([-1, 0, 1], p=[0.15, 0.7, 0.15]), 0, 3)),
                    }
                )
            model.append({**pair, "annotator": MODEL, "grade": int(min(3, truth + (rng.random() < 0.5)))})
    return humans, model


def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_model: bool) -> tuple[AppTest, list[dict], list[dict]]:
    """A 0–3 project whose human (and model) judgments come in through the store's import; its Agreement page."""
    from annotator.app.auth import TOKEN_KEY
    from db import imports, projects
    from db.accounts import users
    from db.accounts.permissions import OPERATOR
    from db.accounts.sessions import create_session
    from db.imports import Judges
    from db.store.schema import init_db

    url = f"sqlite:///{tmp_path / 'calibration.db'}"
    engine = init_db(url)
    lead = users.create_user(engine, "lead", "lead", password="lead-password-1", actor=OPERATOR)
    projects.create_project(engine, "judged", actor=OPERATOR)
    humans, model = grades()
    imports.import_queries(
        engine,
        "judged",
        write_jsonl(
            tmp_path / "q.jsonl", [{"id": q, "text": f"query {q}"} for q in sorted({r["query_id"] for r in humans})]
        ),
        actor=OPERATOR,
    )
    imports.import_fragments(
        engine,
        "judged",
        write_jsonl(
            tmp_path / "f.jsonl",
            [{"id": f, "text": f"fragment {f}"} for f in sorted({r["fragment_id"] for r in humans})],
        ),
        actor=OPERATOR,
    )
    imports.import_judgments(engine, "judged", write_jsonl(tmp_path / "h.jsonl", humans), actor=OPERATOR)
    if with_model:
        imports.import_judgments(
            engine,
            "judged",
            write_jsonl(tmp_path / "m.jsonl", model),
            actor=OPERATOR,
            judges=Judges("model", "test-model"),
        )
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    at = AppTest.from_file(str(PAGE), default_timeout=120)
    at.session_state[TOKEN_KEY] = create_session(engine, lead.id, client="apptest").token
    at.session_state["project"] = "judged"
    return at.run(), humans, model


def _matrix(humans: list[dict]) -> np.ndarray:
    """Annotators × pairs, as krippendorff.alpha expects."""
    units = sorted({(r["query_id"], r["fragment_id"]) for r in humans})
    out = np.full((len(HUMANS), len(units)), np.nan)
    for r in humans:
        out[HUMANS.index(r["annotator"]), units.index((r["query_id"], r["fragment_id"]))] = r["grade"]
    return out


def test_model_judges_section_beside_unchanged_human_numbers(tmp_path, monkeypatch):
    at, humans, model = page(tmp_path, monkeypatch, with_model=True)
    assert not at.exception
    mat = _matrix(humans)
    alpha = krippendorff.alpha(reliability_data=mat, level_of_measurement="ordinal", value_domain=DOMAIN)
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Krippendorff's α"] == f"{alpha:.2f}"  # the model judge does not count
    assert "Model judges vs humans" in [h.value for h in at.subheader]
    side = next(d.value for d in at.dataframe if "Who" in d.value.columns)
    assert side.loc[0, "Who"] == "human–human" and side.loc[0, "α ordinal"] == pytest.approx(alpha, abs=1e-12)
    # The model against the lower median of the three humans (each pair has three grades: the middle one).
    consensus = np.sort(mat, axis=0)[1]
    mine = np.array([r["grade"] for r in model])  # same pair order: queries then fragments, sorted
    kappa = cohen_kappa_score(consensus, mine, labels=DOMAIN, weights="quadratic")
    row = side[side["Who"] == f"{MODEL} vs human consensus"].iloc[0]
    assert row["κ quadratic"] == pytest.approx(kappa, abs=1e-12) and row["Pairs"] == len(model)
    assert row["α ordinal"] == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.vstack([consensus, mine]), level_of_measurement="ordinal", value_domain=DOMAIN
        ),
        abs=1e-12,
    )
    texts = [t.value for t in at.text]
    diff = float(np.mean(mine - consensus))
    assert (
        f"Model judge {MODEL}: {len(model)} grades. Against the human consensus it grades {diff:.2f} higher"
        in "\n".join(texts)
    )
    rendered = [
        e.value
        for kind in ("markdown", "caption", "error", "warning", "info", "success", "subheader")
        for e in at.get(kind)
    ] + [m.label for m in at.metric]
    assert not any("](http" in value for value in rendered)


def test_no_model_section_without_model_judges(tmp_path, monkeypatch):
    at, _, _ = page(tmp_path, monkeypatch, with_model=False)
    assert not at.exception
    assert "Model judges vs humans" not in [h.value for h in at.subheader]

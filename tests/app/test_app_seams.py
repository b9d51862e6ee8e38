"""AppTest of where the lead's pages meet the store, on the demo project (built once, copied per test):
every dispute offered, alerts that tell the golden set from the run, agreement numbers that say their scope."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT
from tests.helpers import PAGES, human_disputes, log_in, private_store

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once

# (store and template, from tests/conftest.py, are the seed-000 "shop" store of tests/helpers.py)

DEMO = "demo"


@pytest.fixture
def demo(demo_template, tmp_path, monkeypatch):
    """A private copy of the demo store; QRELKIT_DB_URL points the app at it."""
    return private_store(demo_template, "demo.db", DEMO, tmp_path, monkeypatch)


def page_test(engine, page: str, username: str = "lea") -> AppTest:
    """One page run by URL with `username` logged in on the demo project."""
    at = log_in(AppTest.from_file(str(PAGES / page), default_timeout=60), engine, username)
    at.session_state["project"] = DEMO
    return at.run()


def picker(at: AppTest, label: str):
    """The selectbox labelled `label`."""
    return next(s for s in at.selectbox if s.label == label)


def test_adjudicate_offers_every_human_dispute_and_moves_on_after_saving(demo):
    """The demo's people differ on more pairs than the old top-25 queue showed: the caption counts them all,
    the picker offers them all widest spread first, and saving a final grade opens the next open dispute."""
    expected = human_disputes(demo)
    assert len(expected) > 25  # the old queue was the agreement report's top 25
    at = page_test(demo, "lead_adjudicate.py")
    assert not at.exception
    assert any(f"{len(expected)} disputed pair(s) among people" in c.value for c in at.caption)
    pairs = picker(at, "Pair")
    assert len(pairs.options) == len(expected)
    spreads = [int(label.split(" · ")[2].removeprefix("spread ")) for label in pairs.options]
    assert spreads == sorted((s for _, _, _, s in expected), reverse=True)
    first, second = pairs.options[0], pairs.options[1]
    at.radio[0].set_value(2)
    at.text_area[0].input("Partial answer: the guideline's rule for a deadline without the refund")
    next(b for b in at.button if b.label == "Save final grade").click().run()
    assert not at.exception
    assert picker(at, "Pair").value == second
    assert picker(at, "Pair").options[0] == first + " · adjudicated"
    # The boundary filter: 0|1 keeps the pairs someone graded 0 and someone else above 0.
    picker(at, "Grade boundary").set_value("0|1").run()
    shown = [tuple(label.split(" · ")[:2]) for label in picker(at, "Pair").options]
    assert sorted(shown) == sorted((q, f) for q, f, low, _ in expected if low == 0)


RELABELLED = 15  # generated queries whose three relevant fragments the lead grades 0 before release 2


def test_evaluate_alert_blames_the_golden_set_when_only_labels_changed(demo):
    """The demo ships release 1. The lead then grades 0 every relevant fragment (f1–f3) of the first 15
    generated queries and makes release 2: the runs did not change, so each alert says the golden set changed
    (15 relabelled, none added or removed) and that on the other queries the run stayed where it was."""
    from annotator.demo import generated
    from db import adjudication, releases
    from db.evaluations import release_qrels
    from db.store.frames import pair_id

    queries = [q["id"] for q in generated()[0]][:RELABELLED]
    for qid in queries:
        for grade in (1, 2, 3):
            adjudication.adjudicate(demo, pair_id(demo, DEMO, qid, f"{qid}-f{grade}"), 0, "not on topic", actor="lea")
    releases.create_release(demo, DEMO, actor="lea")
    alike = release_qrels(demo, DEMO, 1)["query_id"].nunique() - RELABELLED
    at = page_test(demo, "lead_evaluate.py")
    assert not at.exception
    alerts = [w.value for w in at.warning if "CI" in w.value]
    assert alerts, "a fall this large on 15 of the queries is beyond the CI"
    for text in alerts:
        assert text.startswith("The golden set changed, not the run: "), text
        assert f"0 queries added, 0 removed, {RELABELLED} relabelled" in text
        went = text.split(f"on the {alike} queries releases 1 and 2 label alike it went ")[1].rstrip(".")
        before, after = went.split(" → ")
        assert before == after  # the run is the same on the queries labelled alike
    assert not any(w.value.startswith("The run fell") for w in at.warning)


def test_evaluate_caption_names_relevance_on_the_projects_scale(tmp_path, monkeypatch):
    """On a 1–3 project grade 1 ("off topic") is not relevant: the alerts' caption says grades ≥ 2 count."""
    from db.store.engine import get_engine
    from tests.helpers import RESULTS_LEAD as LEAD
    from tests.helpers import SCALE_PROJECT as PROJECT
    from tests.helpers import build_scale_project as build_project

    url = f"sqlite:///{tmp_path / 'scale.db'}"
    build_project(url, tmp_path)
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    engine = get_engine(url)
    at = log_in(AppTest.from_file(str(PAGES / "lead_evaluate.py"), default_timeout=60), engine, LEAD[0])
    at.session_state["project"] = PROJECT
    at.run()
    assert not at.exception
    captions = [c.value for c in at.caption if "Stored evaluations" in c.value]
    assert len(captions) == 1 and "count grades ≥ 2 as relevant" in captions[0]


def human_alpha(engine, version: int | None) -> tuple[float, int]:
    """Ordinal α (krippendorff package, annotators × units, value_domain 0–3) of the people's grades under
    guideline `version` (None: every version), and the number of pairs."""
    import krippendorff
    import numpy as np
    import sqlalchemy as sa

    from db.store.models import Guideline, Judgment, User

    stmt = (
        sa.select(User.username, Judgment.pair_id, Judgment.grade)
        .join(User, User.id == Judgment.user_id)
        .join(Guideline, Guideline.id == Judgment.guideline_id)
        .where(User.kind == "human")
    )
    if version is not None:
        stmt = stmt.where(Guideline.version == version)
    with engine.connect() as conn:
        rows = conn.execute(stmt).all()
    people = sorted({r[0] for r in rows})
    units = sorted({r[1] for r in rows})
    matrix = np.full((len(people), len(units)), np.nan)
    for who, pair, grade in rows:
        if grade is not None:
            matrix[people.index(who), units.index(pair)] = grade
    return float(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    ), len(units)


def test_agreement_leads_with_the_version_in_force_and_says_below_threshold(demo):
    """The demo grades under v1 (ambiguous) then v2 (in force). The α tile is v2's and says so; the pooled α is
    a separate line labelled as pooled; every table's status is "below threshold" exactly where the value is
    under the project's 0.6; a query with fewer than 10 pairs graded twice gets its n and no verdict."""
    import math

    current, n_current = human_alpha(demo, 2)
    pooled, n_pooled = human_alpha(demo, None)
    assert n_current < n_pooled and current > 0.6  # the demo's design: v2 agrees, v1 does not
    at = page_test(demo, "lead_agreement.py")
    assert not at.exception
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Krippendorff's α"] == f"{current:.2f}"
    assert "guideline version 2 (in force)" in at.caption[2].value
    assert any(c.value.startswith(f"Scope: guideline version 2 (in force). {n_current} pairs") for c in at.caption)
    pooled_lines = [c.value for c in at.caption if c.value.startswith("All guideline versions pooled:")]
    assert len(pooled_lines) == 1 and f"ordinal α {pooled:.2f}" in pooled_lines[0]
    assert f"on {n_pooled} pairs" in pooled_lines[0]
    checked = 0
    for frame in (d.value for d in at.dataframe):
        value = next((c for c in ("value", "ordinal α") if c in frame.columns), None)
        if value is None or "status" not in frame.columns:
            continue
        for v, status in zip(frame[value], frame["status"], strict=True):
            if v is None or (isinstance(v, float) and math.isnan(v)) or status.startswith("no verdict"):
                continue
            assert (status == "below threshold") == (v < 0.6), (v, status)
            checked += status == "below threshold"
    assert checked, "the demo's v1 queries have α under 0.6"
    by_query = next(d.value for d in at.dataframe if "query" in d.value.columns)
    few = by_query[by_query["pairs with ≥ 2 grades"] < 10]
    assert len(few) and all(
        s == f"no verdict: n = {n} < 10 pairs" for s, n in zip(few["status"], few["pairs with ≥ 2 grades"], strict=True)
    )
    at = next(r for r in at.radio if r.label == "Scope").set_value("all guideline versions pooled").run()
    assert {m.label: m.value for m in at.metric}["Krippendorff's α"] == f"{pooled:.2f}"
    assert "all guideline versions pooled" in at.caption[2].value


def test_lead_sends_the_rejudge_queue_and_the_annotator_sees_it(store):
    """The shop store: ana and ben graded q000's 20 pairs under v1, then v2 came, so ana's queue is done. The lead
    sends the listed pairs back from the Guidelines page; ana's Annotate page then serves them, marked as
    re-judging under v2, instead of "All your assigned pairs are judged"."""
    ana = log_in(AppTest.from_file(str(ROOT / "annotator" / "app" / "main.py"), default_timeout=60), store, "ana")
    ana.run()
    assert any("All your assigned pairs are judged" in s.value for s in ana.success)
    at = log_in(AppTest.from_file(str(PAGES / "lead_guidelines.py"), default_timeout=60), store, "lea")
    at.session_state["project"] = "shop"
    at.run()
    assert not at.exception
    assert any(
        "40 judgment(s) made under an older guideline version; 0 of them sent back" in c.value for c in at.caption
    )
    next(b for b in at.button if b.label == "Send back for re-judging").click().run()
    assert not at.exception
    assert any("40 assignment(s) reopened for re-judging under version 2." in s.value for s in at.success)
    assert at.dataframe[0].value["Sent back for re-judging"].all()
    ana.run()
    assert not ana.exception
    assert not any("All your assigned pairs are judged" in s.value for s in ana.success)
    assert any(w.value.startswith("Re-judging under guideline v2: ") for w in ana.warning)

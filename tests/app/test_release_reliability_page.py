"""The release card's reliability sentence on the Releases and Evaluate pages (AppTest): on the lead-page
fixture (one query, two pooled runs, one unpooled), on the demo project (30 judged queries, two runs), for a
project with no stored run, and for a release cut before cards kept the sentence."""

from __future__ import annotations

import shutil

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from annotator.app.components.reliability import NOT_ON_CARD
from db.releases import create_release
from db.reliability import NO_RUNS, project_reliability
from db.store.models import Release
from tests.helpers import PAGES, log_in, page_test, shown

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def _captions(at: AppTest) -> list[str]:
    return [shown(c.value) for c in at.caption]


def test_releases_page_shows_the_new_cards_sentence(store):
    """Cutting release 1 on the page puts the card's sentence under the card, as plain text: with one query it
    cannot size a t-test, and eval_core's report on the same release says the same; the caption names the runs
    stored then and which of them built the pool."""
    at = page_test(store, "lead_releases.py")
    assert not any("too few" in t for t in _texts(at))
    at.button[0].click().run()
    assert not at.exception
    expected = project_reliability(store, "shop", 1).sentence()
    assert expected.startswith("1 query and 3 run(s) are too few to size a paired t-test for ndcg@10.")
    assert expected in _texts(at)
    assert any(
        c.startswith(
            "Measured when the release was cut, on ndcg@10 over 1 queries against the 3 run(s) "
            "stored then (baseline, dense, fresh; pooled: baseline, dense)"
        )
        for c in _captions(at)
    )


@pytest.fixture
def demo(demo_template, tmp_path, monkeypatch):
    """A private copy of the demo store, the app pointed at it."""
    from db.store.engine import get_engine

    for path in demo_template.iterdir():
        shutil.copy(path, tmp_path / path.name)
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    monkeypatch.setenv("QRELKIT_PROJECT", "demo")
    return get_engine(url)


def _demo_page(engine, page: str) -> AppTest:
    at = log_in(AppTest.from_file(str(PAGES / page), default_timeout=120), engine, "lea")
    at.session_state["project"] = "demo"
    return at.run()


def test_demo_release_sentence_on_both_pages(demo):
    """The demo's release 1: the sentence eval_core gives for it (numbers, not a refusal) is on the Releases
    page under the card and on the Evaluate page beside the release, and the two runs both helped the pool."""
    expected = project_reliability(demo, "demo", 1).sentence()
    assert expected.startswith("30 queries detect ") and "needs about" in expected
    releases = _demo_page(demo, "lead_releases.py")
    assert not releases.exception
    assert expected in _texts(releases)
    assert any(
        "against the 2 run(s) stored then (baseline, dense; pooled: baseline, dense)" in c for c in _captions(releases)
    )
    evaluate = _demo_page(demo, "lead_evaluate.py")
    assert not evaluate.exception
    assert f"Release 1, as cut: {expected}" in _texts(evaluate)


def test_no_runs_and_old_releases_say_so(demo):
    """Without stored runs the card's one sentence says why it is not sized; a release whose card predates the
    sentence says that instead of showing nothing."""
    with demo.begin() as conn:
        conn.execute(sa.text("DELETE FROM evaluations"))
        conn.execute(sa.text("DELETE FROM run_entries"))
        conn.execute(sa.text("DELETE FROM runs"))
    create_release(demo, "demo", actor="lea")
    at = _demo_page(demo, "lead_releases.py")
    assert not at.exception and NO_RUNS in _texts(at)
    evaluate = _demo_page(demo, "lead_evaluate.py")
    assert not evaluate.exception and f"Release 2, as cut: {NO_RUNS}" in _texts(evaluate)

    with demo.begin() as conn:
        card = conn.execute(sa.select(Release.card).where(Release.version == 2)).scalar_one()
        conn.execute(
            sa.update(Release)
            .where(Release.version == 2)
            .values(card={k: v for k, v in card.items() if k != "reliability"})
        )
    at = _demo_page(demo, "lead_releases.py")
    assert not at.exception and NOT_ON_CARD.format(version=2) in _texts(at)
    evaluate = _demo_page(demo, "lead_evaluate.py")
    assert not evaluate.exception and NOT_ON_CARD.format(version=2) in _texts(evaluate)


def test_a_run_name_keeps_its_underscores_on_the_card(store):
    """A run called bm25_rm3_k1 (Markdown would read `_rm3_` as emphasis if it were not escaped) is named as
    typed in the card's caption, in the order the card lists its runs (by name)."""
    from db.store.models import Run

    with store.begin() as conn:
        conn.execute(sa.update(Run).where(Run.name == "dense").values(name="bm25_rm3_k1"))
    at = page_test(store, "lead_releases.py")
    at.button[0].click().run()
    assert not at.exception
    assert any("stored then (baseline, bm25_rm3_k1, fresh; pooled: " in c for c in _captions(at)), _captions(at)
    assert any(r"bm25\_rm3\_k1" in c.value for c in at.caption)  # escaped, so Markdown shows the underscores

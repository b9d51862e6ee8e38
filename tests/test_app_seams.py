"""AppTest of where the lead's pages meet the store, on the demo project (built once, copied per test):
every dispute offered, alerts that tell the golden set from the run, agreement numbers that say their scope."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.test_app_lead import PAGES, log_in, scan_components_once  # noqa: F401  (the autouse fixture)

DEMO = "demo"


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory) -> Path:
    """The demo project in a SQLite file, built once per module."""
    from annotator.demo import build_demo
    from db.store.schema import init_db

    folder = tmp_path_factory.mktemp("demo-template")
    engine = init_db(f"sqlite:///{folder / 'demo.db'}")
    build_demo(engine)
    engine.dispose()
    return folder


@pytest.fixture
def demo(demo_template, tmp_path, monkeypatch):
    """A private copy of the demo store; QRELKIT_DB_URL points the app at it."""
    from db.store.engine import get_engine

    for name in ("demo.db", "demo.db-wal", "demo.db-shm"):
        if (demo_template / name).exists():
            shutil.copy(demo_template / name, tmp_path / name)
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    monkeypatch.setenv("QRELKIT_PROJECT", DEMO)
    return get_engine(url)


def page_test(engine, page: str, username: str = "lea") -> AppTest:
    """One page run by URL with `username` logged in on the demo project."""
    at = log_in(AppTest.from_file(str(PAGES / page), default_timeout=60), engine, username)
    at.session_state["project"] = DEMO
    return at.run()


def human_disputes(engine) -> list[tuple[str, str, int, int]]:
    """(query, fragment, lowest grade, spread) of every demo pair whose two people gave different grades, read straight from
    the judgments table (model judges and can't-judge left out), widest spread first."""
    import sqlalchemy as sa

    from db.store.models import Fragment, Judgment, Pair, Query, User

    with engine.connect() as conn:
        rows = conn.execute(sa.select(Query.external_id, Fragment.external_id, Judgment.grade)
                            .select_from(Judgment).join(Pair, Pair.id == Judgment.pair_id)
                            .join(Query, Query.id == Pair.query_id).join(Fragment, Fragment.id == Pair.fragment_id)
                            .join(User, User.id == Judgment.user_id)
                            .where(User.kind == "human", Judgment.grade.is_not(None))).all()
    grades: dict[tuple[str, str], list[int]] = {}
    for q, f, g in rows:
        grades.setdefault((q, f), []).append(g)
    return sorted(((q, f, min(g), max(g) - min(g)) for (q, f), g in grades.items() if max(g) > min(g)),
                  key=lambda row: -row[3])


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

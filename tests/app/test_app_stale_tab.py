"""Two tabs of one annotator on the Annotate page: the stale tab's grade is not saved over the fresh one's; the
page asks (keep mine / take the newer), both answers do what they say, and the counters are recounted."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from db.grading import get_pair, next_pair, progress
from db.store.models import JudgmentHistory
from db.store.schema import init_db
from tests.helpers import app_as, build


@pytest.fixture
def project_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return build(tmp_path, monkeypatch)


def _texts(at) -> str:
    return "\n".join(
        [str(w.value) for w in at.warning] + [str(i.value) for i in at.info] + [b.label for b in at.button]
    )


def _overall(at) -> str:
    return next(p.proto.text for p in at.get("progress") if p.proto.text.startswith("Overall"))


def _history(engine, pair_id):
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(JudgmentHistory.old_grade, JudgmentHistory.new_grade)
            .where(JudgmentHistory.pair_id == pair_id)
            .order_by(JudgmentHistory.id)
        )
        return [tuple(r) for r in rows]


def _two_tabs_on_one_pair(url: str):
    engine = init_db(url)
    first = next_pair(engine, "t", "ana")
    stale, fresh = app_as("ana", url), app_as("ana", url)
    fresh.button(key="grade_2").click().run()  # the fresh tab grades 2 and moves on
    assert not fresh.exception and _overall(fresh) == "Overall: 1 / 6 judged"
    stale.button(key="grade_1").click().run()  # the stale tab still shows the pair ungraded and presses 1
    assert not stale.exception
    return engine, first, stale


def test_stale_tab_asks_and_can_keep_its_grade(project_db: str) -> None:
    engine, first, stale = _two_tabs_on_one_pair(project_db)
    assert get_pair(engine, "t", "ana", first.pair_id).grade == 2  # not overwritten
    shown = _texts(stale)
    assert "This pair was graded 2 meanwhile in another tab — keep 1 · Related / mentioned in passing?" in shown
    assert _overall(stale) == "Overall: 1 / 6 judged"  # recounted: the other tab's grade is counted
    stale.button(key="keep_mine").click().run()
    assert not stale.exception
    assert get_pair(engine, "t", "ana", first.pair_id).grade == 1
    assert _history(engine, first.pair_id) == [(None, 2), (2, 1)]  # both grades in the history
    assert "meanwhile" not in _texts(stale)
    assert _overall(stale) == f"Overall: {progress(engine, 't', 'ana').done} / 6 judged" == "Overall: 1 / 6 judged"
    assert next_pair(engine, "t", "ana").pair_id != first.pair_id


def test_stale_tab_can_take_the_newer_grade(project_db: str) -> None:
    engine, first, stale = _two_tabs_on_one_pair(project_db)
    stale.button(key="take_newer").click().run()
    assert not stale.exception
    assert get_pair(engine, "t", "ana", first.pair_id).grade == 2
    assert _history(engine, first.pair_id) == [(None, 2)]
    assert "meanwhile" not in _texts(stale)
    assert "Your grade: 2 · Answers partially / essential context. Press another grade to change it." in _texts(stale)
    assert _overall(stale) == "Overall: 1 / 6 judged"


def test_stale_clear_leaves_the_other_tabs_grade(project_db: str) -> None:
    engine = init_db(project_db)
    first = next_pair(engine, "t", "ana")
    tab = app_as("ana", project_db)
    tab.button(key="grade_1").click().run()
    tab.button(key="back").click().run()  # shows the pair graded 1, with "Clear my grade"
    other = app_as("ana", project_db)
    other.button(key="back").click().run()
    other.button(key="grade_3").click().run()  # the other tab changes it to 3
    tab.button(key="undo").click().run()
    assert not tab.exception
    assert get_pair(engine, "t", "ana", first.pair_id).grade == 3
    assert "Not cleared: this pair was graded 3 meanwhile in another tab; it shows that now." in _texts(tab)

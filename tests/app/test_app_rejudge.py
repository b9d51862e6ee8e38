"""AppTest: a pair sent back for re-judging is graded blind on the Annotate page — no old grade shown or
preselected, no old note — and counts as pending in the progress bar until it is graded again."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from db.accounts.permissions import OPERATOR
from db.adjudication import send_for_rejudging
from db.grading import next_pair
from db.store.models import Judgment, User
from tests.conftest import ROOT
from tests.helpers import log_in

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once

OLD_NOTE = "old note: it was a 3"


def _annotate(engine, who: str) -> AppTest:
    at = log_in(AppTest.from_file(str(ROOT / "annotator" / "app" / "main.py"), default_timeout=60), engine, who)
    return at.run()


def test_rejudging_is_blind_and_pending_until_graded(store):
    """The shop store: ana graded q000's 20 pairs under v1, v2 is in force. Her first pair gets a note, then all
    40 v1 judgments are sent back: ana's page shows the pair with no grade of hers, no note, 0 of 20 judged."""
    first = next_pair(store, "shop", "ana")
    assert first is None  # everything graded
    with store.begin() as conn:
        ana = conn.execute(sa.select(User.id).where(User.username == "ana")).scalar_one()
        conn.execute(sa.update(Judgment.__table__).where(Judgment.__table__.c.user_id == ana).values(note=OLD_NOTE))
    assert send_for_rejudging(store, "shop", actor=OPERATOR) == 40
    at = _annotate(store, "ana")
    assert not at.exception
    assert any(w.value.startswith("Re-judging under guideline v2: ") for w in at.warning)
    assert not any(i.value.startswith("Your grade") for i in at.info)
    grades = [b for b in at.button if b.key and b.key.startswith("grade_")]
    assert len(grades) == 4 and all(b.proto.type != "primary" for b in grades)  # nothing preselected
    assert next(t for t in at.text_input if t.label == "Note (optional)").value == ""
    assert "Overall: 0 / 20 judged" in [p.proto.text for p in at.get("progress")]
    assert not any(b.key == "undo" for b in at.button)
    at.button(key="grade_1").click().run()
    assert not at.exception
    assert "Overall: 1 / 20 judged" in [p.proto.text for p in at.get("progress")]
    assert "Overall: 1 / 20 judged" in [p.proto.text for p in _annotate(store, "ana").get("progress")]

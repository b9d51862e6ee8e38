"""One guard for every write from the app (auth.guarded): after the tab's session was revoked (logout in
another tab, a password change) or the account deactivated, no button of the Annotate page writes anything —
grade, can't judge, clear my grade — and the store itself refuses an undo by a deactivated account or behind a
closed queue, as it refuses a grade. A database out of reach inside a callback is one sentence."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from annotator.app.auth import TOKEN_KEY
from db.accounts.permissions import OPERATOR
from db.accounts.sessions import revoke
from db.accounts.users import deactivate
from db.grading import get_pair, next_pair, record_judgment, undo_judgment
from db.store.models import Judgment, JudgmentHistory
from db.store.schema import init_db
from eval_core.errors import Refused
from tests.conftest import ROOT
from tests.helpers import app_as, build


def _counts(engine) -> tuple[int, int]:
    with engine.connect() as conn:
        return (
            conn.execute(sa.select(sa.func.count()).select_from(Judgment)).scalar_one(),
            conn.execute(sa.select(sa.func.count()).select_from(JudgmentHistory)).scalar_one(),
        )


def _graded_app(tmp_path, monkeypatch):
    """ana graded her first pair 2 in the app, and the pair is open again on screen (Back)."""
    url = build(tmp_path, monkeypatch)
    engine = init_db(url)
    first = next_pair(engine, "t", "ana")
    at = app_as("ana", url)
    at.button(key="grade_2").click().run()
    at.button(key="back").click().run()
    assert not at.exception and get_pair(engine, "t", "ana", first.pair_id).grade == 2
    return engine, at, first


@pytest.mark.parametrize("end", ["revoked", "deactivated"])
@pytest.mark.parametrize("action", ["undo", "grade_3", "cant_judge"])
def test_an_ended_session_writes_nothing(tmp_path, monkeypatch, end, action) -> None:
    engine, at, first = _graded_app(tmp_path, monkeypatch)
    if action == "cant_judge":
        at.button(key="cant_judge_open").click().run()
        at.text_input(key=f"reason_{first.pair_id}").input("unreadable")
    before = _counts(engine)
    if end == "revoked":
        revoke(engine, at.session_state[TOKEN_KEY])
    else:
        deactivate(engine, "ana", actor=OPERATOR)
    at.button(key=action).click().run()  # the tab still shows the pair and its buttons
    assert not at.exception
    assert _counts(engine) == before  # before issue 29, "Clear my grade" deleted the judgment (294 → 293)
    assert any(b.label == "Log in" for b in at.button)  # the rerun shows the login form


def test_the_store_refuses_an_undo_by_a_deactivated_account(tmp_path, monkeypatch) -> None:
    engine = init_db(build(tmp_path, monkeypatch))
    pair = next_pair(engine, "t", "ana")
    record_judgment(engine, pair.pair_id, "ana", 1)
    deactivate(engine, "ana", actor=OPERATOR)
    before = _counts(engine)
    with pytest.raises(Refused, match="deactivated"):
        undo_judgment(engine, pair.pair_id, "ana")
    assert _counts(engine) == before


def test_the_store_refuses_an_undo_behind_a_closed_queue(tmp_path, monkeypatch) -> None:
    from db import qualification

    engine = init_db(build(tmp_path, monkeypatch))
    pair = next_pair(engine, "t", "ana")
    record_judgment(engine, pair.pair_id, "ana", 1)
    qualification.close_queue(engine, "t", "ana", "off-topic grades", actor="lea")
    before = _counts(engine)
    with pytest.raises(Refused, match="closed"):
        undo_judgment(engine, pair.pair_id, "ana")
    assert _counts(engine) == before


def test_an_outage_inside_clear_my_grade_is_one_sentence_and_the_next_press_works(tmp_path, monkeypatch) -> None:
    engine, at, first = _graded_app(tmp_path, monkeypatch)
    import db.grading

    real, calls = db.grading.undo_judgment, []

    def down_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise OperationalError("DELETE FROM judgments …", {}, Exception("server closed the connection"))
        return real(*args, **kwargs)

    monkeypatch.setattr(db.grading, "undo_judgment", down_once)
    at.run()  # the page binds its callbacks afresh on every run
    at.button(key="undo").click().run()
    assert not at.exception  # before: the error escaped the button callback
    shown = [w.value for w in at.warning] + [e.value for e in at.error]
    assert len(shown) == 1 and "database did not answer" in shown[0] and "DELETE" not in shown[0], shown
    assert get_pair(engine, "t", "ana", first.pair_id).grade == 2
    at.button(key="undo").click().run()  # the next press
    assert not at.exception and get_pair(engine, "t", "ana", first.pair_id).grade is None


# Callbacks that write nothing and read nothing from the store, so need no guard.
UNGUARDED = {"show", "open_cant_judge", "_set", "auth.logout", "submit_login", "_picked", "ignore", "take_newer"}


def test_every_write_callback_of_the_pages_goes_through_the_guard() -> None:
    """Every on_click / on_change / on_submit under annotator/app/screens is auth.guarded(...) or a listed
    callback that touches no store."""
    found = []
    for path in sorted((Path(ROOT) / "annotator" / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg in ("on_click", "on_change", "on_submit"):
                value = node.value
                if isinstance(value, ast.Call) and ast.unparse(value.func) == "auth.guarded":
                    continue
                if isinstance(value, (ast.Lambda, ast.Constant)):
                    continue
                name = ast.unparse(value)
                if name not in UNGUARDED:
                    found.append(f"{path.relative_to(ROOT)}:{node.value.lineno}: {name}")
    assert found == []

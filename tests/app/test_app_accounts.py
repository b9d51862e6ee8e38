"""The Project page's Annotators tab (AppTest, no browser, SQLite): a lead lifts the login back-off of an account
that wrong passwords locked, as themselves, told so in one line with the account's name shown literally."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from annotator.app.auth import TOKEN_KEY
from annotator.app.text import literal
from db.accounts.logins import UNLOCK_CLIENT, locked_accounts, login
from db.accounts.permissions import OPERATOR
from db.accounts.sessions import create_session
from db.accounts.users import create_user, list_users
from db.projects import create_project
from db.store.engine import get_engine
from db.store.models import LoginAttempt, utcnow
from db.store.schema import init_db

PROJECT_PAGE = str(Path(__file__).resolve().parents[2] / "annotator" / "app" / "screens" / "lead_project.py")
MARKUP = "**bo** <b>x</b> [y](http://127.0.0.1:9/y)"  # an annotator whose name is Markdown, HTML and a link
PASSWORD = "bo-password-1"
WAITS = "Login back-off (s)"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A store with a lead, two annotators (one named in markup) and a project; the app reads it."""
    url = f"sqlite:///{tmp_path / 'accounts.db'}"
    engine = init_db(url)
    create_user(engine, "lea", "lead", "lead-password", actor=OPERATOR)
    create_user(engine, "ana", "annotator", "ana-password", actor=OPERATOR)
    create_user(engine, MARKUP, "annotator", PASSWORD, actor=OPERATOR)
    create_project(engine, "t", actor=OPERATOR)
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    monkeypatch.setenv("QRELKIT_PROJECT", "t")
    yield get_engine(url)
    get_engine.cache_clear()


def lock(engine, username: str) -> None:
    """Nine failed logins of `username` just now, from nine clients (what five wrong passwords and one more
    after each of four waits leave): the account waits 160 s, long enough for any test; no client waits."""
    with engine.begin() as conn:
        conn.execute(
            sa.insert(LoginAttempt),
            [
                {"username": username, "client": f"10.7.0.{i}", "succeeded": False, "attempted_at": utcnow()}
                for i in range(9)
            ],
        )


def project_page(engine, lead: str = "lea") -> AppTest:
    """The Project page run with `lead` logged in (a store-issued token, as the login form gives)."""
    at = AppTest.from_file(PROJECT_PAGE, default_timeout=60)
    lead_id = next(u.id for u in list_users(engine) if u.username == lead)
    at.session_state[TOKEN_KEY] = create_session(engine, lead_id, client="apptest").token
    at.session_state["project"] = "t"
    return at.run()


def unlock_pickers(at: AppTest) -> list:
    """The Unlock form's account picker, if the tab shows one."""
    return [s for s in at.selectbox if s.label == "Account"]


def waits_shown(at: AppTest) -> dict[str, object]:
    """Username → what the accounts table shows as its login back-off (None where it shows "—")."""
    table = next(d.value for d in at.dataframe if "Username" in d.value.columns)
    return {
        name: (None if pd.isna(wait) else int(wait)) for name, wait in zip(table["Username"], table[WAITS], strict=True)
    }


def test_no_unlock_is_offered_while_nobody_is_locked(store):
    at = project_page(store)
    assert not at.exception
    assert unlock_pickers(at) == [] and "Unlock" not in [b.label for b in at.button]
    assert waits_shown(at) == {"lea": None, "ana": None, MARKUP: None}


def test_a_lead_unlocks_a_locked_account_which_then_logs_in(store):
    lock(store, MARKUP)
    assert login(store, MARKUP, PASSWORD, client="10.7.1.1").user is None  # the right password must wait
    at = project_page(store)
    assert not at.exception
    [picker] = unlock_pickers(at)
    assert picker.options == [MARKUP]  # the name alone: a ticking label would reset the choice between runs
    assert picker.value == MARKUP
    waits = waits_shown(at)
    assert waits["ana"] is None and waits["lea"] is None and 100 < waits[MARKUP] <= 160
    next(b for b in at.button if b.label == "Unlock").click().run()
    assert not at.exception and [e.value for e in at.error] == []
    assert [s.value for s in at.success] == [f"{literal(MARKUP)} is unlocked and can log in now."]
    assert unlock_pickers(at) == []  # drawn again without the account
    assert waits_shown(at)[MARKUP] is None
    with store.connect() as conn:  # recorded as the lead's act
        clients = (
            conn.execute(
                sa.select(LoginAttempt.client).where(LoginAttempt.username == MARKUP, LoginAttempt.succeeded.is_(True))
            )
            .scalars()
            .all()
        )
    assert clients == [f"{UNLOCK_CLIENT}lea"]
    assert login(store, MARKUP, PASSWORD, client="10.7.1.1").user.username == MARKUP
    at.run()
    assert [s.value for s in at.success] == []  # the confirmation is said once


def test_the_picker_lists_only_the_locked_accounts(store):
    lock(store, "ana")
    lock(store, MARKUP)
    assert login(store, "lea", "not-the-password", client="10.7.2.1").user is None  # one failure: no wait
    at = project_page(store)
    [picker] = unlock_pickers(at)
    assert [option.split(" · ")[0] for option in picker.options] == sorted(["ana", MARKUP])
    picker.set_value("ana")
    next(b for b in at.button if b.label == "Unlock").click().run()
    assert [s.value for s in at.success] == ["ana is unlocked and can log in now."]
    assert [option.split(" · ")[0] for option in unlock_pickers(at)[0].options] == [MARKUP]
    assert set(locked_accounts(store)) == {MARKUP}

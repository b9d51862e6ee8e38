"""The app's login gate (AppTest, no browser): a store session per login, the token re-checked on every run,
the role re-read, logout revoking the session, the back-off shown, refusals as one sentence."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from annotator.app.auth import SESSION_ENDED, TOKEN_KEY
from annotator.app.text import BREAK
from db.accounts.permissions import OPERATOR
from db.accounts.sessions import IDLE_TIMEOUT, create_session, resolve
from db.accounts.users import create_user, deactivate, set_role
from db.projects import create_project
from db.store.engine import get_engine
from db.store.models import UserSession, utcnow
from db.store.schema import init_db

APP = str(Path(__file__).resolve().parents[2] / "annotator" / "app" / "main.py")
AGREEMENT = "screens/lead_agreement.py"


@pytest.fixture
def url(tmp_path, monkeypatch) -> str:
    """A store with a lead, an annotator and an empty project; the app reads it through QRELKIT_DB_URL."""
    url = f"sqlite:///{tmp_path / 'app.db'}"
    engine = init_db(url)
    create_user(engine, "lea", "lead", "lead-password", actor=OPERATOR)
    create_user(engine, "ana", "annotator", "ana-password", actor=OPERATOR)
    create_project(engine, "t", actor=OPERATOR)
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    monkeypatch.setenv("QRELKIT_PROJECT", "t")
    yield url
    get_engine.cache_clear()


def log_in(at: AppTest, username: str, password: str) -> AppTest:
    """Fill the login form and submit it."""
    at.text_input(key="login_username").input(username)
    at.text_input(key="login_password").input(password)
    return at.button[0].click().run()


def with_token(token: str) -> AppTest:
    """A new browser session (a reload or another tab) that presents `token`, as the cookie would."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state[TOKEN_KEY] = token
    return at.run()


def on_login_form(at: AppTest) -> bool:
    """True when the run shows the login form and nobody is logged in."""
    return [t.label for t in at.text_input] == ["Username", "Password"] and "user" not in at.session_state


def test_a_login_opens_a_store_session_whose_token_logs_in_another_tab(url):
    at = log_in(AppTest.from_file(APP, default_timeout=60).run(), "ana", "ana-password")
    assert not at.exception and at.session_state["user"].username == "ana"
    token = at.session_state[TOKEN_KEY]
    assert resolve(get_engine(url), token).username == "ana"
    other = with_token(token)
    assert not on_login_form(other) and other.session_state["user"].username == "ana"
    assert "login_password" not in at.session_state  # the password does not linger in the session


def test_a_made_up_token_is_no_login(url):
    assert on_login_form(with_token("made-up-token"))


def test_deactivation_logs_an_open_session_out_on_its_next_run(url):
    engine = get_engine(url)
    at = with_token(create_session(engine, 1).token)  # lea
    assert at.session_state["user"].role == "lead"
    deactivate(engine, "lea", actor=OPERATOR)
    assert on_login_form(at.run())


def test_an_open_tab_left_idle_past_the_timeout_is_logged_out_on_its_next_run(url):
    engine = get_engine(url)
    at = with_token(create_session(engine, 2).token)  # ana
    assert at.session_state["user"].username == "ana"
    with engine.begin() as conn:
        conn.execute(sa.update(UserSession).values(last_seen_at=utcnow() - IDLE_TIMEOUT - timedelta(minutes=1)))
    assert on_login_form(at.run())
    assert [i.value for i in at.info] == [SESSION_ENDED]  # told why the form is back


def test_a_demoted_lead_is_refused_a_lead_page_at_once(url):
    engine = get_engine(url)
    at = with_token(create_session(engine, 1).token)
    at.switch_page(AGREEMENT).run()
    assert not at.exception and not any("Not allowed" in e.value for e in at.error)
    set_role(engine, "lea", "annotator", actor=OPERATOR)
    at.run()  # the role change ended the session: the lead page is gone, the login form says why
    assert [i.value for i in at.info] == [SESSION_ENDED] and [b.label for b in at.button] == ["Log in"]
    again = with_token(create_session(engine, 1).token)
    again.switch_page(AGREEMENT).run()
    assert [e.value for e in again.error] == [
        "Not allowed for your role: this page is for the lead role; you are logged in as annotator."
    ]


def test_an_annotator_following_a_lead_link_is_told_not_allowed(url):
    at = with_token(create_session(get_engine(url), 2).token)  # ana
    at.switch_page(AGREEMENT).run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Not allowed for your role: this page is for the lead role; you are logged in as annotator."
    ]


def test_logout_revokes_the_session_for_every_tab(url):
    engine = get_engine(url)
    token = create_session(engine, 2).token
    first, second = with_token(token), with_token(token)
    next(b for b in first.sidebar.button if b.label == "Log out").click().run()
    assert on_login_form(first)
    assert [i.value for i in first.info] == []  # logging out is no news to the one who did it
    assert resolve(engine, token) is None
    assert on_login_form(second.run())
    assert [i.value for i in second.info] == [SESSION_ENDED]  # the other tab is told why
    with engine.connect() as conn:
        assert conn.execute(sa.select(UserSession.revoked_at)).scalar_one() is not None


def test_the_form_shows_the_back_off_after_five_failures(url, caplog):
    at = AppTest.from_file(APP, default_timeout=60).run()
    with caplog.at_level(logging.WARNING, logger="qrelkit.auth"):
        for _ in range(4):
            log_in(at, "ana", "not-the-password")
            assert [e.value for e in at.error] == ["Unknown username or wrong password."]
        log_in(at, "ana", "not-the-password")
        assert [e.value for e in at.error] == ["Too many attempts; try again in 10 s."]
        log_in(at, "ana", "ana-password")
    assert on_login_form(at)
    assert len(at.error) == 1 and at.error[0].value.startswith("Too many attempts; try again in ")
    assert "login throttled: user 'ana'" in caplog.text


def test_a_refused_store_action_is_one_sentence_in_the_page():
    def page() -> None:
        from annotator.app.errors import user_errors

        with user_errors("No release"):
            raise PermissionError("only a lead may do this; 'ana' is annotator")
        with user_errors("Not added"):
            raise ValueError("password must be at least 8 characters\nTraceback (most recent call last): ...")

    at = AppTest.from_function(page).run()
    assert not at.exception
    shown = [e.value.replace(BREAK, "").replace("\\", "") for e in at.error]  # what the page shows
    assert shown == [
        "No release: Only a lead may do this; 'ana' is annotator.",
        "Not added: Password must be at least 8 characters.",
    ]

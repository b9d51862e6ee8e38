"""Who is using the app: a store-backed login session that survives reloads and tabs, and role gates.

The browser keeps only a random token in a cookie (set by a script the app puts in the page: Streamlit cannot
set cookies from Python, so it cannot be HttpOnly); the store keeps its SHA-256. Every page run resolves the token
against the store, so logout, expiry, deactivation and a changed role take effect on the next click.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
from collections.abc import Callable
from datetime import datetime

import streamlit as st
from sqlalchemy.exc import DBAPIError

from annotator.app import server, state
from db.accounts import logins, sessions
from db.accounts.users import UserInfo, list_users
from db.store.engine import STORE_DOWN, StoreUnavailable, is_outage

COOKIE = "qrelkit_session"
USER_KEY = "user"  # the resolved UserInfo of this run, for pages
TOKEN_KEY = "session_token"  # this browser session's token (tests may put a store-issued token here)
EXPIRES_KEY = "session_expires"
CLEAR_COOKIE_KEY = "session_cookie_dead"  # a token that no longer works, to remove from the cookie
SET_COOKIE_KEY = "session_cookie_new"  # a fresh login whose token the browser has not been given yet
ENDED_KEY = "session_ended"  # this tab's session stopped working without a logout here: say so on the login form
LOGGED_OUT_KEY = "logged_out"  # this tab logged out: its stale cookie token is no news
SESSION_ENDED = (
    "Your session has ended (2 hours without activity, a logout in another tab, or a change to your "
    "account). Log in again; your saved grades are kept."
)
NOT_ALLOWED = "Not allowed for your role"
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{1,200}")  # what secrets.token_urlsafe produces
COOKIE_ATTRIBUTES = "; path=/; SameSite=Strict"
SESSION_KEYS = (USER_KEY, TOKEN_KEY, EXPIRES_KEY, "pair_id", "shown_at")
GUARD_FLASH = "guard_flash"  # the one sentence a guarded write left for the next run to show
log = logging.getLogger("qrelkit.app")


UNTRUSTED_FORWARD = "forwarded, proxy not trusted"  # one client for every request whose forwarding we cannot check


def client_label() -> str:
    """Who is knocking, for back-off and the session record: the connection's address, or the one a trusted
    proxy put in X-Forwarded-For (`qrelkit serve --trusted-proxies`: uvicorn's FORWARDED_ALLOW_IPS, which
    serve always sets, to none by default). A server started some other way keeps uvicorn's default trust in
    127.0.0.1, where anyone on the machine could name any client: then every request carrying the header is
    one client, whatever it claims."""
    try:
        address = st.context.ip_address
        forwarded = st.context.headers.get("X-Forwarded-For")
    except Exception:  # no browser behind this run (AppTest)
        address, forwarded = None, None
    if forwarded and os.environ.get("FORWARDED_ALLOW_IPS") is None:
        return UNTRUSTED_FORWARD
    return address if isinstance(address, str) and address else "local"


def _session_id() -> str | None:
    """Streamlit's id of this browser session (what its upload URLs carry), if a browser is behind this run."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


def _cookie_token() -> str | None:
    """The token the browser sent when this tab connected (a reload or a new tab), if any."""
    try:
        token = st.context.cookies.get(COOKIE)
    except Exception:  # no browser behind this run (AppTest)
        return None
    return token if isinstance(token, str) else None


def current_user() -> UserInfo | None:
    """The logged-in user, re-read from the store on every page run (active account, current role)."""
    token = st.session_state.get(TOKEN_KEY) or _cookie_token()
    user = sessions.resolve(state.engine(), token)
    server.mark_session(_session_id(), user is not None)  # uploads are taken from logged-in sessions only
    if user is None:
        for key in SESSION_KEYS:
            st.session_state.pop(key, None)
        if token:
            st.session_state[CLEAR_COOKIE_KEY] = token
            if not st.session_state.get(LOGGED_OUT_KEY):
                st.session_state[ENDED_KEY] = True
        return None
    st.session_state[TOKEN_KEY] = token
    st.session_state[USER_KEY] = user
    return user


def _remember(user: UserInfo, new: sessions.NewSession) -> None:
    """Keep a fresh session's token in this tab (sync_cookie then hands it to the browser)."""
    st.session_state[TOKEN_KEY] = new.token
    st.session_state[EXPIRES_KEY] = new.expires_at
    st.session_state[USER_KEY] = user
    st.session_state[SET_COOKIE_KEY] = True
    for key in (CLEAR_COOKIE_KEY, ENDED_KEY, LOGGED_OUT_KEY):
        st.session_state.pop(key, None)


# A script's element would take a row of the layout (and the elements below it would jump when it goes away).
HIDE_SCRIPT_ROW = "<style>[data-testid='stElementContainer']:has(script[data-qrelkit-script]) {display: none}</style>"


def page_script(code: str) -> None:
    """Run a line of JavaScript in the page itself (no iframe, and no value sent back, so no extra rerun), in an
    element that takes no room. The script runs when the page draws it: the same text at the same place in the
    next run does not run again."""
    st.html(f"{HIDE_SCRIPT_ROW}<script data-qrelkit-script>{code}</script>", unsafe_allow_javascript=True)


def _js(text: str) -> str:
    """A JavaScript string literal that cannot close the <script> element it sits in."""
    return json.dumps(text).replace("<", "\\u003c")


def sync_cookie() -> None:
    """After a fresh login, give the browser its token once (the script runs when the page draws it): later
    reloads and new tabs then find the session. Path /, SameSite=Strict, Secure over HTTPS, expiring with the
    session."""
    token = st.session_state.get(TOKEN_KEY)
    if not st.session_state.pop(SET_COOKIE_KEY, False) or not token or not TOKEN_SHAPE.fullmatch(token):
        return
    expires: datetime | None = st.session_state.get(EXPIRES_KEY)
    until = f"; expires={expires.strftime('%a, %d %b %Y %H:%M:%S GMT')}" if expires else ""
    page_script(
        f"document.cookie = {_js(f'{COOKIE}={token}{COOKIE_ATTRIBUTES}{until}')}"
        " + (location.protocol === 'https:' ? '; Secure' : '');"
    )


def clear_stale_cookie() -> None:
    """After logout or a dead token, remove the cookie so the next reload does not even try it (unless another
    tab has meanwhile put a new login there)."""
    dead = st.session_state.pop(CLEAR_COOKIE_KEY, None)
    if not dead:
        return
    expired = f"{COOKIE}={COOKIE_ATTRIBUTES}; expires=Thu, 01 Jan 1970 00:00:00 GMT"
    page_script(
        f"if (document.cookie.split('; ').includes({_js(f'{COOKIE}={dead}')})) document.cookie = {_js(expired)};"
    )


def oidc_configured() -> bool:
    """True when secrets.toml holds an [auth] section, so single sign-on can be offered."""
    try:
        return st.secrets.load_if_toml_exists() and "auth" in st.secrets
    except Exception:  # an unreadable secrets file means "not configured"
        return False


def _oidc_user() -> UserInfo | None:
    """Map an OIDC identity (email, else preferred username) onto an active store account."""
    if not (oidc_configured() and st.user.is_logged_in):
        return None
    names = {st.user.get("email"), st.user.get("preferred_username")} - {None}
    for user in list_users(state.engine()):
        if user.active and user.username in names:
            return user
    return None


def submit_login() -> None:
    """Form callback: check the password (unless this account or client must wait) before the script runs, so
    a successful login costs one run, not two. A database that does not answer is one sentence on the form."""
    try:
        result = logins.login(
            state.engine(),
            st.session_state.get("login_username") or "",
            st.session_state.get("login_password") or "",
            client=client_label(),
        )
    except DBAPIError as exc:
        if not is_outage(exc):
            raise
        st.session_state.pop("login_password", None)
        st.session_state["login_store_down"] = True
        return
    st.session_state.pop("login_password", None)
    if result.user is None:
        st.session_state["login_failed"] = result.retry_after
        return
    assert result.session is not None  # a login that returns the user opened a session
    _remember(result.user, result.session)


def wait_message(seconds: int) -> str:
    """What a throttled login shows."""
    return f"Too many attempts; try again in {seconds} s."


def login_page() -> None:
    """The login form: fields labelled Username and Password and a Log in button. The address stays as it
    is, so a deep link opens its page once the login succeeds."""
    clear_stale_cookie()
    sso_user = _oidc_user()
    if sso_user is not None:
        _remember(sso_user, sessions.create_session(state.engine(), sso_user.id, client=client_label()))
        st.rerun()
    st.title("qrelkit")
    st.caption("Relevance judging for golden sets. Log in with your account.")
    if st.session_state.get(ENDED_KEY):
        st.info(SESSION_ENDED)
    with st.form("login", clear_on_submit=False):
        st.text_input("Username", key="login_username")
        st.text_input("Password", type="password", key="login_password", autocomplete="current-password")
        st.form_submit_button("Log in", type="primary", on_click=submit_login)
    if st.session_state.pop("login_store_down", False):
        st.error(f"Not logged in: {STORE_DOWN}.")
    failed = st.session_state.pop("login_failed", None)
    if failed is not None:
        st.error("Unknown username or wrong password." if not failed else wait_message(failed))
    if oidc_configured():
        if st.user.is_logged_in:
            st.warning(f"{st.user.get('email')} has no active qrelkit account; ask a lead to add you.")
        elif st.button("Log in with single sign-on"):
            st.login()


def require_user() -> UserInfo:
    """Show the login form and stop the page unless someone is logged in (pages can be opened by URL)."""
    user = current_user()
    if user is None:
        login_page()
        st.stop()
    return user


def not_allowed(user: UserInfo, role: str) -> None:
    """The one sentence a user sees on a page their role does not open."""
    st.error(f"{NOT_ALLOWED}: this page is for the {role} role; you are logged in as {user.role}.")


def require_role(role: str) -> UserInfo:
    """Stop the page unless the logged-in user has `role` now (re-read from the store): a URL is no way in."""
    user = require_user()
    if user.role != role:
        not_allowed(user, role)
        st.stop()
    return user


def lead_only(make: Callable[[], bytes]) -> Callable[[], bytes]:
    """For `st.download_button(data=...)`: the file is made only when it is clicked, after this tab's session
    is checked again against the store; a logged-out, deactivated or demoted user gets PermissionError and no
    file. (Streamlit then serves the bytes once at an unguessable content-hash URL; see docs/security.md.)"""
    engine, token = state.engine(), st.session_state.get(TOKEN_KEY)

    def data() -> bytes:
        user = sessions.resolve(engine, token)
        if user is None or user.role != "lead":
            raise PermissionError("release downloads are for a logged-in lead")
        return make()

    return data


def logout() -> None:
    """End this session in the store (every tab of it), forget it here, and drop the cookie."""
    token = st.session_state.get(TOKEN_KEY) or _cookie_token()
    sessions.revoke(state.engine(), token)
    for key in SESSION_KEYS:
        st.session_state.pop(key, None)
    st.session_state[CLEAR_COOKIE_KEY] = token
    st.session_state[LOGGED_OUT_KEY] = True
    st.session_state.pop(ENDED_KEY, None)
    if oidc_configured() and st.user.is_logged_in:
        st.logout()


def store_down_sentence(action: str = "Not saved") -> str:
    """The documented sentence for a database out of reach (docs/security.md, errors.store_outage)."""
    return f"{action}: {STORE_DOWN}."


def guarded(write: Callable[..., object], *, role: str | None = None) -> Callable[..., None]:
    """The one gate every write from the app passes through (a button's on_click, a form's on_submit): the
    tab's session is resolved against the store again, so a logged-out, expired or revoked session or a
    deactivated account writes nothing (the rerun shows the login form); a write for `role` from another role
    is refused with "Not allowed"; a database out of reach, here or inside the write, is the one sentence of
    STORE_DOWN left for the page to show (GUARD_FLASH, see take_flash), never Streamlit's error inside a
    callback, and the next press tries again. The store checks the account once more in the write's own
    transaction (active, role, a closed queue)."""

    @functools.wraps(write)
    def run(*args, **kwargs) -> None:
        try:
            user = current_user()
            if user is None:
                return
            if role is not None and user.role != role:
                st.session_state[GUARD_FLASH] = f"{NOT_ALLOWED}: this is for the {role} role."
                return
            write(*args, **kwargs)
        except StoreUnavailable:
            st.session_state[GUARD_FLASH] = store_down_sentence()
        except DBAPIError as exc:
            if not is_outage(exc):
                raise
            log.warning("database unavailable during %s: %s", write.__qualname__, exc.orig)
            st.session_state[GUARD_FLASH] = store_down_sentence()

    return run


def acting() -> str:
    """Inside a guarded write: the username its session resolved to just now (not the one a page run saw)."""
    return st.session_state[USER_KEY].username


def take_flash() -> str | None:
    """The sentence a guarded write left (once): the page or fragment that runs next shows it."""
    return st.session_state.pop(GUARD_FLASH, None)

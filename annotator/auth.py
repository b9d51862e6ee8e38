"""Who is using the app: the store's username/password login (or OIDC via st.login), and role gates."""

from __future__ import annotations

import streamlit as st

from annotator import state
from db.users import UserInfo, authenticate, list_users

USER_KEY = "user"


def current_user() -> UserInfo | None:
    """The logged-in user of this browser session, if any."""
    return st.session_state.get(USER_KEY)


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
    """Form callback: check the password before the script runs, so a successful login costs one run, not two."""
    user = authenticate(state.engine(), (st.session_state.get("login_username") or "").strip(),
                        st.session_state.get("login_password") or "")
    if user is None:
        st.session_state["login_failed"] = True
    else:
        st.session_state[USER_KEY] = user
        st.session_state.pop("login_password", None)


def login_page() -> None:
    """The login form: fields labelled Username and Password and a Log in button."""
    sso_user = _oidc_user()
    if sso_user is not None:
        st.session_state[USER_KEY] = sso_user
        st.rerun()
    st.title("qrelkit")
    st.caption("Relevance judging for golden sets. Log in with your account.")
    with st.form("login", clear_on_submit=False):
        st.text_input("Username", key="login_username")
        st.text_input("Password", type="password", key="login_password")
        st.form_submit_button("Log in", type="primary", on_click=submit_login)
    if st.session_state.pop("login_failed", False):
        st.error("Unknown username or wrong password.")
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


def require_role(role: str) -> UserInfo:
    """Stop the page unless the logged-in user has `role`: lead pages call this, so a URL is not a way in."""
    user = require_user()
    if user.role != role:
        st.error(f"This page is for the {role} role; you are logged in as {user.role}.")
        st.stop()
    return user


def logout() -> None:
    """Forget this session's user (and end the OIDC session when there is one)."""
    for key in (USER_KEY, "pair_id", "shown_at"):
        st.session_state.pop(key, None)
    if oidc_configured() and st.user.is_logged_in:
        st.logout()

"""Process-wide app state: one migrated engine per database URL, and the project the session works on."""

from __future__ import annotations

import os

import streamlit as st
from sqlalchemy.engine import Engine

from db.projects import list_projects
from db.store.engine import database_url
from db.store.schema import init_db

PROJECT_ENV = "QRELKIT_PROJECT"
PICKS_KEY = "project_picks"  # how many times this session picked a project in the sidebar
RELEASED_KEY = "project_picks_released"  # the pick after which the focus was last released
# Streamlit ignores shortcut keys while focus is in an input, and the picker is one: let go of it after a pick.
RELEASE_FOCUS = "document.activeElement && document.activeElement.blur();"


@st.cache_resource(show_spinner=False)
def _engine_for(url: str) -> Engine:
    """Migrate once and share the engine across sessions; the URL is the cache key, so tests never mix DBs."""
    return init_db(url)


def engine() -> Engine:
    """The engine for QRELKIT_DB_URL (what `qrelkit serve --db` sets), else the default ./qrelkit.db."""
    return _engine_for(database_url())


def project_names() -> list[str]:
    """Names of every project in the store, in the store's order."""
    return [p.name for p in list_projects(engine())]


def current_project() -> str | None:
    """The project this session works on: the one picked in the sidebar, else QRELKIT_PROJECT, else the first."""
    names = project_names()
    chosen = st.session_state.get("project")
    if chosen in names:
        return chosen
    preferred = os.environ.get(PROJECT_ENV)
    chosen = preferred if preferred in names else (names[0] if names else None)
    st.session_state["project"] = chosen
    return chosen


def _picked() -> None:
    """The selector's on_change: count the pick, so this run's page knows to release the keyboard focus."""
    st.session_state[PICKS_KEY] = st.session_state.get(PICKS_KEY, 0) + 1


def project_picker() -> str | None:
    """Sidebar selector for the project; returns the current choice. Right after a pick the page takes the
    keyboard focus off the selector, so the grade keys work without a click on the page first."""
    names = project_names()
    current = current_project()
    if len(names) > 1:
        st.sidebar.selectbox("Project", names, index=names.index(current), key="project", on_change=_picked)
        picks = st.session_state.get(PICKS_KEY)
        if picks and st.session_state.get(RELEASED_KEY) != picks:
            from annotator.app.session import page_script  # auth imports this module

            st.session_state[RELEASED_KEY] = picks
            with st.sidebar:
                page_script(f"{RELEASE_FOCUS} // pick {picks}")  # new text per pick: a script runs once per text
    elif current:
        from annotator.app.views import literal  # views imports this module

        st.sidebar.caption(f"Project: {literal(current)}")
    return st.session_state.get("project")

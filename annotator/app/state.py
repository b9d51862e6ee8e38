"""Process-wide app state: one migrated engine per database URL, and the project the session works on."""

from __future__ import annotations

import os

import streamlit as st
from sqlalchemy.engine import Engine

from db.projects import list_projects
from db.store.engine import database_url
from db.store.schema import init_db

PROJECT_ENV = "QRELKIT_PROJECT"


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

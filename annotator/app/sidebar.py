"""The sidebar's project picker: a selector when there are several projects, else the project's name."""

from __future__ import annotations

import streamlit as st

from annotator.app import state
from annotator.app.auth import page_script
from annotator.app.text import literal

PICKS_KEY = "project_picks"  # how many times this session picked a project in the sidebar
RELEASED_KEY = "project_picks_released"  # the pick after which the focus was last released
# Streamlit ignores shortcut keys while focus is in an input, and the picker is one: let go of it after a pick.
RELEASE_FOCUS = "document.activeElement && document.activeElement.blur();"


def _picked() -> None:
    """The selector's on_change: count the pick, so this run's page knows to release the keyboard focus."""
    st.session_state[PICKS_KEY] = st.session_state.get(PICKS_KEY, 0) + 1


def project_picker() -> str | None:
    """Sidebar selector for the project; returns the current choice. Right after a pick the page takes the
    keyboard focus off the selector, so the grade keys work without a click on the page first."""
    names = state.project_names()
    current = state.current_project()
    if current is not None and len(names) > 1:
        st.sidebar.selectbox("Project", names, index=names.index(current), key="project", on_change=_picked)
        picks = st.session_state.get(PICKS_KEY)
        if picks and st.session_state.get(RELEASED_KEY) != picks:
            st.session_state[RELEASED_KEY] = picks
            with st.sidebar:
                page_script(f"{RELEASE_FOCUS} // pick {picks}")  # new text per pick: a script runs once per text
    elif current:
        st.sidebar.caption(f"Project: {literal(current)}")
    return st.session_state.get("project")

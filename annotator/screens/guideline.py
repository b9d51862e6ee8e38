"""The project's current grading guideline, for everyone; leads edit it on the Guidelines page."""

from __future__ import annotations

import streamlit as st

from annotator import auth, state
from db.projects import current_guideline


def page() -> None:
    """Render the guideline in force (judgments made now are stamped with this version)."""
    auth.require_user()
    project = state.current_project()
    if project is None:
        st.info("No project yet.")
        return
    guideline = current_guideline(state.engine(), project)
    if guideline is None:
        st.info("This project has no guideline yet; a lead adds one on the Guidelines page.")
        return
    st.caption(f"Project {project} · guideline version {guideline.version} — judgments you make now are "
               "stamped with this version.")
    st.markdown(guideline.text)


page()

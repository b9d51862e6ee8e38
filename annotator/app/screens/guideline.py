"""The project's current grading guideline, for everyone (judgments made now are stamped with its version); leads
edit it on the Guidelines page."""

from __future__ import annotations

import streamlit as st

from annotator.app import auth, state, views
from db.projects import current_guideline

auth.require_user()
project = state.current_project()
if project is None:
    st.info("No project yet.")
    st.stop()
guideline = current_guideline(state.engine(), project)
if guideline is None:
    st.info("This project has no guideline yet; a lead adds one on the Guidelines page.")
    st.stop()
st.caption(
    f"Project {views.literal(project)} · guideline version {guideline.version} — judgments you make now are "
    "stamped with this version."
)
views.guideline_markdown(guideline.text)

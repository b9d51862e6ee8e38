"""Lead page: the project's model judges. Their list (model, prompt version, probes), a form that grades pairs
with a model, the judge-trust report of one judge against people (ranking of the stored runs, leniency,
agreement per query, the hybrid estimate) and that judge's post-editing queue. Every user-supplied string is
shown literally."""

from __future__ import annotations

import streamlit as st

from annotator.app import views
from annotator.app.components import judges

engine, user = views.lead_page("Judges")
project = views.pick_project(engine)
if project is None:
    st.stop()
st.caption(views.project_caption(project))
listed = judges.model_judges_section(engine, project, user)
graded = judges.graded_judges(listed)
if not graded:
    st.caption("A model judge with grades in this project is measured here against people, on the stored runs.")
    st.stop()
name = st.selectbox("Model judge", graded, help="the judge the report and the post-editing queue below are for")
judges.trust_section(engine, project, name)
judges.post_edit_section(engine, project, user, name)

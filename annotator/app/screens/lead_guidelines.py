"""Lead page: guideline versions side by side, edits saved as new versions, and the re-judge queue.

Guidelines are Markdown written by leads and render as Markdown, minus images and HTML (views.guideline_markdown).
"""

from __future__ import annotations

import difflib

import streamlit as st

from annotator.app import views
from db import adjudication, projects

REJUDGE_HEADERS = {"query_id": "Query", "fragment_id": "Fragment", "annotator": "Annotator", "grade": "Grade",
                   "guideline": "Judged under version", "current": "Current version"}

engine, user = views.lead_page("Guidelines")
project = views.pick_project(engine)
if project is None:
    st.stop()

versions = projects.list_guidelines(engine, project.name)
by_version = {g.version: g for g in versions}
numbers = sorted(by_version)

if len(numbers) >= 2:
    st.subheader("Compare versions")
    left, right = st.columns(2)
    old = left.selectbox("Older", numbers, index=len(numbers) - 2)
    new = right.selectbox("Newer", numbers, index=len(numbers) - 1)
    diff = "".join(difflib.unified_diff(
        by_version[old].text.splitlines(keepends=True), by_version[new].text.splitlines(keepends=True),
        fromfile=f"version {old}", tofile=f"version {new}"))
    st.code(diff or "(no difference)", language="diff")
    with left:
        views.guideline_markdown(by_version[old].text)
    with right:
        views.guideline_markdown(by_version[new].text)
elif numbers:
    views.guideline_markdown(by_version[numbers[0]].text)

st.subheader("Edit")
current = by_version[numbers[-1]].text if numbers else ""
st.caption(f"Current version: {numbers[-1] if numbers else 'none'}. Saving creates a new version; "
           "judgments keep the version they were made under.")
with st.form("edit-guideline"):
    text = st.text_area("Guideline (Markdown)", value=current, height=360)
    if st.form_submit_button("Save as new version"):
        if not text.strip():
            st.error("The guideline cannot be empty.")
        elif text == current:
            st.info("Unchanged: no new version.")
        else:
            saved = projects.add_guideline(engine, project.name, text, actor=user.username)
            st.success(f"Saved as version {saved.version}.")
            st.rerun()

st.subheader("Re-judge queue")
queue = adjudication.rejudge_queue(engine, project.name)
if len(queue):
    st.caption(f"{len(queue)} judgment(s) made under an older guideline version.")
    views.table(queue, REJUDGE_HEADERS, width="stretch")
else:
    st.success("Every judgment was made under the current guideline.")

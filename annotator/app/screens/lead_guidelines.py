"""Lead page: guideline versions side by side, edits saved as new versions, and the re-judge queue.

Guidelines are Markdown written by leads and render as Markdown, minus images and HTML (views.guideline_markdown).
"""

from __future__ import annotations

import difflib

import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app import views
from annotator.app.errors import user_errors
from db import adjudication, projects
from db.accounts import users
from db.accounts.users import UserInfo
from db.projects import GuidelineInfo, ProjectInfo

REJUDGE_HEADERS = {
    "query_id": "Query",
    "fragment_id": "Fragment",
    "annotator": "Annotator",
    "grade": "Grade",
    "guideline": "Judged under version",
    "current": "Current version",
    "sent": "Sent back for re-judging",
}
ALL_QUERIES = "every listed query"
OWN_ANNOTATORS = "the annotators who judged them"
SENT_KEY = "rejudge_sent"


def compare_versions(by_version: dict[int, GuidelineInfo]) -> None:
    """The last two versions side by side with their diff (the only version, when there is one)."""
    numbers = sorted(by_version)
    if len(numbers) >= 2:
        st.subheader("Compare versions")
        left, right = st.columns(2)
        old = left.selectbox("Older", numbers, index=len(numbers) - 2)
        new = right.selectbox("Newer", numbers, index=len(numbers) - 1)
        diff = "".join(
            difflib.unified_diff(
                by_version[old].text.splitlines(keepends=True),
                by_version[new].text.splitlines(keepends=True),
                fromfile=f"version {old}",
                tofile=f"version {new}",
            )
        )
        st.code(diff or "(no difference)", language="diff")
        with left:
            views.guideline_markdown(by_version[old].text)
        with right:
            views.guideline_markdown(by_version[new].text)
    elif numbers:
        views.guideline_markdown(by_version[numbers[0]].text)


def edit_form(engine: Engine, project: ProjectInfo, user: UserInfo, by_version: dict[int, GuidelineInfo]) -> None:
    """Edit the current version; saving creates a new version."""
    numbers = sorted(by_version)
    st.subheader("Edit")
    current = by_version[numbers[-1]].text if numbers else ""
    st.caption(
        f"Current version: {numbers[-1] if numbers else 'none'}. Saving creates a new version; "
        "judgments keep the version they were made under."
    )
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


def rejudge_section(engine: Engine, project: ProjectInfo, user: UserInfo, by_version: dict[int, GuidelineInfo]) -> None:
    """Judgments made under an older version, and the form that sends them back for re-judging."""
    numbers = sorted(by_version)
    st.subheader("Re-judge queue")
    queue = adjudication.rejudge_queue(engine, project.name)
    if SENT_KEY in st.session_state:
        st.success(st.session_state.pop(SENT_KEY))
    if len(queue):
        st.caption(
            f"{len(queue)} judgment(s) made under an older guideline version; "
            f"{int(queue['sent'].sum())} of them sent back and not re-judged yet."
        )
        views.table(queue, REJUDGE_HEADERS, width="stretch")
        people = users.people_who_grade(engine)
        with st.form("rejudge"):
            st.markdown(f"**Send back for re-judging under version {numbers[-1]}**")
            left, right = st.columns(2)
            which = left.selectbox(
                "Pairs",
                [ALL_QUERIES, *sorted(queue["query_id"].unique())],
                format_func=lambda q: q if q == ALL_QUERIES else f"the pairs of query {q}",
            )
            to = right.multiselect(
                "Send to",
                people,
                placeholder=OWN_ANNOTATORS,
                help="Empty: each pair goes back to the annotators who judged it under the older "
                "version. Named people get every chosen pair.",
            )
            st.caption(
                "Each person then finds the pairs in their queue, marked as re-judging under the new version; "
                "the new grade replaces the current one and the old stays in the history."
            )
            if st.form_submit_button("Send back for re-judging"):
                chosen = queue if which == ALL_QUERIES else queue[queue["query_id"] == which]
                with user_errors("Not sent"):
                    opened = adjudication.send_for_rejudging(
                        engine, project.name, sorted(set(chosen["pair_id"])), to=to or None, actor=user.username
                    )
                    st.session_state[SENT_KEY] = (
                        f"{opened} assignment(s) reopened for re-judging under version {numbers[-1]}."
                    )
                    st.rerun()
    else:
        st.success("Every judgment was made under the current guideline.")


engine, user = views.lead_page("Guidelines")
project = views.pick_project(engine)
if project is None:
    st.stop()
by_version = {g.version: g for g in projects.list_guidelines(engine, project.name)}
compare_versions(by_version)
edit_form(engine, project, user, by_version)
rejudge_section(engine, project, user, by_version)

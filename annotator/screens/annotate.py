"""Blind grading: one query–fragment pair at a time, saved the moment a grade is given.

The annotator sees only their own grade. The grading panel is an st.fragment, so a key press reruns
the panel alone; fragment text is rendered with st.text and escaped Markdown, never as HTML.
"""

from __future__ import annotations

import re
import time

import pandas as pd
import streamlit as st

from annotator import auth, state
from db.judging import PairView, get_pair, next_pair, previous_pair, progress, record_judgment, undo_judgment
from db.projects import current_guideline

GRADES = (
    (0, "Not relevant", "about something else, or only shares words"),
    (1, "Related", "on topic or mentioned in passing; does not help answer"),
    (2, "Partly answers", "part of the answer, or context the answer needs"),
    (3, "Answers fully", "the complete answer from this fragment alone"),
)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&])")


def md_escape(text: str) -> str:
    """Backslash-escape Markdown and HTML syntax so user-supplied text is shown literally."""
    return _MD_SPECIAL.sub(r"\\\1", text or "")


def show(pair_id: int | None) -> None:
    """Open `pair_id` (None = the first pair not judged yet) and restart the time-spent clock."""
    st.session_state["pair_id"] = pair_id
    st.session_state.pop("shown_at", None)
    st.session_state.pop("flash", None)


def save_grade(username: str, view: PairView, grade: int | None) -> None:
    """Record the grade at once (a reload or a second tab loses nothing), then open the next open pair."""
    pair_id = view.pair_id
    reason = None
    if grade is None:
        reason = (st.session_state.get(f"reason_{pair_id}") or "").strip()
        if not reason:
            st.session_state["flash"] = "Say why you can't judge this pair."
            return
    shown_at = st.session_state.get("shown_at")
    seconds = round(time.monotonic() - shown_at, 3) if shown_at else None
    note = (st.session_state.get(f"note_{pair_id}") or "").strip() or None
    saved = record_judgment(state.engine(), pair_id, username, grade, note=note, cant_judge_reason=reason,
                            seconds_spent=seconds)
    if saved.changed and saved.revision == 1:
        count_done(view.query_external_id, +1)
    show(None)


def go_back(project: str, username: str, view: PairView | None) -> None:
    """Open the pair before the current one in this annotator's queue, to look at or change it."""
    before = previous_pair(state.engine(), project, username, view.pair_id if view else None)
    if before is not None:
        show(before.pair_id)


def clear_grade(username: str, view: PairView) -> None:
    """Take back this annotator's own grade for the pair; it goes back into the open queue."""
    if undo_judgment(state.engine(), view.pair_id, username) is not None:
        count_done(view.query_external_id, -1)
    show(view.pair_id)


def current_view(project: str, username: str) -> PairView | None:
    """The pair being shown: the one picked with Back, else the first assigned pair not yet judged."""
    engine = state.engine()
    pair_id = st.session_state.get("pair_id")
    if pair_id is not None:
        try:
            return get_pair(engine, project, username, pair_id)
        except (LookupError, PermissionError):
            show(None)
    return next_pair(engine, project, username)


def load_progress(project: str, username: str) -> None:
    """Fetch done / assigned from the store (on every full page run, so a reload or another tab is reflected)."""
    prog = progress(state.engine(), project, username)
    st.session_state["progress"] = {"done": prog.done, "assigned": prog.assigned,
                                    "per_query": [list(row) for row in prog.per_query]}


def count_done(query: str, step: int) -> None:
    """Adjust the session's progress after this session created (+1) or removed (-1) a judgment, so a key press
    need not recount a queue of tens of thousands of pairs."""
    prog = st.session_state.get("progress")
    if prog is None:
        return
    prog["done"] += step
    for row in prog["per_query"]:
        if row[0] == query:
            row[1] += step


def progress_panel(project: str, username: str, view: PairView | None) -> list[list]:
    """Done / assigned overall and for the current query; returns the per-query rows. Counted by the store on
    the first panel run of each full page run, then kept up to date in the session."""
    if st.session_state.pop("recount", False) or "progress" not in st.session_state:
        load_progress(project, username)
    prog = st.session_state["progress"]
    overall, here = st.columns([3, 1], vertical_alignment="bottom")
    overall.progress(prog["done"] / prog["assigned"] if prog["assigned"] else 0.0,
                     text=f"Overall: {prog['done']} / {prog['assigned']} judged")
    current = [row for row in prog["per_query"] if view is not None and row[0] == view.query_external_id]
    if current:
        here.caption(f"This query: {current[0][1]} / {current[0][2]} judged")
    return prog["per_query"]


def grade_buttons(username: str, view: PairView) -> None:
    """Buttons 0–3 with keyboard shortcuts 0–3; the annotator's own current grade is highlighted."""
    for column, (grade, name, meaning) in zip(st.columns(len(GRADES)), GRADES, strict=True):
        with column:
            st.button(f"{grade} · {name}", key=f"grade_{grade}", shortcut=str(grade), width="stretch",
                      type="primary" if view.grade == grade else "secondary",
                      on_click=save_grade, args=(username, view, grade))
            st.caption(meaning)


def pair_panel(project: str, username: str, view: PairView) -> None:
    """The query, the fragment as plain text in a scrolling box, grade buttons, note, can't judge."""
    st.markdown(f"#### {md_escape(view.query_text)}")
    st.caption(f"Query {md_escape(view.query_external_id)} · pair {view.position} of {view.total}")
    title = md_escape(view.fragment_title or "")
    st.markdown(f"**{title}** · fragment {md_escape(view.fragment_external_id)}" if title
                else f"Fragment {md_escape(view.fragment_external_id)}")
    with st.container(height=260, border=True, key="fragment_box"):
        st.text(view.fragment_text)
    if view.grade is not None:
        st.info(f"Your grade: {view.grade}. Press another grade to change it.")
    elif view.cant_judge_reason:
        st.info(f"You marked this pair can't judge: {md_escape(view.cant_judge_reason)}")
    grade_buttons(username, view)
    st.text_input("Note (optional)", value=view.note or "", key=f"note_{view.pair_id}",
                  placeholder="Why this grade? Leads read notes when adjudicating.")
    left, middle, right = st.columns(3)
    with left:
        st.button("← Back", key="back", shortcut="Left", on_click=go_back, args=(project, username, view))
    with middle, st.popover("Can't judge…"):
        st.text_input("Reason", value=view.cant_judge_reason or "", key=f"reason_{view.pair_id}")
        st.button("Save as can't judge", key="cant_judge", on_click=save_grade, args=(username, view, None))
    with right:
        if view.grade is not None or view.cant_judge_reason:
            st.button("Next open pair →", key="next", shortcut="Right", on_click=show, args=(None,))
            st.button("Clear my grade", key="undo", on_click=clear_grade, args=(username, view))


@st.fragment
def grading_panel(project: str, username: str) -> None:
    """Everything that changes on a key press, so a grade reruns only this part of the page."""
    view = current_view(project, username)
    if view is not None and st.session_state.get("shown_pair") != view.pair_id:
        st.session_state["shown_pair"] = view.pair_id
        st.session_state["shown_at"] = time.monotonic()
    elif "shown_at" not in st.session_state:
        st.session_state["shown_at"] = time.monotonic()
    if st.session_state.get("flash"):
        st.warning(st.session_state["flash"])
    top = st.container()
    if view is None:
        with top:
            rows = progress_panel(project, username, view)
        if rows:
            st.success("All your assigned pairs are judged. Thank you!")
            st.button("← Back to my last pair", key="back", on_click=go_back, args=(project, username, None))
        else:
            st.info("No pairs are assigned to you in this project.")
    else:
        pair_panel(project, username, view)
        with top:  # filled after the pair so the fragment is on screen before the queue is counted
            rows = progress_panel(project, username, view)
    if st.toggle("Show progress by query", key="show_per_query"):
        st.dataframe(pd.DataFrame(rows, columns=["query", "done", "assigned"]), hide_index=True, width="stretch")


def guideline_popover(project: str) -> None:
    """The full guideline one click away, in the sidebar so it stays put while pairs change."""
    with st.sidebar.popover("Grading guideline", icon=":material/menu_book:", width="stretch"):
        guideline = current_guideline(state.engine(), project)
        if guideline is None:
            st.write("This project has no guideline yet.")
        else:
            st.caption(f"Version {guideline.version}")
            st.markdown(guideline.text)


def page() -> None:
    """Annotate page: the guideline one click away, then the grading panel."""
    user = auth.require_user()
    project = state.current_project()
    if project is None:
        st.info("No project yet. A lead creates one (or run `qrelkit demo`).")
        return
    guideline_popover(project)
    st.session_state["recount"] = True
    grading_panel(project, user.username)


page()

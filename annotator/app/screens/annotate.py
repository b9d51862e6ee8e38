"""Blind grading: one query–fragment pair at a time, saved the moment a grade is given.

The annotator sees only their own grade. Buttons, their names and their keys come from the project's scale
and grade labels. A new annotator of a project with a qualification round grades its control pairs first and,
after each, sees the settled grade and the lead's reason (shown as plain text); their queue opens after it.
A queue a lead closed again says who closed it, when and why, until a lead reopens it or grants a retake.
A grade given on a pair that another tab graded or cleared after this one drew it is not saved at once: the page
says what the pair holds now and asks whether to keep this grade or take the newer one; the counters recount.
The grading panel is an st.fragment, so a key press reruns the panel alone; user text is shown escaped
(Markdown-escaped in captions, HTML-escaped with highlighted query terms in the fragment box).
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from annotator.app import auth, errors, state, views
from annotator.app.components import context
from annotator.app.errors import PAGE_ERRORS
from db.grading import (
    ChangedMeanwhile,
    PairView,
    get_pair,
    next_pair,
    previous_pair,
    progress,
    record_judgment,
    undo_judgment,
)
from db.projects import ProjectInfo, current_guideline, get_project
from db.qualification import RoundPair, RoundState, grade_round_pair, round_for, round_pairs
from db.store.models import RoundStatus
from eval_core.agreement.coefficients import kappa_name
from eval_core.errors import NotFound, Refused

CANT_JUDGE_KEY = "X"
FOCUS_KEY = "cant_judge_opened"  # how many times the reason field was opened in this session
FOCUSED_KEY = "cant_judge_focused"  # the opening whose focus script was drawn
STALE_KEY = "changed_meanwhile"  # a grade not saved because the pair changed in another tab: what to ask about


def show(pair_id: int | None) -> None:
    """Open `pair_id` (None = the first pair not judged yet) and restart the time-spent clock."""
    st.session_state["pair_id"] = pair_id
    for key in ("shown_at", "flash", "cant_judge_asked", STALE_KEY):
        st.session_state.pop(key, None)


def save_grade(username: str, view: PairView, grade: int | None) -> None:
    """Record the grade at once (a reload or a second tab loses nothing), then open the next open pair; a grade
    the store refuses leaves the pair open with the store's reason. Runs through auth.guarded (session,
    account, outage)."""
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
    store(username, view, grade, note, reason, seconds, view.version)


def store(
    username: str,
    view: PairView,
    grade: int | None,
    note: str | None,
    reason: str | None,
    seconds: float | None,
    seen_version: int,
) -> None:
    """Save against the version the view was drawn from; a pair changed meanwhile is kept on screen with the
    question (keep mine / take the newer) instead of being overwritten, and the counters are recounted."""
    pair_id = view.pair_id
    try:
        saved = record_judgment(
            state.engine(),
            pair_id,
            username,
            grade,
            note=note,
            cant_judge_reason=reason,
            seconds_spent=seconds,
            seen_version=seen_version,
        )
    except ChangedMeanwhile as exc:
        show(pair_id)
        st.session_state["recount"] = True
        st.session_state[STALE_KEY] = {
            "pair_id": pair_id,
            "now": exc.now,
            "version": exc.version,
            "grade": grade,
            "note": note,
            "reason": reason,
            "seconds": seconds,
        }
        return
    except PAGE_ERRORS as exc:
        st.session_state["flash"] = f"Not saved: {views.literal(exc)}."
        return
    if saved.changed and (saved.revision == 1 or view.rejudge_version is not None):  # re-judged: done again
        count_done(view.query_external_id, +1)
    show(None)


def go_back(project: str, username: str, view: PairView | None) -> None:
    """Open the pair before the current one in this annotator's queue, to look at or change it."""
    before = previous_pair(state.engine(), project, username, view.pair_id if view else None)
    if before is not None:
        show(before.pair_id)


def clear_grade(username: str, view: PairView) -> None:
    """Take back this annotator's own grade for the pair; it goes back into the open queue. A pair graded again
    in another tab since this view is left as it is, and the page says so."""
    try:
        cleared = undo_judgment(state.engine(), view.pair_id, username, seen_version=view.version)
    except ChangedMeanwhile as exc:
        show(view.pair_id)
        st.session_state["recount"] = True
        st.session_state["flash"] = f"Not cleared: this pair was {exc.now} meanwhile in another tab; it shows that now."
        return
    if cleared is not None:
        count_done(view.query_external_id, -1)
    show(view.pair_id)


def keep_mine(username: str, view: PairView) -> None:
    """The annotator keeps the grade the other tab's change stopped: saved over the version they were shown."""
    asked = st.session_state.get(STALE_KEY)
    if asked is None or asked["pair_id"] != view.pair_id:
        return
    st.session_state["recount"] = True
    store(username, view, asked["grade"], asked["note"], asked["reason"], asked["seconds"], asked["version"])


def take_newer(view: PairView) -> None:
    """Keep what the other tab saved: drop the question and show the pair as stored."""
    show(view.pair_id)


def stale_question(project: ProjectInfo, username: str, view: PairView) -> None:
    """Asked after a grade met a newer change from another tab: what the pair holds now, keep mine or the newer."""
    asked = st.session_state.get(STALE_KEY)
    if asked is None or asked["pair_id"] != view.pair_id:
        return
    mine = (
        f"{asked['grade']} · {views.literal(project.labels.get(asked['grade'], ''))}"
        if asked["grade"] is not None
        else "can't judge"
    )
    newer = f"{view.grade}" if view.grade is not None else ("can't judge" if view.cant_judge_reason else "none")
    with st.container(border=True, key="stale_question"):
        st.warning(
            f"This pair was {asked['now']} meanwhile in another tab — keep {mine}?",
            icon=":material/sync_problem:",
        )
        left, right = st.columns(2)
        left.button(
            f"Keep mine: {mine}",
            key="keep_mine",
            type="primary",
            on_click=auth.guarded(keep_mine),
            args=(username, view),
        )
        right.button(f"Take the newer: {newer}", key="take_newer", on_click=take_newer, args=(view,))


def open_cant_judge() -> None:
    """Show the reason field (the can't-judge key or button), to be focused once it is drawn."""
    st.session_state["cant_judge_asked"] = True
    st.session_state[FOCUS_KEY] = st.session_state.get(FOCUS_KEY, 0) + 1


def focus_reason(pair_id: int) -> None:
    """Put the keyboard in the reason field just opened, so keyboard-only grading goes on (type, Tab, Enter).
    The field may be drawn after the script runs, so it is looked for a few times; the opening count in the
    text makes each opening's script new (a script runs once per text)."""
    opened = st.session_state.get(FOCUS_KEY)
    if not opened or st.session_state.get(FOCUSED_KEY) == opened:
        return
    st.session_state[FOCUSED_KEY] = opened
    selector = f".st-key-reason_{pair_id} input"
    auth.page_script(
        f"(function f(n){{const e=document.querySelector('{selector}');"
        f"if(e){{e.focus();}}else if(n>0){{setTimeout(function(){{f(n-1);}},50);}}}})(100);"
        f" // open {opened}"
    )


def current_view(project: str, username: str) -> PairView | None:
    """The pair being shown: the one picked with Back, else the first assigned pair not yet judged."""
    engine = state.engine()
    pair_id = st.session_state.get("pair_id")
    if pair_id is not None:
        try:
            return get_pair(engine, project, username, pair_id)
        except (NotFound, Refused):
            show(None)
    return next_pair(engine, project, username)


def load_progress(project: str, username: str) -> None:
    """Fetch done / assigned from the store (on every full page run, so a reload or another tab is reflected)."""
    prog = progress(state.engine(), project, username)
    st.session_state["progress"] = {
        "done": prog.done,
        "assigned": prog.assigned,
        "per_query": [list(row) for row in prog.per_query],
    }


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
    overall.progress(
        prog["done"] / prog["assigned"] if prog["assigned"] else 0.0,
        text=f"Overall: {prog['done']} / {prog['assigned']} judged",
    )
    current = [row for row in prog["per_query"] if view is not None and row[0] == view.query_external_id]
    if current:
        here.caption(f"This query: {current[0][1]} / {current[0][2]} judged")
    return prog["per_query"]


def grade_buttons(project: ProjectInfo, username: str, view: PairView) -> None:
    """One button per grade of the project's scale, named by the project's labels, each with its digit as the
    keyboard shortcut; the annotator's own current grade is highlighted."""
    for column, (grade, label) in zip(st.columns(len(project.labels)), project.labels.items(), strict=True):
        column.button(
            f"{grade} · {views.literal(label)}",
            key=f"grade_{grade}",
            shortcut=str(grade),
            width="stretch",
            wrap=True,
            type="primary" if view.grade == grade else "secondary",
            on_click=auth.guarded(save_grade),
            args=(username, view, grade),
        )


def fragment_box(view: PairView) -> None:
    """The fragment under its title and source, query terms marked, in a box the browser tests can find."""
    with st.container(border=True, key="fragment_box"):
        st.caption(views.fragment_source(view.fragment_title, view.fragment_doc_id, view.fragment_external_id))
        views.fragment_text(view.fragment_text, view.query_text)


def cant_judge_row(project: str, username: str, view: PairView) -> None:
    """Back, can't judge (with its reason) and, for a judged pair, next / clear."""
    left, middle, right = st.columns(3)
    left.button("← Back", key="back", shortcut="Left", on_click=auth.guarded(go_back), args=(project, username, view))
    middle.button("Can't judge…", key="cant_judge_open", shortcut=CANT_JUDGE_KEY, on_click=open_cant_judge)
    if view.grade is not None or view.cant_judge_reason:
        right.button("Next open pair →", key="next", shortcut="Right", on_click=show, args=(None,))
        right.button("Clear my grade", key="undo", on_click=auth.guarded(clear_grade), args=(username, view))
    if st.session_state.get("cant_judge_asked") or view.cant_judge_reason:
        st.text_input(
            "Why can't you judge this pair?", value=view.cant_judge_reason or "", key=f"reason_{view.pair_id}"
        )
        st.button(
            "Save as can't judge", key="cant_judge", on_click=auth.guarded(save_grade), args=(username, view, None)
        )
        focus_reason(view.pair_id)


def pair_panel(project: ProjectInfo, username: str, view: PairView) -> None:
    """The query, the fragment, grade buttons, note, can't judge."""
    st.markdown(f"#### {views.literal(view.query_text)}")
    st.caption(f"Query {views.literal(view.query_external_id)} · pair {view.position} of {view.total}")
    if not view.has_text:  # only a lead opening a pair by id gets here: a queue never serves one (db.grading)
        st.warning(
            f"Fragment {views.literal(view.fragment_external_id)} has no text yet (never imported): nobody grades "
            "it until its text is imported (Project page, Import tab, Fragments).",
            icon=":material/text_snippet:",
        )
        return
    if view.rejudge_version is not None:
        st.warning(
            f"Re-judging under guideline v{view.rejudge_version}: a lead sent this pair back because it was "
            "graded under an older version. Read the guideline again and grade it as it says now; your new "
            "grade replaces the old one, which stays in the history.",
            icon=":material/replay:",
        )
    context.query_lines(state.engine(), project.name, view)
    context.beside(state.engine(), project.name, view, fragment_box)
    stale_question(project, username, view)
    if view.grade is not None:
        st.info(
            f"Your grade: {view.grade} · {views.literal(project.labels.get(view.grade, ''))}. "
            "Press another grade to change it."
        )
    elif view.cant_judge_reason:
        st.info(f"You marked this pair can't judge: {views.literal(view.cant_judge_reason)}")
    grade_buttons(project, username, view)
    st.text_input(
        "Note (optional)",
        value=view.note or "",
        key=f"note_{view.pair_id}",
        placeholder="Why this grade? Leads read notes when adjudicating.",
    )
    cant_judge_row(project.name, username, view)


@st.fragment
@errors.survives_outage
def grading_panel(project: ProjectInfo, username: str) -> None:
    """Everything that changes on a key press, so a grade reruns only this part of the page."""
    if auth.current_user() is None:  # a fragment rerun skips the app's session check: do it here
        st.rerun(scope="app")
    view = current_view(project.name, username)
    if view is not None and st.session_state.get("shown_pair") != view.pair_id:
        st.session_state["shown_pair"] = view.pair_id
        st.session_state["shown_at"] = time.monotonic()
    elif "shown_at" not in st.session_state:
        st.session_state["shown_at"] = time.monotonic()
    if st.session_state.get("flash"):
        st.warning(st.session_state["flash"])
    if guard_flash := auth.take_flash():
        st.warning(guard_flash)
    top = st.container()
    if view is None:
        with top:
            rows = progress_panel(project.name, username, view)
        if rows:
            st.success("All your assigned pairs are judged. Thank you!")
            st.button(
                "← Back to my last pair",
                key="back",
                on_click=auth.guarded(go_back),
                args=(project.name, username, None),
            )
        else:
            st.info("No pairs are assigned to you in this project.")
    else:
        pair_panel(project, username, view)
        with top:  # filled after the pair so the fragment is on screen before the queue is counted
            rows = progress_panel(project.name, username, view)
    if st.toggle("Show progress by query", key="show_per_query"):
        table = pd.DataFrame(rows, columns=["query", "done", "assigned"])
        views.table(table, {"query": "Query", "done": "Judged", "assigned": "Assigned"}, width="stretch")


ROUND_FEEDBACK = "round_feedback"  # the round pair just graded, whose settled grade and reason are on screen
ROUND_HEADERS = {
    "query": "Query",
    "fragment": "Fragment",
    "grade": "Your grade",
    "settled": "Settled grade",
    "reason": "Lead's reason",
}


def grade_round(project: str, username: str, pair: RoundPair, grade: int) -> None:
    """Record a round grade (once), then show that pair's settled grade and reason until "Next". Runs through
    auth.guarded."""
    try:
        grade_round_pair(state.engine(), project, username, pair.pair_id, grade)
    except PAGE_ERRORS as exc:
        st.session_state["flash"] = f"Not saved: {views.literal(exc)}."
        return
    st.session_state[ROUND_FEEDBACK] = pair.pair_id


def round_view(pair: RoundPair) -> PairView:
    """A round pair in the shape the fragment box and the context read."""
    return PairView(
        pair.pair_id,
        pair.query_external_id,
        pair.query_text,
        pair.fragment_external_id,
        pair.fragment_title,
        pair.fragment_text,
        pair.position,
        pair.total,
        None,
        None,
        None,
        pair.fragment_doc_id,
    )


def round_pair_panel(project: ProjectInfo, username: str, pair: RoundPair) -> None:
    """The query and fragment of a round pair, and the grade buttons (no can't-judge: κ needs a grade)."""
    view = round_view(pair)
    st.markdown(f"#### {views.literal(pair.query_text)}")
    st.caption(f"Query {views.literal(pair.query_external_id)} · qualification pair {pair.position} of {pair.total}")
    context.query_lines(state.engine(), project.name, view)
    context.beside(state.engine(), project.name, view, fragment_box)
    for column, (grade, label) in zip(st.columns(len(project.labels)), project.labels.items(), strict=True):
        column.button(
            f"{grade} · {views.literal(label)}",
            key=f"round_grade_{grade}",
            shortcut=str(grade),
            width="stretch",
            wrap=True,
            on_click=auth.guarded(grade_round),
            args=(project.name, username, pair, grade),
        )


def round_feedback(project: ProjectInfo, pair: RoundPair, finished: bool) -> None:
    """After a grade: the pair again, the annotator's grade, the settled grade and the lead's reason, as text."""
    st.markdown(f"#### {views.literal(pair.query_text)}")
    fragment_box(round_view(pair))
    same = pair.grade == pair.settled
    with st.container(border=True, key="round_feedback"):
        st.text(f"Your grade: {pair.grade} · {project.labels.get(int(pair.grade or 0), '')}")
        st.text(
            f"Settled grade: {pair.settled} · {project.labels.get(int(pair.settled or 0), '')}"
            + (" (the same as yours)" if same else "")
        )
        st.text("The lead's reason:")
        st.text(pair.reason or "")
    if not finished:
        st.button(
            "Next pair →",
            key="round_next",
            shortcut="Right",
            type="primary",
            on_click=lambda: st.session_state.pop(ROUND_FEEDBACK, None),
        )


def round_outcome(round_state: RoundState, pairs: list[RoundPair]) -> None:
    """The round's result in plain words, and every pair of it with the settled grade and reason."""
    if round_state.status == RoundStatus.PASSED:
        st.success(views.literal(round_state.sentence()))
        if st.button("Start my regular queue →", key="round_done", type="primary"):
            st.session_state.pop(ROUND_FEEDBACK, None)
            st.rerun(scope="app")
    else:
        st.warning(
            views.literal(round_state.sentence()) + " Read the guideline meanwhile; a lead can see your "
            "round and open your queue or grant you a retake."
        )
    table = pd.DataFrame(
        [(p.query_external_id, p.fragment_external_id, p.grade, p.settled, p.reason) for p in pairs],
        columns=list(ROUND_HEADERS),
    )
    views.table(table, ROUND_HEADERS, width="stretch")


@st.fragment
@errors.survives_outage
def qualification_panel(project: ProjectInfo, username: str) -> None:
    """The round: one control pair at a time, the settled grade and reason after each, then the outcome."""
    if auth.current_user() is None:
        st.rerun(scope="app")
    round_state = round_for(state.engine(), project.name, username)
    if round_state is None or round_state.status == RoundStatus.OPENED:
        st.session_state.pop(ROUND_FEEDBACK, None)
        st.rerun(scope="app")  # switched off, or a lead opened the queue meanwhile
    assert round_state is not None
    if round_state.status == RoundStatus.CLOSED:
        st.session_state.pop(ROUND_FEEDBACK, None)
        st.subheader("Regular queue closed")
        st.warning(views.literal(round_state.sentence()))
        return
    st.subheader("Qualification round")
    retake = f"Retake granted by lead {views.literal(round_state.granted_by)}. " if round_state.granted_by else ""
    st.caption(
        f"{retake}Before your regular queue opens, grade these {round_state.pairs} pairs. After each grade you "
        "see the settled grade and the lead's reason. Your queue opens when your "
        f"{kappa_name(round_state.weights)} against the settled grades reaches {round_state.threshold:g}; "
        "otherwise a lead decides."
    )
    st.progress(
        round_state.graded / round_state.pairs if round_state.pairs else 1.0,
        text=f"Qualification: {round_state.graded} / {round_state.pairs} graded",
    )
    if st.session_state.get("flash"):
        st.warning(st.session_state.pop("flash"))
    if guard_flash := auth.take_flash():
        st.warning(guard_flash)
    pairs = round_pairs(state.engine(), project.name, username)
    finished = round_state.status != RoundStatus.IN_ROUND
    shown = next((p for p in pairs if p.pair_id == st.session_state.get(ROUND_FEEDBACK)), None)
    if shown is not None and shown.grade is not None:
        round_feedback(project, shown, finished)
    elif not finished and (pair := next((p for p in pairs if p.grade is None), None)) is not None:
        round_pair_panel(project, username, pair)
    if finished:
        round_outcome(round_state, pairs)


def guideline_popover(project: str) -> None:
    """The full guideline one click away, in the sidebar so it stays put while pairs change."""
    with st.sidebar.popover("Grading guideline", icon=":material/menu_book:", width="stretch"):
        guideline = current_guideline(state.engine(), project)
        if guideline is None:
            st.write("This project has no guideline yet.")
        else:
            st.caption(f"Version {guideline.version}")
            views.guideline_markdown(guideline.text)


user = auth.require_user()
name = state.current_project()
if name is None:
    st.info("No project yet. A lead creates one (or run `qrelkit demo`).")
    st.stop()
guideline_popover(name)
qualification = round_for(state.engine(), name, user.username)
if (qualification is not None and not qualification.open) or st.session_state.get(ROUND_FEEDBACK) is not None:
    qualification_panel(get_project(state.engine(), name), user.username)
else:
    st.session_state["recount"] = True
    grading_panel(get_project(state.engine(), name), user.username)

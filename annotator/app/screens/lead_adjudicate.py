"""Lead page: settle a disputed pair — every grade and note side by side, a final grade with a reason.

Every string from the data (ids, texts, names, notes, reasons) is shown literally.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app import views
from annotator.app.components import agreement
from annotator.app.errors import user_errors
from db import adjudication
from db.accounts.users import UserInfo
from db.projects import ProjectInfo
from db.store import frames

SAVED_KEY = "adjudicate_saved"
PAIR_LABEL = "Pair"
ALL_QUERIES = "All queries"
ALL_BOUNDARIES = "All boundaries"
JUDGMENT_HEADERS = {
    "annotator": "Annotator",
    "grade": "Grade",
    "note": "Note",
    "cant_judge_reason": "Can't judge because",
    "guideline": "Guideline version",
    "seconds_spent": "Seconds",
    "revision": "Revision",
    "updated_at": "Updated",
}
HISTORY_HEADERS = {
    "action": "Action",
    "annotator": "Annotator",
    "old_grade": "Old grade",
    "new_grade": "New grade",
    "old_note": "Old note",
    "new_note": "New note",
    "at": "When",
}


def queue_label(row: Any) -> str:
    """One dispute in the picker: query · fragment · spread and every person's grade."""
    return f"{row.query_id} · {row.fragment_id} · spread {row.spread} · {row.grades}" + (
        " · adjudicated" if row.adjudicated else ""
    )


def all_disputes(engine: Engine, project: ProjectInfo) -> tuple[pd.DataFrame, set[tuple[str, str]]]:
    """Every disputed pair of the project (adjudicated or not) and the (query, fragment) pairs already decided.
    Stops the page when nothing is disputed."""
    judgments, _ = agreement.project_agreement(engine, project)
    decided = frames.adjudications_frame(engine, project.name)
    done = set(zip(decided["query_id"].astype(str), decided["fragment_id"].astype(str), strict=True))
    every = (
        adjudication.disputes_of(judgments, done)
        if not judgments.empty
        else pd.DataFrame(columns=adjudication.DISPUTE_COLUMNS)
    )
    if every.empty:
        st.success("No disputed pairs: nothing to adjudicate.")
        st.stop()
    return agreement.dispute_order(engine, project, every), done


def pick_pair(project: ProjectInfo, every: pd.DataFrame, done: set[tuple[str, str]]) -> tuple[pd.DataFrame, int]:
    """The filters, the count and the picker: the disputes shown and the chosen pair's id (remembered across
    pages). Stops the page when no dispute matches the filters."""
    low, high = views.scale_of(project)
    left, right = st.columns(2)
    query_filter = left.selectbox("Query", [ALL_QUERIES, *sorted(every["query_id"].unique())])
    boundaries = {f"{b}|{b + 1}": b for b in range(low, high)}
    boundary_filter = right.selectbox(
        "Grade boundary",
        [ALL_BOUNDARIES, *boundaries],
        help="b|b+1 keeps the pairs someone graded b or lower and someone else above b.",
    )
    queue = adjudication.filter_disputes(
        every, None if query_filter == ALL_QUERIES else query_filter, boundaries.get(boundary_filter)
    )
    current = st.session_state.get(agreement.ADJUDICATE_KEY)
    n_open = int((~every["adjudicated"].astype(bool)).sum())
    order = "least sure first" if "entropy" in every.columns else "largest spread first"  # dispute_order's choice
    st.caption(
        f"{len(every)} disputed pair(s) among people (human grades differ; model judges never count), "
        f"{n_open} open; showing {len(queue)}, {order}. {len(done)} pair(s) adjudicated so far."
    )
    if SAVED_KEY in st.session_state:
        st.success(views.literal(st.session_state.pop(SAVED_KEY)))
    if queue.empty:
        st.info("No disputed pair matches these filters.")
        st.stop()
    ids = [int(i) for i in queue["pair_id"]]
    labels = [queue_label(row) for row in queue.itertuples()]
    index = ids.index(current) if current in ids else 0
    label = st.selectbox(PAIR_LABEL, labels, index=index)
    pair_id = ids[labels.index(label)]
    st.session_state[agreement.ADJUDICATE_KEY] = pair_id
    return queue, pair_id


def pair_section(engine: Engine, project: ProjectInfo, user: UserInfo, pair_id: int) -> dict[str, Any]:
    """The pair: its query and fragment, every grade and note, the decision in force and the change history."""
    detail = adjudication.pair_detail(engine, project.name, pair_id, username=user.username)
    query, fragment = detail["query"], detail["fragment"]
    st.markdown("**Query**")
    st.text(f"{query['id']} ({query['category'] or 'no category'}): {query['text']}")
    st.markdown("**Fragment**")
    with st.container(border=True, key="fragment_box"):
        st.caption(views.fragment_source(fragment["title"], fragment["doc_id"], fragment["id"]))
        if fragment["text"] is None:
            st.info("No text yet: this fragment was named by a run or qrels and its text was never imported.")
        else:
            views.fragment_text(fragment["text"], query["text"])

    st.markdown("**Every grade and note**")
    judged = pd.DataFrame(detail["judgments"], columns=list(JUDGMENT_HEADERS))
    views.table(judged, JUDGMENT_HEADERS, {"grade": 0, "guideline": 0, "seconds_spent": 1}, width="stretch")
    if detail["adjudication"]:
        decided = detail["adjudication"]
        st.info(
            f"In force: final grade {decided['grade']} by {views.literal(decided['by'])} — "
            f"{views.literal(decided['reason'])}"
        )
    with st.expander("Change history"):
        history = pd.DataFrame(detail["history"], columns=list(HISTORY_HEADERS))
        views.table(history, HISTORY_HEADERS, {"old_grade": 0, "new_grade": 0})
    return detail


def final_grade_form(
    engine: Engine, project: ProjectInfo, user: UserInfo, queue: pd.DataFrame, detail: dict[str, Any]
) -> None:
    """The final grade with its reason; saving opens the next open dispute shown."""
    pair_id = detail["pair_id"]
    query, fragment = detail["query"], detail["fragment"]
    with st.form("adjudicate"):
        fresh = f"{detail['pair_id']}_{len(detail['adjudications'])}"  # a new decision starts from an empty form
        grade = st.radio(
            "Final grade",
            list(project.labels),
            index=None,
            horizontal=True,
            key=f"final_grade_{fresh}",
            format_func=lambda g: f"{g} · {views.literal(project.labels[g])}",
        )
        reason = st.text_area(
            "Reason", placeholder="Why this grade: which guideline rule decides it", key=f"final_reason_{fresh}"
        )
        if st.form_submit_button("Save final grade"):
            if grade is None:
                st.error("Pick a final grade first.")
            elif not reason.strip():
                st.error("Give a reason: it is recorded with the grade and shown in the release.")
            else:
                with user_errors("Not saved"):
                    adjudication.adjudicate(engine, pair_id, int(grade), reason.strip(), actor=user.username)
                    after = queue.assign(adjudicated=queue["adjudicated"].astype(bool) | (queue["pair_id"] == pair_id))
                    following = adjudication.next_open(after, pair_id)
                    st.session_state[SAVED_KEY] = (
                        f"Final grade {grade} saved for {query['id']} · {fragment['id']}. "
                        + ("Every dispute shown is decided." if following is None else "Next open dispute:")
                    )
                    if following is not None:
                        st.session_state[agreement.ADJUDICATE_KEY] = following
                    st.rerun()


engine, user = views.lead_page("Adjudication")
project = views.pick_project(engine)
if project is None:
    st.stop()
every, done = all_disputes(engine, project)
queue, pair_id = pick_pair(project, every, done)
detail = pair_section(engine, project, user, pair_id)
final_grade_form(engine, project, user, queue, detail)

"""Lead page: settle a disputed pair — every grade and note side by side, a final grade with a reason.

Every string from the data (ids, texts, names, notes, reasons) is shown literally.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator.app import views
from annotator.app.components import agreement as views_agreement
from annotator.app.errors import user_errors
from db import adjudication
from db.store import frames as queries_frames

SAVED_KEY = "adjudicate_saved"
JUDGMENT_HEADERS = {"annotator": "Annotator", "grade": "Grade", "note": "Note", "cant_judge_reason": "Can't judge because",
                    "guideline": "Guideline version", "seconds_spent": "Seconds", "revision": "Revision",
                    "updated_at": "Updated"}
HISTORY_HEADERS = {"action": "Action", "annotator": "Annotator", "old_grade": "Old grade", "new_grade": "New grade",
                   "old_note": "Old note", "new_note": "New note", "at": "When"}

engine, user = views.lead_page("Adjudication")
project = views.pick_project(engine)
if project is None:
    st.stop()

judgments, report = views_agreement.project_agreement(engine, project)
queue = views_agreement.disputed_pairs(report)
chosen = st.session_state.get(views_agreement.ADJUDICATE_KEY)
if chosen and all(views_agreement.pair_key(chosen) != views_agreement.pair_key(p) for p in queue):
    queue = [chosen, *queue]
if not queue:
    st.success("No disputed pairs: nothing to adjudicate.")
    st.stop()

decided = queries_frames.adjudications_frame(engine, project.name)
done = set(zip(decided["query_id"].astype(str), decided["fragment_id"].astype(str), strict=True))
labels = [views_agreement.disputed_label(p) + (" · adjudicated" if views_agreement.pair_key(p) in done else "") for p in queue]
index = next((i for i, p in enumerate(queue) if chosen and views_agreement.pair_key(p) == views_agreement.pair_key(chosen)), 0)
st.caption(f"{len(queue)} disputed pair(s), largest spread first; {len(done)} pair(s) adjudicated so far.")
if SAVED_KEY in st.session_state:
    st.success(views.literal(st.session_state.pop(SAVED_KEY)))
label = st.selectbox("Pair", labels, index=index)
pair = queue[labels.index(label)]
st.session_state[views_agreement.ADJUDICATE_KEY] = pair

detail = adjudication.pair_detail(engine, project.name, views_agreement.pair_id_of(engine, project.name, pair),
                                  username=user.username)
query, fragment = detail["query"], detail["fragment"]
st.markdown("**Query**")
st.text(f"{query['id']} ({query['category'] or 'no category'}): {query['text']}")
st.markdown("**Fragment**")
with st.container(border=True, key="fragment_box"):
    st.caption(views.fragment_source(fragment["title"], fragment["doc_id"], fragment["id"]))
    views.fragment_text(fragment["text"], query["text"])

st.markdown("**Every grade and note**")
judged = pd.DataFrame(detail["judgments"], columns=list(JUDGMENT_HEADERS))
views.table(judged, JUDGMENT_HEADERS, {"grade": 0, "guideline": 0, "seconds_spent": 1}, width="stretch")
if detail["adjudication"]:
    decided = detail["adjudication"]
    st.info(f"In force: final grade {decided['grade']} by {views.literal(decided['by'])} — "
            f"{views.literal(decided['reason'])}")
with st.expander("Change history"):
    history = pd.DataFrame(detail["history"], columns=list(HISTORY_HEADERS))
    views.table(history, HISTORY_HEADERS, {"old_grade": 0, "new_grade": 0})

with st.form("adjudicate"):
    fresh = f"{detail['pair_id']}_{len(detail['adjudications'])}"  # a new decision starts from an empty form
    grade = st.radio("Final grade", list(project.labels), index=None, horizontal=True, key=f"final_grade_{fresh}",
                     format_func=lambda g: f"{g} · {views.literal(project.labels[g])}")
    reason = st.text_area("Reason", placeholder="Why this grade: which guideline rule decides it",
                          key=f"final_reason_{fresh}")
    if st.form_submit_button("Save final grade"):
        if grade is None:
            st.error("Pick a final grade first.")
        elif not reason.strip():
            st.error("Give a reason: it is recorded with the grade and shown in the release.")
        else:
            with user_errors("Not saved"):
                adjudication.adjudicate(engine, detail["pair_id"], int(grade), reason.strip(), actor=user.username)
                st.session_state[SAVED_KEY] = (f"Final grade {grade} saved for "
                                               f"{views_agreement.disputed_label(pair)}.")
                st.rerun()

"""Lead page: settle a disputed pair — every grade and note side by side, a final grade with a reason."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator import views, views_agreement
from db import adjudication, queries_frames

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
label = st.selectbox("Pair", labels, index=index)
pair = queue[labels.index(label)]
st.session_state[views_agreement.ADJUDICATE_KEY] = pair

detail = adjudication.pair_detail(engine, project.name, views_agreement.pair_id_of(engine, project.name, pair),
                                  username=user.username)
query, fragment = detail["query"], detail["fragment"]
st.markdown("**Query**")
st.text(f"{query['id']} ({query['category'] or 'no category'}): {query['text']}")
st.markdown("**Fragment**")
st.text(f"{fragment['id']}: {fragment['title'] or ''}")
with st.container(height=260):
    st.text(fragment["text"])

st.markdown("**Every grade and note**")
st.dataframe(pd.DataFrame(detail["judgments"]), hide_index=True, width="stretch")
if detail["adjudication"]:
    decided = detail["adjudication"]
    st.info(f"In force: final grade {decided['grade']} by {decided['by']} — {decided['reason']}")
with st.expander("Change history"):
    st.dataframe(pd.DataFrame(detail["history"]), hide_index=True)

low, high = views.scale_of(project)
with st.form("adjudicate"):
    grade = st.radio("Final grade", list(range(low, high + 1)), horizontal=True)
    reason = st.text_area("Reason", placeholder="Why this grade: which guideline rule decides it")
    if st.form_submit_button("Save final grade"):
        if not reason.strip():
            st.error("Give a reason: it is recorded with the grade and shown in the release.")
        else:
            adjudication.adjudicate(engine, detail["pair_id"], user.username, int(grade), reason.strip())
            st.success(f"Final grade {grade} saved for {views_agreement.disputed_label(pair)}.")

"""Lead page: control pairs — turn a release's adjudicated pairs into control pairs at a rate, or set one by
hand with its grade and reason, and list them — and the qualification round new annotators take first, with
each annotator's round and the button that opens a queue. Every user-supplied string is shown literally."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator.app import views
from annotator.app.errors import user_errors
from annotator.app.views import literal
from db import control, qualification, releases

CONTROL_HEADERS = {"query_id": "Query", "fragment_id": "Fragment", "grade": "Settled grade", "source": "From",
                   "reason": "Reason", "created_at": "Since"}
ROUND_HEADERS = {"username": "Annotator", "status": "Status", "graded": "Graded", "pairs": "Round pairs",
                 "kappa": "κ", "threshold": "Threshold", "finished_at": "Finished", "opened_by": "Opened by",
                 "opened_at": "Opened at"}
STATUS_NAMES = {"in_round": "in the round", "passed": "passed", "failed": "failed: waits for a lead",
                "opened": "opened by a lead"}
OPENED = "queue_opened"  # the sentence of the queue a lead just opened, shown once
RATE_HELP = "One control pair in every N of each annotator's pairs: 1/20, 0.05 or 20."


def served(report: control.ServeReport) -> str:
    """What setting control pairs did, in one sentence."""
    to = ", ".join(f"{who} {n}" for who, n in sorted(report.served.items())) or "no annotator"
    rate = f"one in every {report.every} pairs" if report.every else "no rate set yet: not served"
    return f"{report.added} new control pair(s); {rate}; served to: {to}."


def open_queue(project: str, username: str) -> None:
    """The button's decision: the logged-in lead opens the annotator's queue (recorded: who, when)."""
    with user_errors("Not opened"):
        opened = qualification.open_queue(engine, project, username, actor=user.username)
        st.session_state[OPENED] = f"{opened.username}: {opened.sentence()}"


engine, user = views.lead_page("Controls")
project = views.pick_project(engine)
if project is None:
    st.stop()

st.subheader("Control pairs")
every, controls = control.list_controls(engine, project.name)
st.caption(f"{len(controls)} control pair(s), " + (f"one in every {every} of each annotator's pairs, served blind "
           "like any pair." if every else "not served yet (no rate set)."))
if controls:
    frame = pd.DataFrame([{"query_id": c.query_id, "fragment_id": c.fragment_id, "grade": c.grade,
                           "source": f"release {c.release}" if c.release else "set by hand", "reason": c.reason,
                           "created_at": c.created_at} for c in controls])
    views.table(frame, CONTROL_HEADERS, width="stretch")

from_release, by_hand = st.columns(2)
with from_release, st.form("controls-from-release"):
    st.markdown("**From a release**: its adjudicated pairs become control pairs, the adjudication's reason kept.")
    versions = [r.version for r in releases.list_releases(engine, project.name)]
    version = st.selectbox("Release", versions, index=len(versions) - 1 if versions else None,
                           format_func=lambda v: f"version {v}", placeholder="no release yet")
    rate = st.text_input("Rate", value=f"1/{every}" if every else "1/20", help=RATE_HELP, key="rate-release")
    if st.form_submit_button("Make control pairs", disabled=not versions) and version is not None:
        with user_errors("No control pairs made"):
            st.success(literal(served(control.controls_from_release(engine, project.name, version, rate.strip(),
                                                                    actor=user.username))))

with by_hand, st.form("control-by-hand"):
    st.markdown("**By hand**: one pooled pair, the grade it must get and why.")
    c1, c2 = st.columns(2)
    query = c1.text_input("Query id")
    fragment = c2.text_input("Fragment id")
    labels = project.labels
    grade = st.selectbox("Settled grade", list(labels), format_func=lambda g: f"{g} · {labels[g]}")
    reason = st.text_area("Reason (annotators in a qualification round read it)")
    hand_rate = st.text_input("Rate (optional)", value="", help=RATE_HELP + " Empty: keep the project's.")
    if st.form_submit_button("Add control pair") and grade is not None:
        with user_errors("Not added"):
            st.success(literal(served(control.add_control(engine, project.name, query.strip(), fragment.strip(),
                                                          int(grade), reason, hand_rate.strip() or None,
                                                          actor=user.username))))

st.subheader("Qualification round")
settings = qualification.qualification_settings(engine, project.name)
st.caption(literal(settings.sentence()))
with st.form("qualify"):
    c1, c2, c3 = st.columns(3)
    pairs = c1.number_input("Control pairs in the round (0: no round)", min_value=0, max_value=max(settings.controls, 2),
                            value=settings.pairs or 0, step=1)
    own = c2.checkbox("Own κ threshold", value=not settings.threshold_is_default,
                      help=f"Unticked: the project's agreement threshold ({project.threshold:g}).")
    threshold = c3.number_input("κ threshold", min_value=-1.0, max_value=1.0, step=0.05,
                                value=settings.threshold)
    if st.form_submit_button("Save qualification round"):
        with user_errors("Not saved"):
            saved = qualification.set_qualification(engine, project.name, int(pairs),
                                                    float(threshold) if own else None, actor=user.username)
            st.success(literal(saved.sentence()))

rounds = qualification.list_rounds(engine, project.name)
if not rounds:
    st.caption("No annotator has started a qualification round in this project.")
else:
    table = pd.DataFrame([r.to_dict() for r in rounds]).assign(
        status=lambda f: f["status"].map(STATUS_NAMES),
        kappa=lambda f: f["kappa"].map(lambda v: views.MISSING if pd.isna(v) else f"{v:.3f}"),
        finished_at=[r.finished_at for r in rounds], opened_at=[r.opened_at for r in rounds])
    views.table(table, ROUND_HEADERS, width="stretch")
    for r in rounds:
        if r.open:
            continue
        st.text(f"{r.username}: {r.sentence()}")
        st.button(f"Open {r.username}'s queue", key=f"open-queue-{r.username}", on_click=open_queue,
                  args=(project.name, r.username))
if OPENED in st.session_state:
    st.success(literal(st.session_state.pop(OPENED)))

"""Lead page: control pairs — turn a release's adjudicated pairs into control pairs at a rate, or set one by
hand with its grade and reason, and list them — and the qualification round new annotators take first, with
each annotator's round, the buttons that open a queue or grant a retake, the form that closes an open queue
again (with a reason), and the earlier rounds. Every user-supplied string is shown literally."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app import auth, views
from annotator.app.errors import user_errors
from annotator.app.views import literal
from db import control, qualification, releases
from db.accounts.users import UserInfo, list_users
from db.projects import ProjectInfo
from db.store.models import RoundStatus
from eval_core.vocab import AnnotatorKind, Role

CONTROL_HEADERS = {
    "query_id": "Query",
    "fragment_id": "Fragment",
    "grade": "Settled grade",
    "source": "From",
    "reason": "Reason",
    "created_at": "Since",
}
ROUND_HEADERS = {
    "username": "Annotator",
    "attempt": "Round",
    "status": "Status",
    "graded": "Graded",
    "pairs": "Round pairs",
    "kappa": "κ",
    "threshold": "Threshold",
    "finished_at": "Finished",
    "granted_by": "Retake granted by",
    "opened_by": "Opened by",
    "opened_at": "Opened at",
    "closed_by": "Closed by",
    "closed_at": "Closed at",
    "closed_reason": "Why closed",
}
STATUS_NAMES = {
    RoundStatus.IN_ROUND: "in the round",
    RoundStatus.PASSED: "passed",
    RoundStatus.FAILED: "failed: waits for a lead",
    RoundStatus.OPENED: "opened by a lead",
    RoundStatus.CLOSED: "closed by a lead",
}
DECIDED = "queue_decided"  # the sentence of a lead's decision just made (open, close, retake), shown once
CLOSE_WHO, CLOSE_REASON = "close-queue-who", "close-queue-reason"
RATE_HELP = "One control pair in every N of each annotator's pairs: 1/20, 0.05 or 20."


def served(report: control.ServeReport) -> str:
    """What setting control pairs did, in one sentence."""
    to = ", ".join(f"{who} {n}" for who, n in sorted(report.served.items())) or "no annotator"
    rate = f"one in every {report.every} pairs" if report.every else "no rate set yet: not served"
    return f"{report.added} new control pair(s); {rate}; served to: {to}."


def open_queue(engine: Engine, project: str, username: str) -> None:
    """The button's decision: the logged-in lead opens the annotator's queue (recorded: who, when)."""
    with user_errors("Not opened"):
        opened = qualification.open_queue(engine, project, username, actor=auth.acting())
        st.session_state[DECIDED] = f"{opened.username}: {opened.sentence()}"


def grant_retake(engine: Engine, project: str, username: str) -> None:
    """The button's decision: the logged-in lead grants the annotator a new round on fresh control pairs."""
    with user_errors("No retake"):
        started = qualification.grant_retake(engine, project, username, actor=auth.acting())
        st.session_state[DECIDED] = f"{started.username}: {started.sentence()}"


def close_queue(engine: Engine, project: str) -> None:
    """The form's decision: the logged-in lead closes the chosen annotator's open queue (recorded: who, when, why)."""
    who = st.session_state.get(CLOSE_WHO)
    if who is None:
        st.warning("Not closed: choose the annotator whose queue closes.")
        return
    with user_errors("Not closed"):
        shut = qualification.close_queue(engine, project, who, st.session_state.get(CLOSE_REASON), actor=auth.acting())
        st.session_state[DECIDED] = f"{shut.username}: {shut.sentence()}"
        st.session_state[CLOSE_REASON] = ""


def rounds_table(rounds: list[qualification.RoundState]) -> None:
    """Rounds as a table: status in words, κ to three decimals, times as times."""
    table = pd.DataFrame([r.to_dict() for r in rounds]).assign(
        status=[STATUS_NAMES[r.status] for r in rounds],
        kappa=[views.MISSING if r.kappa is None else f"{r.kappa:.3f}" for r in rounds],
        finished_at=[r.finished_at for r in rounds],
        opened_at=[r.opened_at for r in rounds],
        closed_at=[r.closed_at for r in rounds],
    )
    views.table(table, ROUND_HEADERS, width="stretch")


def controls_list(engine: Engine, project: ProjectInfo) -> int | None:
    """The project's control pairs and the rate they are served at (returned: one in every N, None if unset)."""
    st.subheader("Control pairs")
    every, controls = control.list_controls(engine, project.name)
    st.caption(
        f"{len(controls)} control pair(s), "
        + (
            f"one in every {every} of each annotator's pairs, served blind like any pair."
            if every
            else "not served yet (no rate set)."
        )
    )
    if controls:
        frame = pd.DataFrame(
            [
                {
                    "query_id": c.query_id,
                    "fragment_id": c.fragment_id,
                    "grade": c.grade,
                    "source": f"release {c.release}" if c.release else "set by hand",
                    "reason": c.reason,
                    "created_at": c.created_at,
                }
                for c in controls
            ]
        )
        views.table(frame, CONTROL_HEADERS, width="stretch")
    return every


def control_forms(engine: Engine, project: ProjectInfo, user: UserInfo, every: int | None) -> None:
    """Make control pairs from a release's adjudicated pairs, or add one by hand."""
    from_release, by_hand = st.columns(2)
    with from_release, st.form("controls-from-release"):
        st.markdown("**From a release**: its adjudicated pairs become control pairs, the adjudication's reason kept.")
        versions = [r.version for r in releases.list_releases(engine, project.name)]
        version = st.selectbox(
            "Release",
            versions,
            index=len(versions) - 1 if versions else None,
            format_func=lambda v: f"version {v}",
            placeholder="no release yet",
        )
        rate = st.text_input("Rate", value=f"1/{every}" if every else "1/20", help=RATE_HELP, key="rate-release")
        if st.form_submit_button("Make control pairs", disabled=not versions) and version is not None:
            with user_errors("No control pairs made"):
                st.success(
                    literal(
                        served(
                            control.controls_from_release(
                                engine, project.name, version, rate.strip(), actor=user.username
                            )
                        )
                    )
                )

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
                st.success(
                    literal(
                        served(
                            control.add_control(
                                engine,
                                project.name,
                                query.strip(),
                                fragment.strip(),
                                int(grade),
                                reason,
                                hand_rate.strip() or None,
                                actor=user.username,
                            )
                        )
                    )
                )


def qualification_form(engine: Engine, project: ProjectInfo, user: UserInfo) -> qualification.QualifySettings:
    """The qualification round's size and κ threshold; returns the settings in force."""
    st.subheader("Qualification round")
    settings = qualification.qualification_settings(engine, project.name)
    st.caption(literal(settings.sentence()))
    with st.form("qualify"):
        c1, c2, c3 = st.columns(3)
        pairs = c1.number_input(
            "Control pairs in the round (0: no round)",
            min_value=0,
            max_value=max(settings.controls, 2),
            value=settings.pairs or 0,
            step=1,
        )
        own = c2.checkbox(
            "Own κ threshold",
            value=not settings.threshold_is_default,
            help=f"Unticked: the project's agreement threshold ({project.threshold:g}).",
        )
        threshold = c3.number_input("κ threshold", min_value=-1.0, max_value=1.0, step=0.05, value=settings.threshold)
        if st.form_submit_button("Save qualification round"):
            with user_errors("Not saved"):
                saved = qualification.set_qualification(
                    engine, project.name, int(pairs), float(threshold) if own else None, actor=user.username
                )
                st.success(literal(saved.sentence()))
    return settings


def rounds_section(
    engine: Engine, project: ProjectInfo, user: UserInfo, settings: qualification.QualifySettings
) -> list[qualification.RoundState]:
    """Each annotator's round, with the buttons that open a queue or grant a retake; returns the rounds."""
    rounds = qualification.list_rounds(engine, project.name)
    if not rounds:
        st.caption("No annotator has started a qualification round in this project.")
    else:
        rounds_table(rounds)
        for r in rounds:
            if r.open:
                continue
            st.text(f"{r.username}: {r.sentence()}")
            opens, retakes = st.columns(2)
            opens.button(
                f"Open {literal(r.username)}'s queue",
                key=f"open-queue-{r.username}",
                on_click=auth.guarded(open_queue, role=Role.LEAD),
                args=(engine, project.name, r.username),
            )
            if r.status in (RoundStatus.FAILED, RoundStatus.CLOSED) and settings.pairs is not None:
                retakes.button(
                    f"Grant {literal(r.username)} a retake",
                    key=f"retake-{r.username}",
                    on_click=auth.guarded(grant_retake, role=Role.LEAD),
                    args=(engine, project.name, r.username),
                    help=f"A new round of {settings.pairs} control pairs they have not met in a round.",
                )
    return rounds


def close_queue_form(
    engine: Engine, project: ProjectInfo, user: UserInfo, rounds: list[qualification.RoundState]
) -> None:
    """Close an open queue again, with the reason the annotator reads."""
    not_open = {r.username for r in rounds if not r.open}
    can_close = [
        u.username
        for u in list_users(engine, Role.ANNOTATOR)
        if u.active and u.kind == AnnotatorKind.HUMAN and u.username not in not_open
    ]
    with st.form("close-queue"):
        st.markdown(
            "**Close a queue again**: the store refuses the annotator's regular grades until a lead reopens "
            "the queue or they pass a retake."
        )
        st.selectbox(
            "Annotator",
            can_close,
            index=None,
            key=CLOSE_WHO,
            placeholder="choose an annotator" if can_close else "no open queue",
        )
        st.text_area("Why (the annotator reads it)", key=CLOSE_REASON)
        st.form_submit_button(
            "Close the queue",
            disabled=not can_close,
            on_click=auth.guarded(close_queue, role=Role.LEAD),
            args=(engine, project.name),
        )


def earlier_rounds(engine: Engine, project: ProjectInfo, rounds: list[qualification.RoundState]) -> None:
    """The rounds a retake replaced."""
    in_force = {(r.username, r.attempt) for r in rounds}
    earlier = [
        r
        for r in qualification.list_rounds(engine, project.name, history=True)
        if (r.username, r.attempt) not in in_force
    ]
    if earlier:
        with st.expander(f"Earlier rounds ({len(earlier)})"):
            rounds_table(earlier)


def decision_flash() -> None:
    """The sentence of the decision a button or the form just made, shown once."""
    if DECIDED in st.session_state:
        st.success(literal(st.session_state.pop(DECIDED)))


engine, user = views.lead_page("Controls")
project = views.pick_project(engine)
if project is None:
    st.stop()
every = controls_list(engine, project)
control_forms(engine, project, user, every)
settings = qualification_form(engine, project, user)
rounds = rounds_section(engine, project, user, settings)
close_queue_form(engine, project, user, rounds)
earlier_rounds(engine, project, rounds)
decision_flash()

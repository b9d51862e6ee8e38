"""Lead page: cut an immutable golden-set release by a consensus rule, read its card, diff it, download it.
Names, rules and formats come from the store's constants; every user-supplied string is shown literally."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app import auth, views
from annotator.app.components import reliability
from annotator.app.components.releases import (
    averaging_line,
    card_caption,
    card_headline,
    decision_input,
    downloads,
    grade_distribution,
    show_changed_texts,
    show_model_card,
    show_policy,
    show_release_diff,
    show_releases,
)
from annotator.app.views import literal
from db import releases
from db.accounts.users import UserInfo
from db.projects import ProjectInfo
from db.releases import ReleaseInfo
from eval_core.consensus import RULES
from eval_core.errors import USER_ERRORS
from eval_core.thresholds import MODEL_THRESHOLD
from eval_core.vocab import RELEASE_POLICIES

POLICY_HELP = (
    "humans-only: labels come from people alone (default) · model-fills-gaps: a pair no person graded "
    "gets the model judge's grade, allowed only when its quadratic-weighted κ with the human consensus on "
    "the guideline version in force reaches the threshold. Every label records where it came from."
)
RULE_HELP = (
    "median: lower median on ties (default) · majority: ties go to the lower grade · "
    "mean: rounded half up · min: pessimistic. An adjudicated grade always wins; "
    '"can\'t judge" never counts.'
)


def create_release_form(engine: Engine, project: ProjectInfo, user: UserInfo) -> None:
    """Cut a new release by a consensus rule, a minimum of grades per pair and a label policy."""
    with st.form("create-release"):
        st.subheader("New release")
        left, right = st.columns(2)
        rule = left.selectbox("Consensus rule", RULES, help=RULE_HELP)
        min_grades = right.number_input("Minimum grades per pair", min_value=1, max_value=20, value=1, step=1)
        policy = left.selectbox("Label policy", RELEASE_POLICIES, help=POLICY_HELP)
        decision = decision_input(right)
        model_threshold = right.number_input(
            "Least model κ (quadratic) for model-fills-gaps",
            min_value=0.0,
            max_value=1.0,
            value=MODEL_THRESHOLD,
            step=0.05,
        )
        if st.form_submit_button("Create release"):
            try:
                with st.spinner("Building the release…"):
                    made = releases.create_release(
                        engine,
                        project.name,
                        rule=rule,
                        min_grades=int(min_grades),
                        actor=user.username,
                        policy=policy,
                        model_threshold=float(model_threshold),
                        decision=decision,
                    )
            except USER_ERRORS as exc:
                st.error(f"No release: {literal(exc)}")
            else:
                st.success(
                    f"Release {made.version} created ({rule}, at least {int(min_grades)} grade(s) per pair, "
                    f"policy {policy})."
                )


def pick_release(engine: Engine, project: ProjectInfo) -> tuple[list[int], ReleaseInfo]:
    """The releases listed and the one picked: every version newest first and the chosen release. Stops the page
    when there is no release."""
    listed = releases.list_releases(engine, project.name)
    if not listed:
        st.info("No release yet.")
        st.stop()

    st.subheader("Releases")
    show_releases(listed)
    versions = sorted((r.version for r in listed), reverse=True)
    version = st.selectbox("Release", versions, index=0)
    release = releases.get_release(engine, project.name, version)
    return versions, release


def card_section(engine: Engine, project: ProjectInfo, release: ReleaseInfo) -> None:
    """The release's card: headline, grade distribution, reliability, label policy and changed texts."""
    version = release.version
    st.subheader(f"Card — release {version}")
    card = release.card
    for col, (label, value) in zip(st.columns(4), card_headline(card), strict=True):
        col.metric(label, value)
    st.dataframe(grade_distribution(card, project.labels), hide_index=True, placeholder=views.MISSING)
    st.caption(card_caption(card, release))
    show_model_card(card)
    st.markdown("**Reliability**")
    reliability.show_card_reliability(card, version)
    st.text(averaging_line(card))
    show_policy(card)
    show_changed_texts(releases.changed_texts(engine, project.name, version))
    with st.expander("Full card"):
        st.json(card)


def file_of(files: dict[str, bytes], name: str) -> Callable[[], bytes]:
    """The release file `name`, made when its download button is clicked."""
    return lambda: files[name]


def downloads_section(engine: Engine, project: ProjectInfo, version: int) -> None:
    """The release's files, one download button each (leads only)."""
    st.subheader("Downloads")
    files = releases.release_files(engine, project.name, version)
    offered = [d for d in downloads() if d[0] in files]
    # One row that wraps, each button as wide as its label: seven equal columns cut every label longer than "CSV"
    # to "TREC qrels…", so the gains and the as-judged TREC files could not be told apart.
    buttons = st.container(horizontal=True, wrap=True)
    for name, label, mime in offered:
        buttons.download_button(
            label,
            auth.lead_only(file_of(files, name)),
            file_name=f"{project.name}-v{version}-{name}",
            mime=mime,
            key=f"download-{name}",
            on_click="ignore",
        )


def diff_section(engine: Engine, project: ProjectInfo, versions: list[int], version: int) -> None:
    """What changed since the previous release."""
    older = [v for v in versions if v < version]
    if older:
        st.subheader(f"Diff against release {older[0]}")
        diff = releases.diff_releases(engine, project.name, older[0], version)
        show_release_diff(diff)
    else:
        st.caption("The first release: nothing to diff against.")


engine, user = views.lead_page("Releases")
project = views.pick_project(engine)
if project is None:
    st.stop()
create_release_form(engine, project, user)
versions, release = pick_release(engine, project)
card_section(engine, project, release)
downloads_section(engine, project, release.version)
diff_section(engine, project, versions, release.version)

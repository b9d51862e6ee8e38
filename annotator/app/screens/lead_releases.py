"""Lead page: cut an immutable golden-set release by a consensus rule, read its card, diff it, download it.
Names, rules and formats come from the store's constants; every user-supplied string is shown literally."""

from __future__ import annotations

import streamlit as st

from annotator.app import auth, views
from annotator.app.components import releases as views_release
from annotator.app.components import reliability as views_reliability
from annotator.app.views import literal
from db import releases
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
    "mean: rounded half up · min: pessimistic · dawid-skene, mace, glad: annotator models fitted on every "
    "grade (crowd-kit's), control pairs and adjudications as known truth, each pair's posterior kept. "
    'An adjudicated grade always wins; "can\'t judge" never counts.'
)

engine, user = views.lead_page("Releases")
project = views.pick_project(engine)
if project is None:
    st.stop()

with st.form("create-release"):
    st.subheader("New release")
    left, right = st.columns(2)
    rule = left.selectbox("Consensus rule", RULES, help=RULE_HELP)
    min_grades = right.number_input("Minimum grades per pair", min_value=1, max_value=20, value=1, step=1)
    policy = left.selectbox("Label policy", RELEASE_POLICIES, help=POLICY_HELP)
    decision = views_release.decision_input(right)
    model_threshold = right.number_input(
        "Least model κ (quadratic) for model-fills-gaps", min_value=0.0, max_value=1.0, value=MODEL_THRESHOLD, step=0.05
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

listed = releases.list_releases(engine, project.name)
if not listed:
    st.info("No release yet.")
    st.stop()

st.subheader("Releases")
views_release.show_releases(listed)
versions = sorted((r.version for r in listed), reverse=True)
version = st.selectbox("Release", versions, index=0)
release = releases.get_release(engine, project.name, version)

st.subheader(f"Card — release {version}")
card = release.card
for col, (label, value) in zip(st.columns(4), views_release.card_headline(card), strict=True):
    col.metric(label, value)
st.dataframe(views_release.grade_distribution(card, project.labels), hide_index=True, placeholder=views.MISSING)
st.caption(views_release.card_caption(card, release))
views_release.show_model_card(card)
st.markdown("**Reliability**")
views_reliability.show_card_reliability(card, version)
views_release.show_policy(card)
views_release.show_changed_texts(releases.changed_texts(engine, project.name, version))
with st.expander("Full card"):
    st.json(card)

st.subheader("Downloads")
files = releases.release_files(engine, project.name, version)
offered = [d for d in views_release.downloads() if d[0] in files]
# One row that wraps, each button as wide as its label: seven equal columns cut every label longer than "CSV"
# to "TREC qrels…", so the gains and the as-judged TREC files could not be told apart.
buttons = st.container(horizontal=True, wrap=True)
for name, label, mime in offered:
    buttons.download_button(
        label,
        auth.lead_only(lambda name=name: files[name]),
        file_name=f"{project.name}-v{version}-{name}",
        mime=mime,
        key=f"download-{name}",
        on_click="ignore",
    )

older = [v for v in versions if v < version]
if older:
    st.subheader(f"Diff against release {older[0]}")
    diff = releases.diff_releases(engine, project.name, older[0], version)
    views_release.show_release_diff(diff)
else:
    st.caption("The first release: nothing to diff against.")

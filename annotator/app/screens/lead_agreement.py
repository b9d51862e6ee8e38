"""Lead page: do the annotators agree, and if not, on which guideline version and which grade boundary?"""

from __future__ import annotations

import streamlit as st

from annotator.app import views
from annotator.app.components import agreement as views_agreement
from annotator.app.components import charts
from annotator.app.components import control as views_control
from eval_core.agreement.coefficients import WEIGHTS

engine, user = views.lead_page("Agreement")
project = views.pick_project(engine)
if project is None:
    st.stop()

judgments, agreement = views_agreement.project_agreement(engine, project)
if agreement is None:
    st.info("No judgments yet: assign pairs and let the annotators grade.")
    st.stop()
scopes = agreement.scopes()  # the guideline version in force first, when anything was graded under it
scope = st.radio("Scope", list(scopes), horizontal=True) if len(scopes) > 1 else next(iter(scopes))
report = scopes[scope]
threshold = float(project.threshold)
low, high = views.scale_of(project)


for col, tile in zip(st.columns(3), views_agreement.headline(report, scope), strict=True):
    col.metric(tile.label, tile.value)
    col.caption(tile.caption)
st.caption(
    f"Scope: {scope}. {report.n_units} pairs graded by {report.n_annotators} annotators "
    f"({report.n_pairable_units} pairs with at least two grades) on the {low}–{high} scale. "
    f"CIs resample queries. Threshold {threshold:g}. Krippendorff's bands: α ≥ 0.800 reliable, "
    "0.667–0.800 tentative."
)
pooled = views_agreement.pooled_line(agreement)
if pooled and report is not agreement.report:
    st.caption(pooled)

for flag in views_agreement.agreement_flags(agreement, threshold):
    st.error(flag.banner, icon=":material/flag:")
    if flag.reasons:
        st.text("\n".join(f"- {reason}" for reason in flag.reasons))

calibrated = views_agreement.project_calibration(engine, project)
if calibrated is not None:
    st.subheader("Model judges vs humans")
    st.caption(
        "Every number above is human–human: model judges never count in it. Here each model judge is "
        "compared with the human consensus (median of the people's grades, lead decisions winning) and "
        "with each person, on the pairs graded by both, beside what the people reach with each other on "
        "the same pairs."
    )
    views.table(
        views_agreement.side_by_side(report, calibrated),
        views_agreement.SIDE_HEADERS,
        {"quadratic": 3, "alpha": 3},
        width="stretch",
    )
    for model in calibrated.models:
        st.text(
            f"Model judge {model.model}: {model.n_grades} grades. Against the human consensus it "
            f"{model.vs_consensus.bias.sentence(calibrated.scale)}."
        )
        views.table(
            views_agreement.comparison_table(model),
            views_agreement.COMPARISON_HEADERS,
            views_agreement.COMPARISON_DIGITS,
            width="stretch",
        )
        left, right = st.columns(2)
        with left:
            st.caption("Confusion against the human consensus (rows: consensus grade; columns: the model's).")
            confusion = views_agreement.confusion_table(model.vs_consensus, (low, high))
            views.table(confusion, {c: c for c in confusion.columns})
        with right:
            for title, groups in (("By category", model.by_category), ("By guideline version", model.by_guideline)):
                if groups:
                    st.caption(title)
                    views.table(
                        views_agreement.group_table(groups), views_agreement.GROUP_HEADERS, views_agreement.GROUP_DIGITS
                    )

st.subheader("Every coefficient")
st.caption(f"Side by side, so high raw agreement with low κ and α (the kappa paradox) is visible. Scope: {scope}.")
st.dataframe(
    views_agreement.styled(views_agreement.coefficients_table(report, threshold, scope)),
    hide_index=True,
    width="stretch",
)

st.subheader("Grade boundaries")
st.caption(f"α with the scale cut in two at each grade: the lowest marks the ambiguous boundary. Scope: {scope}.")
st.dataframe(
    views_agreement.styled(views_agreement.cuts_table(report, threshold, scope)), hide_index=True, width="stretch"
)
st.text("Grades: " + " · ".join(f"{g} = {name}" for g, name in sorted(project.labels.items())))

st.subheader("Cohen's κ per annotator pair")
st.caption(f"Scope: {scope}.")
if not report.kappa:
    st.info("Pairwise κ needs two annotators who graded the same pairs.")
else:
    if len(report.kappa) > 1:
        weight = st.radio("Weights", WEIGHTS, index=WEIGHTS.index("quadratic"), horizontal=True)
        st.altair_chart(charts.kappa_heatmap(report.kappa, weight, threshold), width="content")
    st.dataframe(views_agreement.kappa_table(report), hide_index=True, width="stretch")

views_control.control_section(engine, project.name)
views_control.reference_section(engine, project.name)

st.subheader("Confusion matrix")
st.caption("Scope: all judgments of the two annotators, every guideline version.")
annotators = sorted(judgments["annotator"].unique())
if len(annotators) >= 2:
    left, right = st.columns(2)
    a = left.selectbox("Annotator A", annotators, index=0)
    b = right.selectbox("Annotator B", [x for x in annotators if x != a], index=0)
    frame = charts.confusion_frame(judgments, a, b, (low, high))
    st.altair_chart(charts.confusion_chart(frame, a, b))

st.subheader("By query and by category")
st.caption(
    f"Scope: {views_agreement.POOLED if agreement.by_version else 'all judgments'}. Over fewer than "
    f"{views_agreement.MIN_VERDICT_PAIRS} pairs with two grades α is shown with its n and no verdict."
)
by_query, by_category = views_agreement.breakdown_tables(agreement, threshold)
left, right = st.columns(2)
left.dataframe(views_agreement.styled(by_query), hide_index=True)
right.dataframe(views_agreement.styled(by_category), hide_index=True)

st.subheader("Trend across guideline versions")
trend = views_agreement.guideline_trend(agreement)
if len(trend) >= 1:
    st.altair_chart(charts.agreement_trend_chart(trend, threshold), width="stretch")
else:
    st.info("No guideline version has enough overlapping grades yet.")

st.subheader("Most disputed pairs")
st.caption(
    f"At most {views_agreement.DISPUTED_SHOWN} of the widest, all guideline versions pooled; the Adjudication "
    "page offers every disputed pair."
)
for i, pair in enumerate(views_agreement.disputed_pairs(agreement)):
    text, button = st.columns([5, 1])
    text.text(views_agreement.disputed_line(pair))
    if button.button("Adjudicate", key=f"adjudicate-{i}"):
        views_agreement.open_adjudication(engine, project.name, pair)

"""Lead page: do the annotators agree, and if not, on which guideline version and which grade boundary?"""

from __future__ import annotations

import streamlit as st

from annotator import charts, views, views_agreement

engine, user = views.lead_page("Agreement")
project = views.pick_project(engine)
if project is None:
    st.stop()

judgments, report = views_agreement.project_agreement(engine, project)
if judgments.empty:
    st.info("No judgments yet: assign pairs and let the annotators grade.")
    st.stop()

for flag in views_agreement.agreement_flags(report, float(project.threshold)):
    st.error(flag, icon=":material/flag:")

for col, (label, value) in zip(st.columns(4), views_agreement.headline(report), strict=True):
    col.metric(label, value)
st.caption("Units are (query, fragment) pairs graded by at least one annotator; CIs resample queries. "
           "Krippendorff's bands: α ≥ 0.800 reliable, 0.667–0.800 tentative.")
st.dataframe(views_agreement.coefficients_table(report), hide_index=True, width="stretch")

st.subheader("Grade boundaries")
st.caption("α with the scale cut in two at each grade: the lowest marks the ambiguous boundary.")
st.dataframe(views_agreement.cuts_table(report), hide_index=True)

st.subheader("Pairwise Cohen's κ")
weight = st.radio("Weights", charts.KAPPA_WEIGHTS, index=2, horizontal=True)
if report["kappa"]:
    st.altair_chart(charts.kappa_heatmap(report["kappa"], weight, float(project.threshold)),
                    width="stretch")
else:
    st.info("Pairwise κ needs two annotators who graded the same pairs.")

st.subheader("Confusion matrix")
annotators = sorted(judgments["annotator"].unique())
if len(annotators) >= 2:
    left, right = st.columns(2)
    a = left.selectbox("Annotator A", annotators, index=0)
    b = right.selectbox("Annotator B", [x for x in annotators if x != a], index=0)
    frame = charts.confusion_frame(judgments, a, b, views.scale_of(project))
    st.altair_chart(charts.confusion_chart(frame, a, b))

st.subheader("By query and by category")
by_query, by_category = views_agreement.breakdown_tables(report)
left, right = st.columns(2)
left.dataframe(by_query, hide_index=True)
right.dataframe(by_category, hide_index=True)

st.subheader("Trend across guideline versions")
trend = views_agreement.guideline_trend(report)
if len(trend) >= 1:
    st.altair_chart(charts.agreement_trend_chart(trend, float(project.threshold)), width="stretch")
else:
    st.info("No guideline version has enough overlapping grades yet.")

st.subheader("Most disputed pairs")
for i, pair in enumerate(views_agreement.disputed_pairs(report)):
    text, button = st.columns([5, 1])
    text.text(views_agreement.disputed_line(pair))
    if button.button("Adjudicate", key=f"adjudicate-{i}"):
        views_agreement.open_adjudication(pair)

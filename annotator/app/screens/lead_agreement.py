"""Lead page: do the annotators agree, and if not, on which guideline version and which grade boundary?"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app import views
from annotator.app.components import agreement, charts, control
from annotator.app.components.agreement import ProjectAgreement
from db.projects import ProjectInfo
from eval_core.agreement.coefficients import WEIGHTS
from eval_core.agreement.types import AgreementReport
from eval_core.thresholds import MIN_VERDICT_PAIRS


def pick_scope(measured: ProjectAgreement) -> tuple[str, AgreementReport]:
    """The scope the page reads (a radio when there is more than one) and its report."""
    scopes = measured.scopes()  # the guideline version in force first, when anything was graded under it
    scope = st.radio("Scope", list(scopes), horizontal=True) if len(scopes) > 1 else next(iter(scopes))
    return scope, scopes[scope]


def headline_section(project: ProjectInfo, measured: ProjectAgreement, scope: str, report: AgreementReport) -> None:
    """The headline tiles, what they were computed on, and the flags of agreement below the threshold."""
    threshold = float(project.threshold)
    low, high = views.scale_of(project)
    for col, tile in zip(st.columns(3), agreement.headline(report, scope), strict=True):
        col.metric(tile.label, tile.value)
        col.caption(tile.caption)
    st.caption(
        f"Scope: {scope}. {report.n_units} pairs graded by {report.n_annotators} annotators "
        f"({report.n_pairable_units} pairs with at least two grades) on the {low}–{high} scale. "
        f"CIs: {agreement.APP_BOOTSTRAP} replicates resampling queries (qrelkit agreement --bootstrap "
        f"{agreement.APP_BOOTSTRAP} on the same judgments gives these CIs; its default is 1,000). Threshold "
        f"{threshold:g}. Krippendorff's bands: α ≥ 0.800 reliable, "
        "0.667–0.800 tentative."
    )
    pooled = agreement.pooled_line(measured)
    if pooled and report is not measured.report:
        st.caption(pooled)

    for flag in agreement.agreement_flags(measured, threshold):
        st.error(flag.banner, icon=":material/flag:")
        if flag.reasons:
            st.text("\n".join(f"- {reason}" for reason in flag.reasons))


def model_judges_section(engine: Engine, project: ProjectInfo, report: AgreementReport) -> None:
    """Each model judge against the human consensus and each person, beside the people's own agreement."""
    calibrated = agreement.project_calibration(engine, project)
    if calibrated is None:
        return
    st.subheader("Model judges vs humans")
    st.caption(
        "Every number above is human–human: model judges never count in it. Here each model judge is "
        "compared with the human consensus (median of the people's grades, lead decisions winning) and "
        "with each person, on the pairs graded by both, beside what the people reach with each other on "
        "the same pairs."
    )
    views.table(
        agreement.side_by_side(report, calibrated),
        agreement.SIDE_HEADERS,
        {"quadratic": 3, "alpha": 3},
        width="stretch",
    )
    for model in calibrated.models:
        st.text(
            f"Model judge {model.model}: {model.n_grades} grades. Against the human consensus it "
            f"{model.vs_consensus.bias.sentence(calibrated.scale)}."
        )
        views.table(
            agreement.comparison_table(model),
            agreement.COMPARISON_HEADERS,
            agreement.COMPARISON_DIGITS,
            width="stretch",
        )
        left, right = st.columns(2)
        with left:
            st.caption("Confusion against the human consensus (rows: consensus grade; columns: the model's).")
            confusion = agreement.confusion_table(model.vs_consensus, views.scale_of(project))
            views.table(confusion, {c: c for c in confusion.columns})
        with right:
            for title, groups in (("By category", model.by_category), ("By guideline version", model.by_guideline)):
                if groups:
                    st.caption(title)
                    views.table(agreement.group_table(groups), agreement.GROUP_HEADERS, agreement.GROUP_DIGITS)


def coefficients_section(project: ProjectInfo, report: AgreementReport, scope: str) -> None:
    """Every coefficient side by side, α at each grade boundary, and Cohen's κ per annotator pair."""
    threshold = float(project.threshold)
    st.subheader("Every coefficient")
    st.caption(f"Side by side, so high raw agreement with low κ and α (the kappa paradox) is visible. Scope: {scope}.")
    st.dataframe(
        agreement.styled(agreement.coefficients_table(report, threshold, scope)),
        hide_index=True,
        width="stretch",
    )

    st.subheader("Grade boundaries")
    st.caption(f"α with the scale cut in two at each grade: the lowest marks the ambiguous boundary. Scope: {scope}.")
    st.dataframe(agreement.styled(agreement.cuts_table(report, threshold, scope)), hide_index=True, width="stretch")
    st.text("Grades: " + " · ".join(f"{g} = {name}" for g, name in sorted(project.labels.items())))

    st.subheader("Cohen's κ per annotator pair")
    st.caption(f"Scope: {scope}.")
    if not report.kappa:
        st.info("Pairwise κ needs two annotators who graded the same pairs.")
    else:
        if len(report.kappa) > 1:
            weight = st.radio("Weights", WEIGHTS, index=WEIGHTS.index("quadratic"), horizontal=True)
            st.altair_chart(charts.kappa_heatmap(report.kappa, weight, threshold), width="content")
        st.dataframe(agreement.kappa_table(report), hide_index=True, width="stretch")


def confusion_section(project: ProjectInfo, judgments: pd.DataFrame) -> None:
    """The confusion matrix of two annotators the lead picks."""
    st.subheader("Confusion matrix")
    st.caption("Scope: all judgments of the two annotators, every guideline version.")
    annotators = sorted(judgments["annotator"].unique())
    if len(annotators) >= 2:
        left, right = st.columns(2)
        a = left.selectbox("Annotator A", annotators, index=0)
        b = right.selectbox("Annotator B", [x for x in annotators if x != a], index=0)
        frame = charts.confusion_frame(judgments, a, b, views.scale_of(project))
        st.altair_chart(charts.confusion_chart(frame, a, b))


def breakdown_section(project: ProjectInfo, measured: ProjectAgreement) -> None:
    """α by query and by category, and its trend across guideline versions."""
    threshold = float(project.threshold)
    st.subheader("By query and by category")
    st.caption(
        f"Scope: {agreement.POOLED if measured.by_version else 'all judgments'}. Over fewer than "
        f"{MIN_VERDICT_PAIRS} pairs with two grades α is shown with its n and no verdict."
    )
    by_query, by_category = agreement.breakdown_tables(measured, threshold)
    left, right = st.columns(2)
    left.dataframe(agreement.styled(by_query), hide_index=True)
    right.dataframe(agreement.styled(by_category), hide_index=True)

    st.subheader("Trend across guideline versions")
    trend = agreement.guideline_trend(measured)
    if len(trend) >= 1:
        st.altair_chart(charts.agreement_trend_chart(trend, threshold), width="stretch")
    else:
        st.info("No guideline version has enough overlapping grades yet.")


def disputed_section(engine: Engine, project: ProjectInfo, measured: ProjectAgreement) -> None:
    """The widest disputes, each with a button that opens it on the Adjudication page."""
    st.subheader("Most disputed pairs")
    st.caption(
        f"At most {agreement.DISPUTED_SHOWN} of the widest, all guideline versions pooled; the Adjudication "
        "page offers every disputed pair."
    )
    for i, pair in enumerate(agreement.disputed_pairs(measured)):
        text, button = st.columns([5, 1])
        text.text(agreement.disputed_line(pair))
        if button.button("Adjudicate", key=f"adjudicate-{i}"):
            agreement.open_adjudication(engine, project.name, pair)


engine, user = views.lead_page("Agreement")
project = views.pick_project(engine)
if project is None:
    st.stop()
judgments, measured = agreement.project_agreement(engine, project)
if measured is None:
    st.info("No judgments yet: assign pairs and let the annotators grade.")
    st.stop()
scope, report = pick_scope(measured)
headline_section(project, measured, scope, report)
model_judges_section(engine, project, report)
coefficients_section(project, report, scope)
control.control_section(engine, project.name)
control.reference_section(engine, project.name)
agreement.annotator_models_section(engine, project)
confusion_section(project, judgments)
breakdown_section(project, measured)
disputed_section(engine, project, measured)

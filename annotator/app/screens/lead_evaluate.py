"""Lead page: score a run against a release — the metrics `qrelkit eval` gives, with CIs, the recall curve,
the diagnosis, comparisons and each run's history with its drop alerts — and send unjudged top-k fragments
back to annotation. The store decides what to keep and how to compare; this page only shows it."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app import views
from annotator.app.components import charts, evaluate, reliability, robustness
from annotator.app.views import literal
from db import evaluations, releases
from db.accounts.users import UserInfo
from db.projects import ProjectInfo
from eval_core.errors import InputError
from eval_core.io.formats import read_run
from eval_core.io.judgments import relevant_from
from eval_core.ranking.evaluation import Evaluation, averaging
from eval_core.ranking.registry import DEFAULT_K
from eval_core.ranking.report import Diagnosis

K_CHOICES = (1, 3, 5, 10, 20, 50, 100)


def pick_release(engine: Engine, project: ProjectInfo) -> tuple[list[int], int, pd.DataFrame]:
    """The release to score against (the sidebar's picker, newest first) with its reliability as cut: every
    version newest first, the chosen one and its qrels. Stops the page when there is no release."""
    listed = releases.list_releases(engine, project.name)
    if not listed:
        st.info("Evaluation needs a release: create one on the Releases page.")
        st.stop()
    versions = sorted((r.version for r in listed), reverse=True)
    version = st.sidebar.selectbox("Release", versions, index=0)
    qrels = evaluations.release_qrels(engine, project.name, version)
    in_force = next(r for r in listed if r.version == version)
    reliability.show_card_reliability(in_force.card, version, lead=f"Release {version}, as cut: ")
    return versions, version, qrels


def pick_run(engine: Engine, project: ProjectInfo) -> tuple[list[str], str | None, pd.DataFrame, str]:
    """The run to score, stored or uploaded: the stored run names, the stored run's name (None for an upload),
    the run frame and the name it is shown under. Stops the page until there is a run."""
    stored = evaluate.stored_run_names(engine, project.name)
    source = st.radio("Run", ("Stored run", "Upload a run"), horizontal=True, index=0 if stored else 1)
    run_name = None
    if source == "Stored run":
        if not stored:
            st.info("No stored run: import one on the Project page, or upload one here.")
            st.stop()
        run_name = st.selectbox("Stored run", stored)
        run = evaluations.stored_run_frame(engine, project.name, run_name)
        name = run_name
    else:
        upload = st.file_uploader("Run file (TREC, JSONL or CSV)", key="evaluate-upload")
        if upload is None:
            st.stop()
        with views.saved_upload(upload) as path:
            try:
                run = read_run(path)
            except InputError as exc:
                st.error(literal(views.upload_error(exc, path, upload.name)))
                st.stop()
        name = upload.name
    return stored, run_name, run, name


def pick_options(project: ProjectInfo) -> tuple[list[int], int]:
    """The cutoffs k and the grade from which a fragment counts as relevant."""
    low, high = views.scale_of(project)
    grades = list(range(relevant_from((low, high)), high + 1))  # the lowest grade means not relevant
    left, right = st.columns([2, 1])
    ks = left.multiselect("Cutoffs k", K_CHOICES, default=list(DEFAULT_K)) or [10]
    rel_level = right.selectbox(
        "Relevant from grade",
        grades,
        index=0,
        format_func=lambda g: f"{g} · {project.labels.get(g, g)}",
        help="Binary metrics count a fragment as relevant from this grade on "
        "(`qrelkit eval --rel-level`); nDCG gains grade − lowest grade whatever "
        "is chosen here (`--scale`).",
    )
    return ks, rel_level


def score(
    engine: Engine,
    project: ProjectInfo,
    version: int,
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    names: tuple[str | None, str],
    ks: list[int],
    rel_level: int,
) -> tuple[Evaluation, Diagnosis]:
    """The run's evaluation and diagnosis (cached); a stored run's evaluation is kept for the drop alerts.
    `names` is the stored run's name (None for an upload) and the name the run is shown under."""
    run_name, name = names
    categories = evaluate.query_categories(engine, project)
    texts = evaluate.fragment_texts(engine, project.name)
    with st.spinner(f"Evaluating {literal(name)}…"):
        evaluation, diagnosis = evaluate.scored_run(
            qrels,
            run,
            tuple(sorted(ks)),
            dict(categories or {}) or None,
            name,
            rel_level,
            views.scale_of(project),
            (str(engine.url), project.name),
            texts,
        )
        if run_name is not None:
            evaluations.ensure_evaluation(engine, project.name, run_name, version)
    return evaluation, diagnosis


def holes_section(
    engine: Engine, project: ProjectInfo, user: UserInfo, diagnosis: Diagnosis, run_name: str | None
) -> None:
    """The coverage and judged-share warnings, and the button that sends a stored run's holes to annotation."""
    if diagnosis.coverage.flagged:
        st.warning(literal(diagnosis.coverage.message), icon=":material/search_off:")
    if diagnosis.judged.flagged:
        st.warning(literal(diagnosis.judged.message), icon=":material/warning:")
        evaluate.send_holes(
            engine, project.name, run_name, diagnosis.judged.k, len(diagnosis.judged.unjudged), user.username
        )


def metrics_section(
    project: ProjectInfo, evaluation: Evaluation, name: str, version: int, ks: list[int], rel_level: int
) -> None:
    """The metrics at each cutoff (with their CIs) and over the whole ranking, as `qrelkit eval` prints them."""
    low, high = views.scale_of(project)
    st.subheader(f"Metrics of {literal(name)} on release {version}")
    k_list = ",".join(map(str, sorted(ks)))
    st.caption(
        f"Means over the release's {len(evaluation.per_query)} queries, as `qrelkit eval --k {k_list} --rel-level "
        f"{rel_level - low}` prints them on the release's TREC export (grades written as gains, grade − {low}), "
        f"and `qrelkit eval --scale {low}-{high} --k {k_list} --rel-level {rel_level}` on its as-judged export; "
        "95% CIs from a bootstrap over queries."
    )
    st.text(averaging(evaluation.missing, evaluation.trec_eval_version)["sentence"])
    st.markdown("**At cutoff k**")
    st.table(evaluate.cutoff_table(evaluation))
    st.caption(evaluate.family_legend())
    with st.expander("95% confidence intervals at each cutoff"):
        st.table(evaluate.cutoff_ci_table(evaluation))
    st.markdown("**Over the whole ranking** (no cutoff)")
    st.table(evaluate.whole_ranking_table(evaluation))


def diagnosis_section(evaluation: Evaluation, diagnosis: Diagnosis, name: str) -> None:
    """The depth verdict, the recall curve, the warnings, the breakdown by category and the low-recall queries."""
    st.subheader("Diagnosis")
    st.info(literal(diagnosis.depth.verdict))
    st.info(literal(f"Recall curve: {diagnosis.curve.verdict}"))
    curve = pd.DataFrame({"k": diagnosis.curve.ks, "recall": diagnosis.curve.recall, "run": name})
    st.altair_chart(charts.recall_curve_chart(curve), width="stretch")
    for warning in [*evaluation.warnings, *(w for w in diagnosis.warnings if w not in evaluation.warnings)]:
        st.caption(literal(warning))

    if diagnosis.categories is not None:
        st.subheader("By category")
        if diagnosis.categories.note:
            st.caption(literal(diagnosis.categories.note))
        evaluate.show_categories(diagnosis.categories.rows)

    st.subheader(f"Low-recall queries ({len(diagnosis.low_recall)})")
    for query in diagnosis.low_recall:
        with st.expander(
            f"{literal(query.query_id)}: recall@{query.k} = {query.recall:.3f} ({query.n_relevant} relevant)"
        ):
            for issue in query.issues:
                st.text(issue)


def compare_section(
    engine: Engine,
    project: ProjectInfo,
    version: int,
    stored: list[str],
    names: tuple[str | None, str],
    run: pd.DataFrame,
    rel_level: int,
) -> None:
    """Paired randomization tests of the run against other stored runs (when there are any)."""
    run_name, name = names
    others = [r for r in stored if r != run_name]
    if not others:
        return
    st.subheader("Compare with other runs")
    rivals = st.multiselect("Runs to compare", others)
    metrics = st.multiselect("Metrics", evaluations.HEADLINE, default=[evaluations.HEADLINE[0]])
    if rivals and metrics:
        with st.spinner("Paired randomization tests…"):
            comparison = evaluate.compared_runs(
                str(engine.url), project.name, version, name, run, tuple(rivals), tuple(metrics), rel_level, engine
            )
        for sentence in comparison.sentences():
            st.markdown(f"- {literal(sentence)}")
        evaluate.show_comparison(comparison)
        for warning in comparison.warnings:
            st.caption(literal(warning))


def drops_section(engine: Engine, project: ProjectInfo, version: int, versions: list[int]) -> None:
    """The drop alerts at the chosen release: stored runs whose headline metric fell below its CI."""
    st.subheader(f"Drops at release {version}")
    alerts = evaluations.drop_alerts(engine, project.name, version)
    st.caption(
        "One alert per stored run and headline metric that fell below the 95% CI of the run's previous "
        "evaluated release, saying whether the run fell on the queries both releases label alike or the golden "
        "set changed (queries added, removed, relabelled); an interval of zero width raises none. Stored "
        f"evaluations count grades ≥ {relevant_from(views.scale_of(project))} as relevant."
    )
    for alert in alerts:
        st.warning(evaluate.alert_text(alert), icon=":material/trending_down:")
    if not alerts:
        st.caption(
            f"Release {version} is the first: there is no earlier evaluation to fall from."
            if version == min(versions)
            else "No headline metric of any stored run fell beyond its CI."
        )


def history_section(engine: Engine, project: ProjectInfo, run_name: str | None) -> None:
    """A stored run's headline metric across releases (nothing for an uploaded run)."""
    if run_name is None:
        return
    st.subheader("History across releases")
    history = evaluations.run_history(engine, project.name, run_name)
    if history.empty:
        st.caption("No stored evaluation of this run yet.")
    else:
        metric = st.selectbox("Metric", evaluations.HEADLINE)
        st.altair_chart(charts.run_history_chart(history, metric), width="stretch")


engine, user = views.lead_page("Evaluate")
project = views.pick_project(engine)
if project is None:
    st.stop()
versions, version, qrels = pick_release(engine, project)
stored, run_name, run, name = pick_run(engine, project)
ks, rel_level = pick_options(project)
evaluation, diagnosis = score(engine, project, version, qrels, run, (run_name, name), ks, rel_level)
holes_section(engine, project, user, diagnosis, run_name)
metrics_section(project, evaluation, name, version, ks, rel_level)
diagnosis_section(evaluation, diagnosis, name)
compare_section(engine, project, version, stored, (run_name, name), run, rel_level)
drops_section(engine, project, version, versions)
history_section(engine, project, run_name)
robustness.robustness_section(engine, project.name)
reliability.reliability_section(engine, project.name, version)

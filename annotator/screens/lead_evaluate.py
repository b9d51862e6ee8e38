"""Lead page: score a run against a release — metrics with CIs, the recall curve, the diagnosis, comparisons
and each run's history — and send unjudged top-k fragments back to annotation."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator import charts, views, views_evaluate
from db import evaluations, releases
from eval_core import report
from eval_core.compare import compare_scores
from eval_core.errors import InputError
from eval_core.formats import read_run

K_CHOICES = (1, 3, 5, 10, 20, 50, 100)
TABLE_METRICS = ("P@k", "recall@k", "ndcg@k", "success@k", "judged@k", "mrr", "map")
COMPARE_METRICS = ("ndcg@10", "recall@10", "P@10", "mrr", "map")

engine, user = views.lead_page("Evaluate")
project = views.pick_project(engine)
if project is None:
    st.stop()

listed = releases.list_releases(engine, project.name)
if not listed:
    st.info("Evaluation needs a release: create one on the Releases page.")
    st.stop()
versions = sorted((r.version for r in listed), reverse=True)
version = st.sidebar.selectbox("Release", versions, index=0)
qrels = evaluations.release_qrels(engine, project.name, version)

stored = views_evaluate.stored_run_names(engine, project.name)
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
            st.error(views.upload_error(exc, path, upload.name))
            st.stop()
    name = upload.name

ks = st.multiselect("Cutoffs k", K_CHOICES, default=[1, 3, 5, 10, 20, 100])
categories = views_evaluate.query_categories(engine, project)
texts = views_evaluate.fragment_texts(engine, project.name)
with st.spinner(f"Evaluating {name}…"):
    evaluation = views_evaluate.evaluate_run(qrels, run, TABLE_METRICS, tuple(sorted(ks or [10])), categories, name)
    diagnosis = report.diagnose(qrels, run, fragments=texts, categories=categories or None, name=name)
    if run_name is not None:
        evaluated = set(evaluations.run_history(engine, project.name, run_name)["version"])
        if version not in evaluated:  # store it once, for the history chart
            evaluations.evaluate_stored_run(engine, project.name, run_name, version)

for warning in evaluation.warnings:
    st.warning(warning)
if diagnosis.judged.flagged:
    st.warning(diagnosis.judged.message, icon=":material/warning:")
    holes = len(diagnosis.judged.unjudged)
    if run_name is not None and holes and st.button(f"Send the {holes} unjudged pairs to annotation"):
        created = evaluations.judge_holes(engine, project.name, run_name, k=diagnosis.judged.k)
        st.success(f"{created} new pair(s) created; assign them on the Project page.")
    elif run_name is None:
        st.caption("Import this run on the Project page to send its holes to annotation.")

st.subheader(f"Metrics of {name} on release {version}")
st.caption("Mean over the release's queries; 95% CI from a bootstrap over queries.")
st.dataframe(views_evaluate.metric_table(evaluation.per_query), width="stretch")

st.subheader("Diagnosis")
st.info(diagnosis.depth.verdict)
st.info(f"Recall curve: {diagnosis.curve.verdict}")
curve = pd.DataFrame({"k": diagnosis.curve.ks, "recall": diagnosis.curve.recall, "run": name})
st.altair_chart(charts.recall_curve_chart(curve), width="stretch")
for warning in diagnosis.warnings:
    if warning not in evaluation.warnings:
        st.caption(warning)

if diagnosis.categories is not None:
    st.subheader("By category")
    st.caption(diagnosis.categories.note)
    st.dataframe(pd.DataFrame(diagnosis.categories.rows), hide_index=True)

st.subheader(f"Low-recall queries ({len(diagnosis.low_recall)})")
for query in diagnosis.low_recall:
    with st.expander(f"{query.query_id}: recall@{query.k} = {query.recall:.3f} ({query.n_relevant} relevant)"):
        for issue in query.issues:
            st.text(issue)

others = [r for r in stored if r != run_name]
if others:
    st.subheader("Compare with other runs")
    rivals = st.multiselect("Runs to compare", others)
    metrics = st.multiselect("Metrics", COMPARE_METRICS, default=["ndcg@10"])
    if rivals and metrics:
        with st.spinner("Paired randomization tests…"):
            scores = {name: views_evaluate.evaluate_run(qrels, run, COMPARE_METRICS, (10,), categories, name).per_query}
            for rival in rivals:
                scores[rival] = views_evaluate.evaluate_run(qrels, evaluations.stored_run_frame(engine, project.name, rival),
                                                   COMPARE_METRICS, (10,), categories, rival).per_query
            comparison = compare_scores(scores, metrics)
        for sentence in comparison.sentences():
            st.markdown(f"- {sentence}")
        st.dataframe(comparison.to_frame(), hide_index=True)
        for warning in comparison.warnings:
            st.caption(warning)

if run_name is not None:
    st.subheader("History across releases")
    history = evaluations.run_history(engine, project.name, run_name)
    if history.empty:
        st.caption("No stored evaluation of this run yet.")
    else:
        names = sorted(history["metric"].unique())
        metric = st.selectbox("Metric", names, index=names.index("ndcg@10") if "ndcg@10" in names else 0)
        for row in history[history["drop"]].itertuples():
            st.warning(f"{row.metric} of {run_name} dropped by {-row.change:.4f} to {row.value:.4f} "
                       f"at release {row.version}.", icon=":material/trending_down:")
        st.altair_chart(charts.run_history_chart(history, metric), width="stretch")

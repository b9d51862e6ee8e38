"""The Judges page's parts: the model judges and their grades in the project, a form that grades the project's
pairs with a model behind an OpenAI-compatible endpoint (what `qrelkit prejudge` does), the judge-trust report
of one judge against people (`qrelkit judge-trust --project`), and its post-editing queue (`qrelkit post-edit`)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator import judge_client, judge_run
from annotator.app import views
from annotator.app.components.charts import bland_altman_chart
from annotator.app.errors import user_errors
from db import model_judges
from db.accounts import users
from db.accounts.users import UserInfo
from db.projects import ProjectInfo
from eval_core.errors import USER_ERRORS
from eval_core.judges.probes import ProbeSummary
from guidelines import JUDGE_PROMPT

JUDGE_HEADERS = {
    "username": "Model judge",
    "model": "Model",
    "prompt": "Prompt version",
    "params": "Parameters",
    "judged": "Grades in this project",
    "probes": "Probes (qrelkit judge-probe)",
}
PREJUDGE_COUNTS = {
    "pairs": "Pairs",
    "called": "Calls",
    "cached": "From the cache",
    "created": "New grades",
    "updated": "Changed grades",
    "unchanged": "Unchanged",
    "malformed": "Malformed answers",
    "failed": "Failed",
    "total_tokens": "Tokens",
}


def judges_frame(engine: Engine, project: str) -> pd.DataFrame:
    """One row per model judge (prompt version shortened to 12 hex digits, as commits are)."""
    rows = [
        {
            "username": j.username,
            "model": j.model,
            "prompt": (j.prompt_version or "")[:12] or None,
            "params": ", ".join(f"{k}={v}" for k, v in sorted(j.params.items())) or None,
            "judged": j.judged,
            "probes": ProbeSummary.from_dict(j.probes).sentence() if j.probes else "not probed",
        }
        for j in model_judges.list_model_judges(engine, project)
    ]
    return pd.DataFrame(rows, columns=list(JUDGE_HEADERS))


def model_judges_section(engine: Engine, project: ProjectInfo, user: UserInfo) -> pd.DataFrame:
    """List the model judges, then offer a prejudge run with a progress bar and its report. The list is read
    after the run, into its place above the form, so a run's judge and grades show without a reload. Returns
    the list as shown."""
    listing = st.container()
    source = judge_client.key_source()
    with st.form("prejudge"):
        st.markdown(
            "**Grade pairs with a model** (any OpenAI-compatible chat-completions endpoint: vLLM, llama.cpp "
            "server, Ollama, hosted APIs)"
        )
        base_url = st.text_input("Endpoint base URL", placeholder="http://localhost:8000/v1")
        c1, c2 = st.columns(2)
        model = c1.text_input("Model", placeholder="the name the endpoint serves")
        annotator = c2.text_input("Annotator name", placeholder="defaults to the model name")
        c1, c2, c3 = st.columns(3)
        limit = c1.number_input("First N pairs (0 = every pair)", min_value=0, value=0)
        concurrency = c2.number_input("Calls at a time", min_value=1, max_value=64, value=4)
        timeout = c3.number_input("Seconds per request", min_value=1, max_value=600, value=60)
        st.caption(
            f"Prompt: {JUDGE_PROMPT.name} with the guideline in force (another prompt: `qrelkit prejudge "
            f"--prompt`). API key: "
            + (
                f"from {source}."
                if source
                else "none found (QRELKIT_JUDGE_API_KEY, OPENAI_API_KEY or Streamlit secrets); local servers need none."
            )
            + " The key is never stored."
        )
        submitted = st.form_submit_button("Grade with the model")
    if submitted:
        _run(
            engine,
            project,
            user,
            base_url.strip(),
            model.strip(),
            annotator.strip() or None,
            int(limit) or None,
            int(concurrency),
            float(timeout),
        )
    judges = judges_frame(engine, project.name)
    with listing:
        if len(judges):
            views.table(judges, JUDGE_HEADERS)
        else:
            st.info(
                "No model judge yet. Grade with one below, or import a model's grades as judgments of kind model "
                "(Project page, Import tab)."
            )
    return judges


def _run(
    engine: Engine,
    project: ProjectInfo,
    user: UserInfo,
    base_url: str,
    model: str,
    annotator: str | None,
    limit: int | None,
    concurrency: int,
    timeout: float,
) -> None:
    """One prejudge run as the logged-in lead; errors are shown literally, nothing is raised."""
    bar = st.progress(0.0, text="Starting…")

    def advance(done: int, total: int) -> None:
        bar.progress(done / total if total else 1.0, text=f"{done} of {total} pairs")

    try:
        judge = judge_client.ChatJudge(
            base_url,
            model,
            JUDGE_PROMPT.read_text(encoding="utf-8"),
            project.labels,
            timeout=timeout,
            api_key=judge_client.api_key(),
        )
        report = judge_run.prejudge(
            engine,
            project.name,
            judge,
            model=model,
            annotator=annotator,
            concurrency=concurrency,
            limit=limit,
            on_progress=advance,
            actor=user.username,
        )
    except USER_ERRORS as exc:
        bar.empty()
        st.error(f"Stopped: {views.literal(exc)}")
        return
    bar.progress(1.0, text=f"{report.pairs} pairs in {report.seconds:.1f} s")
    counts = report.to_dict()
    st.success(
        f"{report.pairs} pair(s) in {report.seconds:.1f} s: {report.called} call(s), {report.cached} from "
        f"the cache, {report.created + report.updated} grade(s) written, {report.malformed} malformed, "
        f"{report.failed} failed, {counts['total_tokens']} tokens."
    )
    views.table(pd.DataFrame([{k: counts[k] for k in PREJUDGE_COUNTS}]), PREJUDGE_COUNTS)
    if report.problems:
        st.dataframe(pd.DataFrame({"Problem": report.problems}), hide_index=True)


RUN_HEADERS = {
    "run": "Run",
    "human": "People",
    "human_rank": "People's rank",
    "judge": "Judge",
    "judge_rank": "Judge's rank",
}
FLIP_HEADERS = {
    "better": "People rank higher",
    "worse": "People rank lower",
    "human_difference": "People's difference",
    "low": "95% low",
    "high": "95% high",
    "judge_difference": "Judge's difference",
    "kind": "Flip",
}
QUERY_HEADERS = {"query_id": "Query", "kappa": "κ", "n": "Pairs", "status": "Status"}
HYBRID_HEADERS = {
    "run": "Run",
    "estimate": "PPI++ mean",
    "low": "95% low",
    "high": "95% high",
    "human_mean": "People only",
    "judge_mean": "Judge only",
}


def graded_judges(judges: pd.DataFrame) -> list[str]:
    """The model judges with grades in this project (the ones a report or a queue can be made of)."""
    return [str(name) for name, n in zip(judges["username"], judges["judged"], strict=True) if n]


def trust_section(engine: Engine, project: ProjectInfo, name: str) -> None:
    """Can a model judge stand in for people here? The judge-trust report (what `qrelkit judge-trust --project
    P --model NAME` prints) for the chosen judge, on the stored runs."""
    st.subheader("Can this judge stand in for people?")
    with st.form("judge_trust"):
        c1, c2 = st.columns(2)
        metric = c1.text_input("Metric", value="ndcg@10")
        width = c2.number_input("Hybrid interval width wanted (0 = none)", min_value=0.0, value=0.0, step=0.01)
        submitted = st.form_submit_button("Measure against people")
    if not submitted:
        st.caption(
            "Runs ranked under people's and the judge's labels, the judge's leniency, its agreement per query, "
            "and the hybrid estimate where people judged only some queries."
        )
        return
    try:
        report = model_judges.project_judge_trust(
            engine, project.name, name, metric=metric.strip(), target_width=float(width) or None
        )
    except USER_ERRORS as exc:
        st.error(f"Stopped: {views.literal(exc)}")
        return
    show_trust(report)


QUEUE_HEADERS = {
    "query_id": "Query",
    "fragment_id": "Fragment",
    "grade": "Model's grade",
    "p_wrong": "Likely wrong",
    "impact": "Ranking impact",
    "sent": "Sent",
}


def post_edit_section(engine: Engine, project: ProjectInfo, user: UserInfo, name: str) -> None:
    """Post-editing (what `qrelkit post-edit` does): the model's grades on pairs no person graded, most likely
    wrong first; the lead sends the first N to people, who grade them blind; the edit rate per model grade and
    the model's κ against the post-edited grades so far."""
    st.subheader("Post-editing: people check the model where it is most likely wrong")
    people = users.people_who_grade(engine)
    with st.form("post_edit"):
        c1, c2 = st.columns([1, 3])
        count = c1.number_input("Pairs to send", min_value=1, value=20)
        to = c2.multiselect("Send to", people, placeholder="the people who post-edit (each pair to one, in turn)")
        st.caption("They find the pairs in their queue and grade them blind, as in re-judging: no model grade shown.")
        if st.form_submit_button("Send for post-editing"):
            with user_errors("Not sent"):
                sent = model_judges.send_for_post_editing(
                    engine, project.name, name, to, int(count), actor=user.username
                )
                st.success(f"Sent {sent} pair(s) for post-editing.")
    with user_errors("No queue"):
        stats, queue = model_judges.post_edit_view(engine, project.name, name)
        kappa = f"{stats.kappa:.3f}" if stats.kappa is not None else stats.kappa_status
        rates = ", ".join(f"grade {g}: {changed} of {n}" for g, (n, changed) in stats.by_grade.items() if n)
        st.text(
            f"Post-edited by people so far: {stats.n} of the judge's grades, {stats.edited} changed"
            + (f" ({rates}); {stats.weights} κ against the post-edited grades {kappa}" if stats.n else "")
        )
        st.caption(
            f"{len(queue)} model-only grade(s), {int(queue['sent'].sum())} sent; most likely wrong first (how often "
            "people disagree with that grade where both graded, times the pair's weight in the runs' top 10)."
        )
        views.table(queue.head(50), QUEUE_HEADERS, {"p_wrong": 2, "impact": 3})


def show_trust(report: Any) -> None:
    """The report: verdict, ranking, flips, leniency with its plot and confusion, worst queries, hybrid."""
    r, le = report.ranking, report.leniency
    st.text(report.verdict)
    for warning in report.warnings:
        st.warning(views.literal(warning))
    c1, c2, c3 = st.columns(3)
    c1.metric("Kendall τ", "—" if r.tau is None else f"{r.tau:.3f}", help=f"{r.n_runs} runs, {r.n_queries} queries")
    c2.metric("τ_ap", "—" if r.tau_ap is None else f"{r.tau_ap:.3f}", help="people's ranking as the truth")
    c3.metric(f"Top-{r.top_k} overlap", f"{r.top_overlap}/{r.top_k}")
    runs = pd.DataFrame([vars(s) for s in r.runs], columns=list(RUN_HEADERS))
    views.table(runs, RUN_HEADERS, {"human": 4, "judge": 4})
    if r.flips:
        flips = pd.DataFrame(
            [
                {
                    **vars(f),
                    "low": f.human_ci[0],
                    "high": f.human_ci[1],
                    "kind": "within people's noise" if f.noise else "real",
                }
                for f in r.flips
            ]
        )
        views.table(flips, FLIP_HEADERS, {k: 4 for k in ("human_difference", "low", "high", "judge_difference")})
    st.markdown("**Leniency** (Bland–Altman of per-query values, judge − people)")
    if le.bias is not None and report.values is not None:
        limits = "" if le.limits is None else f"; 95% limits {le.limits[0]:+.4f} … {le.limits[1]:+.4f}"
        st.text(f"bias {le.bias:+.4f}{limits} (n {le.n_values})")
        st.altair_chart(bland_altman_chart(report.values, le.bias, le.limits, report.metric), use_container_width=True)
    if le.n_pairs:
        st.text(f"{le.up:.1%} of {le.n_pairs} pairs graded up, {le.down:.1%} graded down")
        low = report.scale[0]
        confusion = pd.DataFrame(
            le.confusion,
            index=pd.Index([f"people {low + i}" for i in range(len(le.confusion))]),
            columns=[f"judge {low + i}" for i in range(len(le.confusion))],
        )
        st.dataframe(confusion)
    st.markdown(f"**Agreement per query** ({report.weights} κ, worst first)")
    queries = pd.DataFrame([vars(q) for q in report.per_query], columns=list(QUERY_HEADERS))
    views.table(queries, QUERY_HEADERS, {"kappa": 3})
    if report.hybrid:
        h0 = report.hybrid[0]
        st.markdown(
            f"**Hybrid estimate**: people on {h0.n_human} queries, the judge alone on {h0.n_judge_only} more (PPI++)"
        )
        hybrid = pd.DataFrame([{**vars(h), "low": h.ci[0], "high": h.ci[1]} for h in report.hybrid])
        views.table(hybrid, HYBRID_HEADERS, {k: 4 for k in ("estimate", "low", "high", "human_mean", "judge_mean")})
        if report.target_width is not None:
            needed = report.queries_needed
            st.text(
                f"intervals {report.target_width} wide need {needed} people-judged queries"
                if needed is not None
                else f"intervals {report.target_width} wide need more queries than the judge graded"
            )

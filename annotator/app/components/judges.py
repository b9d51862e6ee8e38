"""The Project page's Model judges tab: the model judges and their grades in the project, and a form that grades
the project's pairs with a model behind an OpenAI-compatible endpoint (what `qrelkit prejudge` does)."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator import judge_client, judge_run
from annotator.app import views
from db import model_judges
from db.accounts.users import UserInfo
from db.projects import ProjectInfo
from eval_core.errors import USER_ERRORS
from guidelines import JUDGE_PROMPT

JUDGE_HEADERS = {
    "username": "Model judge",
    "model": "Model",
    "prompt": "Prompt version",
    "params": "Parameters",
    "judged": "Grades in this project",
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
        }
        for j in model_judges.list_model_judges(engine, project)
    ]
    return pd.DataFrame(rows, columns=list(JUDGE_HEADERS))


def model_judges_tab(engine: Engine, project: ProjectInfo, user: UserInfo) -> None:
    """List the model judges, then offer a prejudge run with a progress bar and its report. The list is read
    after the run, into its place above the form, so a run's judge and grades show without a reload."""
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
            st.info("No model judge yet. Grade with one below, or import a model's grades as judgments of kind model.")


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

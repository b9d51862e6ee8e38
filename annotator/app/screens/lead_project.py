"""Lead page: set up a project — create, name its grades, import, pool, assign — watch the annotators'
progress and manage accounts (add an annotator, lift a login back-off). Names, ids and messages from the data
are shown literally."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotator import search_client
from annotator.app import views
from annotator.app.errors import user_errors
from db import assignment, evaluations, grading, imports, pooling, projects, textless
from db.accounts import logins, users
from db.accounts.users import UserInfo
from db.projects import ProjectInfo
from eval_core.errors import USER_ERRORS, InputError
from eval_core.io.writers import QrelsGrades
from eval_core.queue_order import ORDERS
from eval_core.thresholds import AGREEMENT_THRESHOLD
from eval_core.vocab import ANNOTATOR_KINDS, ORDER_NAMES, AnnotatorKind

IMPORTERS = {kind: f for kind, f in imports.IMPORT_KINDS.items() if kind != "adjudications"}  # decisions: CLI
BM25_MODES = ("top-k for queries no run covers", "top-N for every query", "off")
IMPORT_HELP = {
    "queries": "JSONL/CSV with id, text (+ category), BEIR queries.jsonl, MS MARCO qid<TAB>text, or TREC topics",
    "fragments": "JSONL/CSV with id, text (+ doc_id, chunk, title), BEIR corpus.jsonl, Pyserini (id, contents), "
    "ir_datasets (doc_id, text), or MS MARCO pid<TAB>text; gzipped or not",
    "run": "TREC run (qid Q0 docid rank score tag), JSONL or CSV",
    "judgments": "CSV/JSONL with query_id, fragment_id, annotator, grade[, note], a release JSONL, or TREC / BEIR "
    "qrels with the annotator whose grades they are",
}
PROGRESS_HEADERS = {
    "username": "Annotator",
    "progress": "Progress",
    "assigned": "Assigned",
    "done": "Done",
    "judged": "Judged (all)",
    "median_seconds": "Median s/pair",
    "last_active": "Last active",
}
USER_HEADERS = {
    "username": "Username",
    "role": "Role",
    "kind": "Kind",
    "active": "Active",
    "can_login": "Can log in",
    "login_wait": "Login back-off (s)",
}
UNLOCKED_KEY = "unlocked-account"  # the account just unlocked, confirmed on the run after the unlock
# Who the annotators of an imported judgments file are: None lets each line's annotator_kind column say (a
# judgments export carries it), else people.
KIND_NAMES = {
    None: "As the file says (people if it does not say)",
    "human": "People",
    "model": "Model judges (e.g. an LLM assessor's output)",
    "reference": "A reference (e.g. NIST's qrels): people are measured against it; it holds no queue",
}


def create_project_form(engine: Engine, user: UserInfo) -> None:
    """Create a project: its scale, overlap policy, agreement threshold and grade names (open when none exists)."""
    with st.expander("Create a project", expanded=not projects.list_projects(engine)), st.form("create-project"):
        name = st.text_input("Name")
        c1, c2, c3, c4, c5 = st.columns(5)
        low = c1.number_input("Lowest grade", min_value=0, max_value=99, value=0)
        high = c2.number_input("Highest grade", min_value=1, max_value=100, value=3)
        overlap = c3.number_input("Annotators per pair", min_value=1, max_value=20, value=2)
        fraction = c4.number_input("Fraction with overlap", min_value=0.01, max_value=1.0, value=1.0, step=0.05)
        threshold = c5.number_input(
            "Agreement threshold", min_value=-1.0, max_value=1.0, value=AGREEMENT_THRESHOLD, step=0.05
        )
        names = st.text_input(
            "Grade names (optional)",
            placeholder="1=Partly,2=Mostly,3=Fully — unnamed grades keep "
            "the default (the bundled guideline's names on 0–3, else 'Grade g')",
        )
        if st.form_submit_button("Create project"):
            with user_errors("Not created"):
                scale = (int(low), int(high))
                made = projects.create_project(
                    engine,
                    name.strip(),
                    scale=scale,
                    overlap=int(overlap),
                    overlap_fraction=float(fraction),
                    threshold=float(threshold),
                    labels=projects.parse_labels(names, scale),
                    actor=user.username,
                )
                # the same first guideline as `qrelkit project create`: the neutral 0-3 template, or one
                # generated for the scale from its grade names
                text, note = projects.starting_guideline(made)
                projects.add_guideline(engine, made.name, text, actor=user.username, note=note)
                st.success(f"Project {views.literal(made.name)} created; pick it in the sidebar.")


def grade_names_form(engine: Engine, project: ProjectInfo, user: UserInfo) -> ProjectInfo:
    """Rename the grades; returns the project as saved (the tabs below show the new names at once)."""
    with st.expander("Grade names"), st.form("grade-names"):
        st.caption(
            "What annotators read on the grade buttons (each grade keeps its number and key). "
            "Renaming changes no judgment."
        )
        # One full-width field per grade: side by side, a name of MAX_LABEL_CHARS was cut off in its box.
        names = {
            g: st.text_input(
                f"Grade {g}", value=label, key=f"grade-name-{project.name}-{g}", max_chars=projects.MAX_LABEL_CHARS
            )
            for g, label in project.labels.items()
        }
        if st.form_submit_button("Save grade names"):
            with user_errors("Not saved"):
                project = projects.set_grade_labels(engine, project.name, names, actor=user.username)
                st.success(
                    "Grade names saved: " + ", ".join(f"{g} · {views.literal(n)}" for g, n in project.labels.items())
                )
    return project


def import_section(engine: Engine, project: ProjectInfo, user: UserInfo) -> None:
    """Import queries, fragments, a run or judgments, with the file's annotators for judgments."""
    kind = st.radio("What", list(IMPORTERS), horizontal=True)
    st.caption(IMPORT_HELP[kind])
    upload = st.file_uploader("File", key=f"upload-{kind}")
    run_name = st.text_input("Run name", placeholder="defaults to the file name") if kind == "run" else ""
    file_kind, bad_kind, source = imports.Judges(), None, imports.JudgmentsSource()
    if kind == "judgments":
        c1, c2 = st.columns(2)
        qrels_by = c1.text_input("Qrels graded by", placeholder="for TREC or BEIR qrels: their annotator, e.g. nist")
        judge_groups = c2.checkbox("Multi-judge qrels (qrels_jg): one annotator per judge group")
        gains = c2.checkbox(
            "The qrels hold gains (grade − lowest grade), as a release's TREC and BEIR qrels",
            disabled=project.scale[0] == 0,
            help="on a scale that starts at 0 gains and grades are the same",
        )
        try:
            source = imports.JudgmentsSource(
                qrels_by.strip() or None,
                "jg" if judge_groups else None,
                qrels_grades=QrelsGrades.GAINS if gains else QrelsGrades.AS_JUDGED,
            )
        except ValueError as exc:
            bad_kind = exc
            st.error(views.literal(views.for_browser(str(exc))))
        annotator_kind = st.radio(
            "The file's annotators are", [None, *ANNOTATOR_KINDS], format_func=KIND_NAMES.get, horizontal=True
        )
        if annotator_kind in (AnnotatorKind.HUMAN, AnnotatorKind.REFERENCE):
            file_kind = imports.Judges(annotator_kind)
        elif annotator_kind == "model":
            c1, c2 = st.columns(2)
            model_name = c1.text_input("Model", placeholder="defaults to each annotator's name").strip()
            prompt = c2.text_input("Prompt version", placeholder="optional, stamped on every grade").strip()
            try:
                file_kind = imports.Judges("model", model_name or None, prompt or None)
            except ValueError as exc:
                bad_kind = exc
                st.error(views.literal(exc))
    if st.button("Import", disabled=upload is None or bad_kind is not None) and upload is not None:
        with views.saved_upload(upload) as path, st.spinner(f"Importing {views.literal(upload.name)}…"):
            report: Any
            try:
                if kind == "run":
                    report = imports.import_run(
                        engine, project.name, path, name=run_name.strip() or None, actor=user.username
                    )
                elif kind == "judgments":
                    report = imports.import_judgments(
                        engine, project.name, path, actor=user.username, judges=file_kind, source=source
                    )
                else:
                    report = IMPORTERS[kind](engine, project.name, path, actor=user.username)
            except imports.ImportRejected as exc:
                st.error(f"Nothing imported: {views.literal(views.upload_error(exc, path, upload.name))}")
                views.show_import_report(exc.report, path, upload.name)
            except InputError as exc:
                st.error(f"Nothing imported: {views.literal(views.upload_error(exc, path, upload.name))}")
            else:
                views.show_import_report(report, path, upload.name)
                textless_report(report, path, upload.name)


def textless_report(report: Any, path: Path, upload_name: str) -> None:
    """What an import did about texts: the fragments it created without one (with the first ids and the lines
    that name them, so a typo'd id shows), and the waiting fragments an import of fragments filled in."""
    without = getattr(report, "without_text", None)
    if without:
        first = "; ".join(views.upload_error(Exception(e), path, upload_name) for e in without["examples"])
        more = " …" if without["count"] > len(without["examples"]) else ""
        st.warning(views.literal(f"{without['note']}. First: {first}{more}"), icon=":material/text_snippet:")
    if getattr(report, "texts_filled", 0):
        st.info(f"{report.texts_filled} fragment(s) that waited for their text have it now: assign their pairs.")


def pool_section(engine: Engine, project: ProjectInfo, user: UserInfo) -> None:
    """Pool the stored runs' top-k (and BM25) into query–fragment pairs."""
    stored = [r.name for r in evaluations.list_runs(engine, project.name)]
    with st.form("pool"):
        chosen = st.multiselect("Runs to pool", stored, default=stored)
        depth = st.number_input("Depth k (top-k of each run)", min_value=1, max_value=1000, value=10)
        bm25_mode = st.radio("BM25 over the fragment texts", BM25_MODES, horizontal=True)
        bm25_k = st.number_input("BM25 top-N for every query", min_value=1, max_value=1000, value=10)
        if st.form_submit_button("Pool"):
            bm25 = {BM25_MODES[0]: None, BM25_MODES[1]: int(bm25_k), BM25_MODES[2]: 0}[bm25_mode]
            with st.spinner("Pooling…"):
                report = pooling.pool(
                    engine, project.name, int(depth), runs=chosen or None, bm25=bm25, actor=user.username
                )
            st.success(
                f"{report.created} new pair(s); {report.existing} already pooled, {report.duplicates} "
                "same-text duplicate(s) merged."
            )
            st.json(report.to_dict(), expanded=False)


def search_pool_section(engine: Engine, project: ProjectInfo, user: UserInfo) -> None:
    """Pool a live search engine's top-k (as `qrelkit pool --search CONFIG`): every query searched, the top-k
    stored as a run with its request, then pooled."""
    st.subheader("From a live search engine")
    st.caption(
        "A JSON or TOML config naming the endpoint, the request with {query}, k and where the reply holds the "
        "hits, id, score and text (template elasticsearch, opensearch or solr fills them; docs/store.md). "
        f"Credentials come only from the server's environment ({search_client.KEY_ENV}, or "
        f"{search_client.USER_ENV} and {search_client.PASSWORD_ENV}), never from the config."
    )
    upload = st.file_uploader("Search config", type=["json", "toml"], key="search-config")
    name = st.text_input("Search run name", placeholder="defaults to the config file's name", key="search-run")
    if st.button("Search and pool", disabled=upload is None) and upload is not None:
        with (
            views.saved_upload(upload) as path,
            st.spinner(f"Searching with {views.literal(upload.name)}…"),
            user_errors("Nothing pooled"),
        ):
            try:
                report, note = search_client.pool_from_search(
                    engine, project.name, path, name.strip() or Path(upload.name).stem, actor=user.username
                )
            except USER_ERRORS as exc:  # name the uploaded file, not its temporary copy
                raise ValueError(views.upload_error(exc, path, upload.name)) from None
            found = report.search
            st.success(
                f"{found['queries']} query(ies) searched, {found['hits']} hit(s) stored as run "
                f"{views.literal(found['run'])}, {found['fragments_imported']} fragment(s) imported and "
                f"{found['texts_filled']} text(s) filled in from the replies; {report.created} new pair(s), "
                f"{report.existing} already pooled."
            )
            if note:
                st.info(views.literal(note))
            st.json(report.to_dict(), expanded=False)


def assign_section(engine: Engine, project: ProjectInfo, user: UserInfo) -> None:
    """Save the overlap policy and assign pairs; set the queue order."""
    annotators = [
        u.username for u in users.list_users(engine, role="annotator") if u.active and u.kind == AnnotatorKind.HUMAN
    ]
    with st.form("assign"):
        overlap = st.number_input("Annotators per pair", min_value=1, max_value=20, value=int(project.overlap))
        fraction = st.number_input(
            "Fraction of pairs with that overlap (the rest get one)",
            min_value=0.01,
            max_value=1.0,
            value=float(project.overlap_fraction),
            step=0.05,
        )
        who = st.multiselect("Annotators", annotators, default=annotators)
        if st.form_submit_button("Save policy and assign"):
            with st.spinner("Assigning…"):
                projects.update_policy(
                    engine, project.name, overlap=int(overlap), overlap_fraction=float(fraction), actor=user.username
                )
                report = assignment.assign(
                    engine,
                    project.name,
                    overlap=int(overlap),
                    fraction=float(fraction),
                    annotators=who or None,
                    actor=user.username,
                )
            st.success(
                f"{report.created} new assignment(s); {report.pairs_with_overlap} of {report.pairs_total} "
                f"pairs get {report.overlap} annotators."
            )
            if report.waiting_for_text:
                st.warning(
                    f"{report.waiting_for_text} pair(s) not assigned: their fragments wait for their text. Import "
                    "the texts (Import tab, Fragments), then assign again."
                )
            st.json(report.to_dict(), expanded=False)
    with st.form("queue-order"):
        order = st.selectbox(
            "Queue order (which of an annotator's pairs comes next, within the query in progress)",
            ORDER_NAMES,
            index=ORDER_NAMES.index(project.queue_order),
            format_func=ORDERS.__getitem__,
        )
        if st.form_submit_button("Save queue order") and order is not None:
            with user_errors("Not saved"):
                saved = projects.set_queue_order(engine, project.name, order, actor=user.username)
                st.success(f"Annotators now get their pairs in this order: {ORDERS[saved.queue_order]}.")


def annotators_section(engine: Engine, project: ProjectInfo, user: UserInfo) -> None:
    """The annotators' progress, adding an annotator, unlocking an account and every account."""
    stats = grading.annotator_stats(engine, project.name)
    if len(stats):
        views.table(
            views.progress_table(stats),
            PROGRESS_HEADERS,
            {"median_seconds": 1},
            width="stretch",
            column_config={
                "Progress": st.column_config.ProgressColumn("Progress", min_value=0.0, max_value=1.0, format="percent")
            },
        )
    else:
        st.info("No annotator has been assigned pairs yet.")
    with st.form("add-annotator"):
        st.markdown("**Add an annotator**")
        c1, c2 = st.columns(2)
        username = c1.text_input("Username", key="new-annotator")
        password = c2.text_input("Password", type="password", key="new-annotator-password")
        if st.form_submit_button("Add annotator"):
            with user_errors("Not added"):
                users.create_user(engine, username.strip(), "annotator", password=password or None, actor=user.username)
                st.success(f"Annotator {views.literal(username.strip())} added.")
    unlocked = st.session_state.pop(UNLOCKED_KEY, None)
    if unlocked is not None:
        st.success(f"{views.literal(unlocked)} is unlocked and can log in now.")
    locked = logins.locked_accounts(engine)  # {name: seconds}: wrong passwords, anyone's, made it wait
    if locked:
        with st.form("unlock-account"):
            st.markdown("**Locked out by wrong passwords**")
            # the label is the name alone: Streamlit keys the choice by its label, and a ticking "s left" in it
            # reset the choice to the first account between picking and Unlock (the wait is in the table below)
            who = st.selectbox("Account", list(locked))
            if st.form_submit_button("Unlock"):
                with user_errors("Not unlocked"):
                    logins.unlock(engine, who, actor=user.username)
                    st.session_state[UNLOCKED_KEY] = who
                    st.rerun()  # draw the tab again without the account: its back-off is gone
    accounts = pd.DataFrame([views.as_dict(u) for u in users.list_users(engine)], columns=list(USER_HEADERS)[:-1])
    accounts["login_wait"] = accounts["username"].map(locked).astype("Int64")
    views.table(accounts, USER_HEADERS)


def waiting_for_text(engine: Engine, project: ProjectInfo, slot: Any) -> None:
    """How many pairs wait for their fragment's text (a qrels, judgments or run import named it first), and what
    to do: nothing is served to an annotator until the text comes. Drawn into `slot` under the caption once the
    tabs ran, so an import, pool or assign of this run is counted."""
    sentence = textless.texts_waiting(engine, project.name).sentence()
    if sentence:
        slot.info(views.literal(sentence), icon=":material/text_snippet:")


def project_tabs(engine: Engine, project: ProjectInfo, user: UserInfo) -> None:
    """The project's tabs: import, pool, assign and annotators (model judges have their own page: Judges)."""
    import_tab, pool_tab, assign_tab, people_tab = st.tabs(["Import", "Pool", "Assign", "Annotators"])
    with import_tab:
        import_section(engine, project, user)
    with pool_tab:
        pool_section(engine, project, user)
        search_pool_section(engine, project, user)
    with assign_tab:
        assign_section(engine, project, user)
    with people_tab:
        annotators_section(engine, project, user)


engine, user = views.lead_page("Project")
create_project_form(engine, user)
project = views.pick_project(engine)
if project is None:
    st.stop()
st.caption(views.project_caption(project))
waiting_slot = st.empty()
project = grade_names_form(engine, project, user)
project_tabs(engine, project, user)
waiting_for_text(engine, project, waiting_slot)

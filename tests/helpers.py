"""Helpers the tests share, one definition each (no test module imports another: tests/browser/test_hygiene.py): files
written into a test's tmp_path, qrelkit's CLI run in this process, rows stored straight into the tables, the
annotator pages' small project, the seed-000 lead store of the AppTests, the demo's disputes among people and a
1–3 project. Fixtures live in tests/conftest.py; the browser tests' own helpers in tests/browser/pages.py and
tests/browser/conftest.py."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import ROOT

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Records as JSON lines (UTF-8, non-ASCII kept as typed), the shape every qrelkit importer reads."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def run(argv: list[str]) -> tuple[int, str, str]:
    """Run our commands through annotator.cli.main (its one error path: `qrelkit: error: …`, exit 2), capturing
    stdout and stderr."""
    from annotator.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


# --- Rows straight into the tables (store tests: the importers are tested elsewhere)


def seed(
    engine,
    project_id: int,
    queries: dict[str, str],
    fragments: dict[str, str],
    runs: dict[str, dict[str, list[str]]] | None = None,
) -> None:
    """Store queries, fragments and ranked runs straight into the tables (the importers are tested elsewhere)."""
    from sqlalchemy import select

    from db.store.engine import session_scope
    from db.store.models import Fragment, Query, Run, RunEntry

    with session_scope(engine, write=True) as s:
        qids = {}
        for ext, text in queries.items():
            row = Query(project_id=project_id, external_id=ext, text=text)
            s.add(row)
            s.flush()
            qids[ext] = row.id
        fids = {
            f.external_id: f.id for f in s.execute(select(Fragment).where(Fragment.project_id == project_id)).scalars()
        }
        for ext, text in fragments.items():
            row = Fragment(
                project_id=project_id,
                external_id=ext,
                text=text,
                content_hash=hashlib.sha256(text.encode()).hexdigest(),
            )
            s.add(row)
            s.flush()
            fids[ext] = row.id
        for name, ranking in (runs or {}).items():
            run = Run(project_id=project_id, name=name, content_hash=name, n_lines=sum(map(len, ranking.values())))
            s.add(run)
            s.flush()
            for qext, docs in ranking.items():
                for rank, doc in enumerate(docs, start=1):
                    s.add(
                        RunEntry(
                            run_id=run.id,
                            query_id=qids.get(qext) or _qid(s, project_id, qext),
                            doc_external_id=doc,
                            fragment_id=fids.get(doc),
                            rank=rank,
                            score=float(100 - rank),
                        )
                    )


def _qid(session, project_id: int, ext: str) -> int:
    """Id of an already stored query."""
    from sqlalchemy import select

    from db.store.models import Query

    return session.execute(
        select(Query.id).where(Query.project_id == project_id, Query.external_id == ext)
    ).scalar_one()


def pairs_of(engine, project_id: int) -> dict[tuple[str, str], tuple[list[str], int | None]]:
    """(query ext, fragment ext) → (sources, best_rank) for every stored pair."""
    from sqlalchemy import select

    from db.store.engine import session_scope
    from db.store.models import Fragment, Pair, Query

    with session_scope(engine) as s:
        rows = s.execute(
            select(Query.external_id, Fragment.external_id, Pair.sources, Pair.best_rank)
            .join(Query, Query.id == Pair.query_id)
            .join(Fragment, Fragment.id == Pair.fragment_id)
            .where(Pair.project_id == project_id)
        ).all()
    return {(q, f): (src, rank) for q, f, src, rank in rows}


def judge(
    engine,
    project_id: int,
    grades: dict[tuple[str, str], dict[str, int | None]],
    adjudications: dict[tuple[str, str], tuple[int, str, str]] | None = None,
) -> None:
    """Store judgments (and lead adjudications) for existing queries/fragments, creating users and pairs."""
    from sqlalchemy import select, update

    from db.store.engine import session_scope
    from db.store.models import Adjudication, Fragment, Judgment, Pair, Query, User

    with session_scope(engine, write=True) as s:

        def user(name: str, role: str = "annotator") -> int:
            uid = s.execute(select(User.id).where(User.username == name)).scalar()
            if uid is None:
                row = User(username=name, role=role)
                s.add(row)
                s.flush()
                uid = row.id
            return uid

        def pair(q: str, f: str) -> int:
            qid = s.execute(select(Query.id).where(Query.project_id == project_id, Query.external_id == q)).scalar_one()
            fid = s.execute(
                select(Fragment.id).where(Fragment.project_id == project_id, Fragment.external_id == f)
            ).scalar_one()
            pid = s.execute(select(Pair.id).where(Pair.query_id == qid, Pair.fragment_id == fid)).scalar()
            if pid is None:
                row = Pair(project_id=project_id, query_id=qid, fragment_id=fid)
                s.add(row)
                s.flush()
                pid = row.id
            return pid

        for (q, f), by in grades.items():
            pid = pair(q, f)
            for name, grade in by.items():
                uid = user(name)
                old = s.execute(select(Judgment).where(Judgment.pair_id == pid, Judgment.user_id == uid)).scalar()
                if old is None:
                    s.add(
                        Judgment(
                            project_id=project_id,
                            pair_id=pid,
                            user_id=uid,
                            grade=grade,
                            cant_judge_reason=None if grade is not None else "unreadable",
                        )
                    )
                else:
                    s.execute(update(Judgment).where(Judgment.id == old.id).values(grade=grade))
        for (q, f), (grade, reason, lead) in (adjudications or {}).items():
            s.add(
                Adjudication(
                    project_id=project_id, pair_id=pair(q, f), grade=grade, reason=reason, user_id=user(lead, "lead")
                )
            )


# --- The app's scripts for AppTest, and the annotator pages' small project (test_app_annotator and the pages
#     next to it)

APP = str(ROOT / "annotator" / "app" / "main.py")
PAGES = ROOT / "annotator" / "app" / "screens"
SCRIPT = "<script>alert(1)</script>"
GUIDELINE = "# Tiny guideline\n\n3 answers fully; 2 partially; 1 mentions; 0 not relevant.\n"
FRAGMENTS = [
    {
        "id": "f1",
        "doc_id": "manual-devoluciones",
        "title": "Devoluciones",
        "text": f"Plazo de 30 días. {SCRIPT} **no negrita** <b>x</b>",
    },
    {"id": "f2", "title": "Envíos", "text": "Envíos en 24 horas."},
    {"id": "f3", "title": "Pagos", "text": "Pago con tarjeta."},
    {"id": "f4", "title": "Garantía", "text": "Dos años de garantía."},
]


def password(username: str) -> str:
    """Each test account's password (long enough for any password policy)."""
    return f"{username}-password"


def build(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    scale: tuple[int, int] = (0, 3),
    labels: dict[int, str] | None = None,
    url: str | None = None,
) -> str:
    """A small project built through the store: 2 queries × 3 fragments, both annotators on every pair; in `url`
    (default: a SQLite file in tmp_path), which the app is pointed at."""
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.assignment import assign
    from db.imports import import_fragments, import_queries, import_run
    from db.pooling import pool
    from db.projects import add_guideline, create_project
    from db.store.schema import init_db

    url = url or f"sqlite:///{tmp_path / 'app.db'}"
    engine = init_db(url)
    for username, role in (("ana", "annotator"), ("ben", "annotator"), ("lea", "lead")):
        create_user(engine, username, role, password(username), actor=OPERATOR)
    create_project(engine, "t", scale=scale, overlap=2, labels=labels, actor=OPERATOR)
    add_guideline(engine, "t", GUIDELINE, actor="lea")
    import_queries(
        engine,
        "t",
        write_jsonl(
            tmp_path / "q.jsonl",
            [
                {"id": "qa", "text": "plazo de devolución **internacional**"},
                {"id": "qb", "text": "garantía de portátiles"},
            ],
        ),
        actor=OPERATOR,
    )
    import_fragments(engine, "t", write_jsonl(tmp_path / "f.jsonl", FRAGMENTS), actor=OPERATOR)
    (tmp_path / "r.run").write_text(
        "".join(
            f"{q} Q0 {d} {i} {10 - i} r\n"
            for q, docs in (("qa", "f1 f2 f3"), ("qb", "f4 f2 f3"))
            for i, d in enumerate(docs.split(), 1)
        )
    )
    import_run(engine, "t", tmp_path / "r.run", name="r", actor=OPERATOR)
    pool(engine, "t", depth=10, actor=OPERATOR)
    assign(engine, "t", overlap=2, annotators=["ana", "ben"], actor=OPERATOR)
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    monkeypatch.setenv("QRELKIT_PROJECT", "t")
    return url


def logged_in(at: AppTest, username: str, url: str) -> AppTest:
    """Put a store-issued login session for `username` (password checked) into the app, as the form does."""
    from annotator.app.auth import TOKEN_KEY
    from db.accounts.sessions import create_session
    from db.accounts.users import authenticate
    from db.store.schema import init_db

    engine = init_db(url)
    user = authenticate(engine, username, password(username))
    at.session_state[TOKEN_KEY] = create_session(engine, user.id, client="apptest").token
    return at


def app_as(username: str | None, url: str) -> AppTest:
    """The app after one run, logged in as `username` (None = nobody)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=30)
    return (at if username is None else logged_in(at, username, url)).run()


# --- The seed-000 lead store (test_app_lead and the lead pages' AppTests; its fixtures, `template` and `store`,
#     are in tests/conftest.py)

PROJECT = "shop"
# Seed 000 (and DESIGN.md's worked example): the international-returns query, fragments d1…d20, graded
# R = {d3: 3, d7: 2, d12: 2, d20: 1}, the rest 0; the run ranks d5 d7 d11 d3 d2 d20 d9 d14 d1 d6.
SEED_GRADES = {f"d{i}": 0 for i in range(1, 21)} | {"d3": 3, "d7": 2, "d12": 2, "d20": 1}
SEED_RANKING = ["d5", "d7", "d11", "d3", "d2", "d20", "d9", "d14", "d1", "d6"]
DENSE_RANKING = [
    "d3",
    "d12",
    "d7",
    "d20",
    "d4",
    "d8",
    "d10",
    "d13",
    "d15",
    "d16",
    "d17",
    "d18",
    "d19",
    "d1",
    "d2",
    "d5",
    "d6",
    "d9",
    "d11",
    "d14",
]
# d21 and d22 are never pooled: a run with them in its top 10 has judged@10 = 0.8 and holes to send.
FRESH_RANKING = ["d21", "d22", "d3", "d7", "d12", "d20", "d1", "d2", "d4", "d5"]
SCRIPT_TEXT = "<script>alert('x')</script> Returns: see the table"
GUIDELINE_V1 = "# Grading\n\n3 answers fully.\n2 answers partially.\n1 related.\n0 not relevant.\n"
GUIDELINE_V2 = GUIDELINE_V1.replace("2 answers partially.", "2 answers partially or gives essential context.")


def ben_grade(grade: int) -> int:
    """The lenient annotator: one grade above ana, capped at the top (so the lower median is ana's grade)."""
    return min(grade + 1, 3)


def write_run(path: Path, ranking: list[str], tag: str) -> Path:
    """A TREC run for query q000 with strictly decreasing scores."""
    path.write_text("".join(f"q000 Q0 {d} {i + 1} {100 - i}.0 {tag}\n" for i, d in enumerate(ranking)))
    return path


def build_store(url: str, folder: Path | None = None) -> None:
    """Seed 000's query judged by two annotators under guideline v1 (v2 added after), two pooled runs and
    one unpooled run, written through the store's own operations; its input files go to `folder` (default: the
    SQLite file's own)."""
    from db import assignment, grading, imports, pooling, projects
    from db.accounts import users
    from db.accounts.permissions import OPERATOR
    from db.store.schema import init_db

    engine = init_db(url)
    folder = folder or Path(url.removeprefix("sqlite:///")).parent
    users.create_user(engine, "lea", "lead", password="lead-pass", actor=OPERATOR)
    users.create_user(engine, "ana", "annotator", password="ana-pass", actor=OPERATOR)
    users.create_user(engine, "ben", "annotator", password="ben-pass", actor=OPERATOR)
    projects.create_project(engine, PROJECT, actor=OPERATOR)
    projects.add_guideline(engine, PROJECT, GUIDELINE_V1, actor="lea")
    imports.import_queries(
        engine,
        PROJECT,
        write_jsonl(
            folder / "queries.jsonl",
            [{"id": "q000", "text": "What is the return deadline for international orders?", "category": "returns"}],
        ),
        actor=OPERATOR,
    )
    fragments = [
        {"id": d, "text": SCRIPT_TEXT if d == "d11" else f"Fragment {d} about orders."}
        for d in [*SEED_GRADES, "d21", "d22"]
    ]
    imports.import_fragments(engine, PROJECT, write_jsonl(folder / "fragments.jsonl", fragments), actor=OPERATOR)
    imports.import_run(
        engine, PROJECT, write_run(folder / "baseline.run", SEED_RANKING, "baseline"), name="baseline", actor=OPERATOR
    )
    imports.import_run(
        engine, PROJECT, write_run(folder / "dense.run", DENSE_RANKING, "dense"), name="dense", actor=OPERATOR
    )
    pooling.pool(engine, PROJECT, 20, runs=["baseline", "dense"], bm25=0, actor=OPERATOR)
    imports.import_run(
        engine, PROJECT, write_run(folder / "fresh.run", FRESH_RANKING, "fresh"), name="fresh", actor=OPERATOR
    )
    assignment.assign(engine, PROJECT, overlap=2, annotators=["ana", "ben"], actor=OPERATOR)
    for who, grade_of in (("ana", lambda g: g), ("ben", ben_grade)):
        while (pair := grading.next_pair(engine, PROJECT, who)) is not None:
            grading.record_judgment(engine, pair.pair_id, who, grade_of(SEED_GRADES[pair.fragment_external_id]))
    projects.add_guideline(engine, PROJECT, GUIDELINE_V2, actor="lea")
    engine.dispose()


def private_store(template: Path, name: str, project: str, folder: Path, monkeypatch: pytest.MonkeyPatch):
    """A copy of the SQLite store `template/name` (with its WAL files) in `folder`, the app pointed at it
    (QRELKIT_DB_URL, QRELKIT_PROJECT); its engine."""
    import shutil

    from db.store.engine import get_engine

    for part in (name, f"{name}-wal", f"{name}-shm"):
        if (template / part).exists():
            shutil.copy(template / part, folder / part)
    url = f"sqlite:///{folder / name}"
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    monkeypatch.setenv("QRELKIT_PROJECT", project)
    return get_engine(url)


def user_info(engine, username: str):
    """The store's UserInfo, as the login form puts it in the session."""
    from db.accounts import users

    return next(u for u in users.list_users(engine) if u.username == username)


def log_in(at: AppTest, engine, username: str) -> AppTest:
    """Give the AppTest session a store-issued login token, as the login form does (pages resolve it)."""
    from annotator.app.auth import TOKEN_KEY
    from db.accounts.sessions import create_session

    at.session_state[TOKEN_KEY] = create_session(engine, user_info(engine, username).id, client="apptest").token
    return at


@dataclass(frozen=True)
class AppButton:
    """A button of the app's source (st.button or st.form_submit_button, on any container): where it is, its
    label and key as written (f-strings unparsed), and how its press writes — through its on_click callback, or
    in the page body (`if st.button(...):`, `submitted = st.form_submit_button(...)`), where the press's own page
    run has resolved the session before the body reaches it."""

    path: str  # relative to the repository root
    line: int
    label: str
    key: str | None
    callback: str | None  # the on_click / on_submit expression, e.g. auth.guarded(save_grade)
    body: bool  # the press is read in the page body (its value is used)


def app_buttons() -> list[AppButton]:
    """Every st.button / st.form_submit_button under annotator/app, read from the source."""
    import ast

    found = []
    for path in sorted((ROOT / "annotator" / "app").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        discarded = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # a press nobody reads
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("button", "form_submit_button")
            ):
                continue
            keywords = {k.arg: k.value for k in node.keywords}
            label = node.args[0] if node.args else keywords["label"]
            callback = keywords.get("on_click", keywords.get("on_submit"))
            found.append(
                AppButton(
                    str(path.relative_to(ROOT)),
                    node.lineno,
                    ast.literal_eval(label) if isinstance(label, ast.Constant) else ast.unparse(label),
                    ast.unparse(keywords["key"]) if "key" in keywords else None,
                    None if callback is None else ast.unparse(callback),
                    id(node) not in discarded,
                )
            )
    return found


# Presses read in a page body that write nothing: a login by single sign-on, the end of a qualification round
# (it only leaves the round's screen), opening a dispute on the Adjudication page, and the judge-trust report.
READ_ONLY_PRESSES = {"Log in with single sign-on", "Start my regular queue →", "Adjudicate", "Measure against people"}


def label_pattern(label: str) -> re.Pattern[str]:
    """A button label as written, an f-string's fields as wildcards: f"Open {literal(r.username)}'s queue"
    matches "Open cat's queue"."""
    if not label.startswith(("f'", 'f"')):
        return re.compile(re.escape(label))
    parts = re.split(r"\{[^{}]*\}", label[2:-1])
    return re.compile(".+".join(map(re.escape, parts)))


def snapshot(engine) -> dict[str, list[tuple]]:
    """Every row of every table but the login sessions (which a revocation and each page run touch: its last
    use), in a stable order: what a write from the app changes."""
    import sqlalchemy as sa
    from sqlmodel import SQLModel

    with engine.connect() as conn:
        return {
            t.name: sorted(map(tuple, conn.execute(sa.select(t)).all()), key=repr)
            for t in SQLModel.metadata.sorted_tables
            if t.name != "sessions"
        }


def page_test(engine, page: str, username: str = "lea") -> AppTest:
    """One page run by URL (its own script) with `username` logged in."""
    from streamlit.testing.v1 import AppTest

    at = log_in(AppTest.from_file(str(PAGES / page), default_timeout=60), engine, username)
    at.session_state["project"] = PROJECT
    return at.run()


def release(engine):
    """Cut release 1 (median) directly in the store."""
    from db import releases

    return releases.create_release(engine, PROJECT, rule="median", actor="lea")


def shown(markdown: str) -> str:
    """What Markdown made by text.literal displays: the text without its escapes and without the empty
    `:small[]` (BREAK) the app puts after `:` and before `@` so nothing becomes a link."""
    from annotator.app.text import BREAK

    return re.sub(r"\\(.)", r"\1", markdown.replace(BREAK, ""))


# --- Disputes among people, as the tests count them


def human_disputes(engine) -> list[tuple[str, str, int, int]]:
    """(query, fragment, lowest grade, spread) of every pair whose people gave different grades, read straight
    from the judgments table (model judges and can't-judge left out), widest spread first: the tests' own count,
    independent of the app's queue (tests/app/test_app_seams.py with AppTest, test_seams_browser.py in a browser)."""
    import sqlalchemy as sa

    from db.store.models import Fragment, Judgment, Pair, Query, User

    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(Query.external_id, Fragment.external_id, Judgment.grade)
            .select_from(Judgment)
            .join(Pair, Pair.id == Judgment.pair_id)
            .join(Query, Query.id == Pair.query_id)
            .join(Fragment, Fragment.id == Pair.fragment_id)
            .join(User, User.id == Judgment.user_id)
            .where(User.kind == "human", Judgment.grade.is_not(None))
        ).all()
    grades: dict[tuple[str, str], list[int]] = {}
    for q, f, g in rows:
        grades.setdefault((q, f), []).append(g)
    return sorted(
        ((q, f, min(g), max(g) - min(g)) for (q, f), g in grades.items() if max(g) > min(g)), key=lambda row: -row[3]
    )


# --- A 1–3 project (browser/test_scale_evaluate_browser.py, test_app_seams.py): its lowest grade, "off topic",
#     is not relevant

RESULTS_LEAD = ("lea", "lea-results-pass")  # its lead (and test_results_browser's): open_lead_page logs in as it
SCALE_PROJECT = "tienda 1-3"
SCALE_QUERIES = [f"q{i}" for i in range(1, 5)]


def build_scale_project(db_url: str, folder: Path) -> None:
    """Four queries × six fragments on a 1–3 scale graded by two annotators (seeded), one run over them all,
    release 1 cut by the lead."""
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.imports import import_fragments, import_judgments, import_queries, import_run
    from db.projects import create_project
    from db.releases import create_release
    from db.store.schema import init_db

    rng = random.Random(1_3)
    engine = init_db(db_url)
    create_user(engine, RESULTS_LEAD[0], "lead", password=RESULTS_LEAD[1], actor=OPERATOR)
    create_project(engine, SCALE_PROJECT, scale=(1, 3), actor=OPERATOR)
    docs = {q: [f"{q}-d{j}" for j in range(6)] for q in SCALE_QUERIES}

    import_queries(
        engine,
        SCALE_PROJECT,
        write_jsonl(folder / "q.jsonl", [{"id": q, "text": f"pregunta {q}"} for q in SCALE_QUERIES]),
        actor=OPERATOR,
    )
    import_fragments(
        engine,
        SCALE_PROJECT,
        write_jsonl(folder / "f.jsonl", [{"id": d, "text": f"texto {d}"} for ds in docs.values() for d in ds]),
        actor=OPERATOR,
    )
    judged = [
        {"query_id": q, "fragment_id": d, "annotator": who, "grade": grade}
        for q, ds in docs.items()
        for d in ds
        for grade in [rng.choice((1, 1, 2, 3))]
        for who in ("ann", "bob")
    ]
    import_judgments(engine, SCALE_PROJECT, write_jsonl(folder / "j.jsonl", judged), actor=OPERATOR)
    lines = []
    for q, ds in docs.items():
        ranking = ds[:]
        rng.shuffle(ranking)
        lines += [f"{q} Q0 {d} {r} {10 - r}.5 bm25\n" for r, d in enumerate(ranking, start=1)]
    (folder / "bm25.run").write_text("".join(lines), encoding="utf-8")
    import_run(engine, SCALE_PROJECT, folder / "bm25.run", name="bm25", actor=OPERATOR)
    create_release(engine, SCALE_PROJECT, actor=RESULTS_LEAD[0])
    engine.dispose()


def trust_collection(queries: int = 30, runs: int = 6, seed: int = 7) -> tuple[dict, dict[str, dict]]:
    """People's grades and runs built so each run's quality is known: run i retrieves its own ten fragments per
    query (`q{n}-r{i}-{k}`, score 10 − k), each relevant with a probability falling with i, graded 1–3 when
    relevant. Returns (qrels {qid: {doc: grade}}, {run name: {qid: {doc: score}}})."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run_dicts: dict[str, dict] = {f"r{i}": {} for i in range(runs)}
    for q in range(queries):
        qid = f"q{q}"
        qrels[qid] = {}
        for i in range(runs):
            run_dicts[f"r{i}"][qid] = {}
            for k in range(10):
                doc = f"{qid}-r{i}-{k}"
                relevant = rng.random() < 0.85 - 0.12 * i
                qrels[qid][doc] = rng.randint(1, 3) if relevant else 0
                run_dicts[f"r{i}"][qid][doc] = float(10 - k)
    return qrels, run_dicts


def lenient(qrels: dict) -> dict:
    """A lenient judge: every grade one up, 3 stays 3."""
    return {q: {d: min(3, g + 1) for d, g in docs.items()} for q, docs in qrels.items()}


def swapping(qrels: dict, a: str, b: str) -> dict:
    """A judge that swaps runs `a` and `b`: it gives run a's k-th fragment of each query the grade people gave run
    b's k-th fragment, and the reverse (every other grade as people's)."""
    out = {q: dict(docs) for q, docs in qrels.items()}
    for q, docs in qrels.items():
        for k in range(10):
            da, db = f"{q}-{a}-{k}", f"{q}-{b}-{k}"
            out[q][da], out[q][db] = docs[db], docs[da]
    return out


def write_trec_qrels(path: Path, qrels: dict) -> Path:
    """{qid: {doc: grade}} as TREC qrels."""
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return path


def write_trec_run(path: Path, run: dict, tag: str = "t") -> Path:
    """{qid: {doc: score}} as a TREC run."""
    lines = []
    for q, docs in run.items():
        for rank, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), start=1):
            lines.append(f"{q} Q0 {d} {rank} {s} {tag}\n")
    path.write_text("".join(lines))
    return path

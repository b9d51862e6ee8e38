"""Every write a lead page makes — in its body (a form's submit button, an `if st.button(...)`) or through a
guarded callback (the Controls page's queue buttons) — writes nothing once the tab's session was revoked or the
account deactivated between the page's render and the click: the click's run resolves the session first
(views.lead_page, or auth.guarded inside a callback), so its rerun shows the login form with the one sentence
of auth.SESSION_ENDED and the write never runs. Each action also has a "live" case: the same fill-in and click
from a live session does change the store, so a case that wrote nothing for another reason would fail. Every
case runs on SQLite and, marked `postgres`, on PostgreSQL (a schema of its own, the same store built in it).

WRITES is checked against the pages' source: every button of a lead page or component that writes has its
case (test_every_write_of_the_lead_pages_has_a_case)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from annotator.app.auth import SESSION_ENDED, TOKEN_KEY
from db import adjudication, imports
from db.accounts.permissions import OPERATOR
from db.accounts.sessions import revoke
from db.accounts.users import create_user, deactivate
from db.control import add_control
from db.qualification import grade_round_pair, round_for, round_pairs, set_qualification
from db.store.frames import pair_id
from db.store.models import LoginAttempt, utcnow
from eval_core.vocab import ORDER_NAMES
from tests.conftest import pg_schema
from tests.fake_judge import OK, FakeJudge, reply
from tests.fake_search import FakeEngine, elasticsearch_reply
from tests.helpers import (
    PROJECT,
    READ_ONLY_PRESSES,
    SEED_RANKING,
    app_buttons,
    build_store,
    label_pattern,
    page_test,
    release,
    snapshot,
    write_jsonl,
)

pytestmark = pytest.mark.usefixtures("scan_components_once")  # AppTest: scan for components once


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def text_input(at: AppTest, label: str):
    return next(t for t in at.text_input if t.label == label)


def nothing(at: AppTest, env: SimpleNamespace) -> None:
    """The page as rendered is all the action needs before the click."""


def nothing_stored(engine) -> None:
    """The seed-000 store as it is is what the form needs."""


# --- The store each action needs before the page is opened


def locked_ana(engine) -> None:
    """Nine failed logins of ana just now, from nine clients: her account waits (the Unlock form appears)."""
    with engine.begin() as conn:
        conn.execute(
            sa.insert(LoginAttempt),
            [
                {"username": "ana", "client": f"10.7.0.{i}", "succeeded": False, "attempted_at": utcnow()}
                for i in range(9)
            ],
        )


SETTLED = {"d3": 3, "d7": 2, "d1": 0, "d12": 2, "d20": 1, "d2": 0}


def controls(engine) -> None:
    """Six control pairs, each with its settled grade."""
    for fragment, grade in SETTLED.items():
        add_control(engine, PROJECT, "q000", fragment, grade, f"settled {fragment}", actor=OPERATOR)


def cat_failed_a_round(engine) -> None:
    """Six controls, a round of 3, and cat graded each at the other end of the scale: failed, waiting for a
    lead (who may open the queue or grant a retake)."""
    controls(engine)
    set_qualification(engine, PROJECT, 3, actor=OPERATOR)
    create_user(engine, "cat", "annotator", password="cat-pass", actor=OPERATOR)
    round_for(engine, PROJECT, "cat")
    for pair in round_pairs(engine, PROJECT, "cat"):
        grade_round_pair(engine, PROJECT, "cat", pair.pair_id, 3 - SETTLED[pair.fragment_external_id])


def adjudicated_release(engine) -> None:
    """d3 adjudicated 3, then release 1 cut: a release with an adjudicated pair to make a control pair of."""
    adjudication.adjudicate(engine, pair_id(engine, PROJECT, "q000", "d3"), 3, "states the deadline", actor="lea")
    release(engine)


def model_graded_alone(engine) -> None:
    """A model judge, gpt, graded d3 and d7 (which people graded too) and d21 and d22 (which nobody else did):
    two grades for post-editing."""
    grades = [("d3", 3), ("d7", 1), ("d21", 2), ("d22", 0)]
    lines = [{"query_id": "q000", "fragment_id": d, "annotator": "gpt", "grade": g} for d, g in grades]
    with tempfile.TemporaryDirectory() as folder:
        imports.import_judgments(
            engine,
            PROJECT,
            write_jsonl(Path(folder) / "gpt.jsonl", lines),
            actor=OPERATOR,
            judges=imports.Judges("model"),
        )


# --- What the tab shows before the session ends (ready), and the fill-in and click after (press)


def create_project(at: AppTest, env: SimpleNamespace) -> None:
    text_input(at, "Name").input("second")
    button(at, "Create project").click().run()


def grade_names(at: AppTest, env: SimpleNamespace) -> None:
    text_input(at, "Grade 2").input("Mostly answers")
    button(at, "Save grade names").click().run()


UPLOADS = {
    "queries": ("queries.jsonl", b'{"id": "q9", "text": "Can I change the delivery address?"}\n'),
    "fragments": ("fragments.jsonl", b'{"id": "d30", "text": "Addresses can change until shipping."}\n'),
    "run": ("up.run", "".join(f"q000 Q0 {d} {i + 1} {10 - i} up\n" for i, d in enumerate(SEED_RANKING)).encode()),
    "judgments": ("nist.qrels", b"q000 0 d3 3\nq000 0 d5 0\n"),
}


def uploaded(kind: str) -> Callable[[AppTest, SimpleNamespace], None]:
    """Pick the kind and put its file in the uploader (judgments: TREC qrels graded by nist)."""

    def ready(at: AppTest, env: SimpleNamespace) -> None:
        at.radio[0].set_value(kind).run()
        if kind == "judgments":
            text_input(at, "Qrels graded by").input("nist").run()
        name, body = UPLOADS[kind]
        at.file_uploader(key=f"upload-{kind}").set_value((name, body, "text/plain")).run()

    return ready


def import_file(at: AppTest, env: SimpleNamespace) -> None:
    button(at, "Import").click().run()


def pool(at: AppTest, env: SimpleNamespace) -> None:
    next(n for n in at.number_input if n.label.startswith("Depth k")).set_value(20)
    next(m for m in at.multiselect if m.label == "Runs to pool").set_value(["baseline", "dense", "fresh"])
    button(at, "Pool").click().run()


def search_config(at: AppTest, env: SimpleNamespace) -> None:
    config = {"template": "elasticsearch", "url": f"{env.search}/shop/_search", "k": 2}
    at.file_uploader(key="search-config").set_value(("live.json", json.dumps(config).encode(), "application/json"))
    at.run()


def search_and_pool(at: AppTest, env: SimpleNamespace) -> None:
    button(at, "Search and pool").click().run()


def queue_order(at: AppTest, env: SimpleNamespace) -> None:
    picker = next(s for s in at.selectbox if s.label.startswith("Queue order"))
    picker.set_value(next(o for o in ORDER_NAMES if o != picker.value))
    button(at, "Save queue order").click().run()


def add_annotator(at: AppTest, env: SimpleNamespace) -> None:
    text_input(at, "Username").input("newcomer")
    button(at, "Add annotator").click().run()


def assign(at: AppTest, env: SimpleNamespace) -> None:
    [n for n in at.number_input if n.label == "Annotators per pair"][-1].set_value(1)  # the first: a new project's
    button(at, "Save policy and assign").click().run()


def unlock(at: AppTest, env: SimpleNamespace) -> None:
    button(at, "Unlock").click().run()


def prejudge(at: AppTest, env: SimpleNamespace) -> None:
    text_input(at, "Endpoint base URL").input(env.judge)
    text_input(at, "Model").input("tiny-judge")
    next(n for n in at.number_input if n.label.startswith("First N pairs")).set_value(1)
    button(at, "Grade with the model").click().run()


def post_edit(at: AppTest, env: SimpleNamespace) -> None:
    next(m for m in at.multiselect if m.label == "Send to").set_value(["ana"])
    button(at, "Send for post-editing").click().run()


def guideline(at: AppTest, env: SimpleNamespace) -> None:
    next(t for t in at.text_area if t.label == "Guideline (Markdown)").input("# New rules\n\nGrade 3: answers it.")
    button(at, "Save as new version").click().run()


def send_back(at: AppTest, env: SimpleNamespace) -> None:
    button(at, "Send back for re-judging").click().run()


def release_form(at: AppTest, env: SimpleNamespace) -> None:
    button(at, "Create release").click().run()


def adjudicate(at: AppTest, env: SimpleNamespace) -> None:
    at.radio[0].set_value(2)
    next(t for t in at.text_area if t.label == "Reason").input("Partial answer: the deadline only")
    button(at, "Save final grade").click().run()


def fresh_run(at: AppTest, env: SimpleNamespace) -> None:
    """The Evaluate page on run fresh, whose top 10 has two unpooled fragments (a Send button for them)."""
    at.selectbox[0].set_value("fresh").run()


def send_holes(at: AppTest, env: SimpleNamespace) -> None:
    button(at, "Send the 2 unjudged pairs to annotation").click().run()


def controls_from_release(at: AppTest, env: SimpleNamespace) -> None:
    button(at, "Make control pairs").click().run()


def control_by_hand(at: AppTest, env: SimpleNamespace) -> None:
    text_input(at, "Query id").input("q000")
    text_input(at, "Fragment id").input("d3")
    next(t for t in at.text_area if t.label.startswith("Reason")).input("it states the policy")
    button(at, "Add control pair").click().run()


def qualification_round(at: AppTest, env: SimpleNamespace) -> None:
    next(n for n in at.number_input if n.label.startswith("Control pairs in the round")).set_value(2)
    button(at, "Save qualification round").click().run()


def open_queue(at: AppTest, env: SimpleNamespace) -> None:
    at.button(key="open-queue-cat").click().run()


def grant_retake(at: AppTest, env: SimpleNamespace) -> None:
    at.button(key="retake-cat").click().run()


def close_queue(at: AppTest, env: SimpleNamespace) -> None:
    at.selectbox(key="close-queue-who").set_value("ana")
    at.text_area(key="close-queue-reason").input("off-topic grades")
    button(at, "Close the queue").click().run()


@dataclass(frozen=True)
class Write:
    """One write of a lead page: the page, the button that makes it (gone once the page stops at the login
    form), the click with what it needs filled in, what the tab shows before the session ends, and the store
    the page needs."""

    page: str
    label: str
    press: Callable[[AppTest, SimpleNamespace], None]
    ready: Callable[[AppTest, SimpleNamespace], None] = nothing
    setup: Callable[[object], None] = field(default=nothing_stored)


WRITES: dict[str, Write] = {
    "create project": Write("lead_project.py", "Create project", create_project),
    "grade names": Write("lead_project.py", "Save grade names", grade_names),
    **{
        f"import {kind}": Write("lead_project.py", "Import", import_file, ready=uploaded(kind))
        for kind in ("queries", "fragments", "run", "judgments")
    },
    "pool": Write("lead_project.py", "Pool", pool),
    "search and pool": Write("lead_project.py", "Search and pool", search_and_pool, ready=search_config),
    "queue order": Write("lead_project.py", "Save queue order", queue_order),
    "assign": Write("lead_project.py", "Save policy and assign", assign),
    "add annotator": Write("lead_project.py", "Add annotator", add_annotator),
    "unlock": Write("lead_project.py", "Unlock", unlock, setup=locked_ana),
    "prejudge": Write("lead_judges.py", "Grade with the model", prejudge),
    "send for post-editing": Write("lead_judges.py", "Send for post-editing", post_edit, setup=model_graded_alone),
    "save guideline": Write("lead_guidelines.py", "Save as new version", guideline),
    "send back for re-judging": Write("lead_guidelines.py", "Send back for re-judging", send_back),
    "create release": Write("lead_releases.py", "Create release", release_form),
    "adjudicate": Write("lead_adjudicate.py", "Save final grade", adjudicate),
    "send holes": Write(
        "lead_evaluate.py", "Send the 2 unjudged pairs to annotation", send_holes, ready=fresh_run, setup=release
    ),
    "controls from release": Write(
        "lead_controls.py", "Make control pairs", controls_from_release, setup=adjudicated_release
    ),
    "add control pair": Write("lead_controls.py", "Add control pair", control_by_hand),
    "qualification round": Write("lead_controls.py", "Save qualification round", qualification_round, setup=controls),
    "open queue": Write("lead_controls.py", "Open cat's queue", open_queue, setup=cat_failed_a_round),
    "grant retake": Write("lead_controls.py", "Grant cat a retake", grant_retake, setup=cat_failed_a_round),
    "close queue": Write("lead_controls.py", "Close the queue", close_queue),
}


@pytest.fixture(scope="module")
def env() -> Iterator[SimpleNamespace]:
    """A model judge that grades every pair 1 and a search engine that finds d3 and d99 (with its text)."""
    judge = FakeJudge(lambda h: reply(h, 200, OK))
    search = FakeEngine(lambda request: (200, elasticsearch_reply([("d3", 9.0, "kept"), ("d99", 8.0, "Abroad.")])))
    yield SimpleNamespace(judge=judge.url, search=search.root)
    judge.close()
    search.close()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def lead_store(request, tmp_path, monkeypatch) -> Iterator[object]:
    """The seed-000 lead store the app is pointed at: conftest's SQLite copy, or the same store built through
    the store's operations in a PostgreSQL schema of its own (dropped afterwards)."""
    if request.param == "sqlite":
        yield request.getfixturevalue("store")
        return
    from db.store.engine import get_engine

    url, drop = pg_schema(request.getfixturevalue("pg_url"))
    build_store(url, folder=tmp_path)
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    monkeypatch.setenv("QRELKIT_PROJECT", PROJECT)
    engine = get_engine(url)
    yield engine
    engine.dispose()
    get_engine.cache_clear()
    drop()


@pytest.mark.parametrize("end", ["revoked", "deactivated", "live"])
@pytest.mark.parametrize("action", list(WRITES))
def test_a_lead_page_write_from_an_ended_session_writes_nothing(lead_store, env, action, end) -> None:
    store = lead_store
    write = WRITES[action]
    write.setup(store)
    at = page_test(store, write.page)
    write.ready(at, env)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(b.label == write.label for b in at.button), f"{write.label} is not on the page"
    if end == "revoked":
        revoke(store, at.session_state[TOKEN_KEY])
    elif end == "deactivated":
        deactivate(store, "lea", actor=OPERATOR)
    before = snapshot(store)
    write.press(at, env)  # the tab still shows the form: fill it in and press
    assert not at.exception and not at.error, [e.value for e in at.error]
    if end == "live":  # the same click from a live session does write: the case can fail
        assert snapshot(store) != before, f"{action} from a live session changed nothing: the case proves nothing"
        return
    assert snapshot(store) == before, f"{action} wrote from a {end} session"
    assert not [b for b in at.button if b.label == write.label], "the page body ran after the session ended"
    assert [i.value for i in at.info] == [SESSION_ENDED]  # the login form says why, in one sentence
    assert any(b.label == "Log in" for b in at.button)


def test_every_write_of_the_lead_pages_has_a_case() -> None:
    """Each button of the lead pages and their components that writes — read in the page body, or wired to a
    guarded callback — has a case above (the four import kinds share the one Import button), and each case's
    button is exactly one button of the source."""
    writes = [
        b
        for b in app_buttons()
        if "/screens/lead_" in b.path or "/components/" in b.path
        if (b.body or (b.callback or "").startswith("auth.guarded")) and b.label not in READ_ONLY_PRESSES
    ]
    uncovered = [
        f"{b.path}:{b.line}: {b.label}"
        for b in writes
        if not any(label_pattern(b.label).fullmatch(w.label) for w in WRITES.values())
    ]
    assert uncovered == []
    buttons = {case: [b for b in writes if label_pattern(b.label).fullmatch(w.label)] for case, w in WRITES.items()}
    assert {case: len(found) for case, found in buttons.items() if len(found) != 1} == {}

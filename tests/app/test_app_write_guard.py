"""One guard for every write from the app (auth.guarded): after the tab's session was revoked (logout in
another tab, a password change) or the account deactivated, no button of the Annotate page writes anything —
grade (with its note), can't judge (with its reason), clear my grade, keep mine (two tabs), a qualification
answer — and the store itself refuses an undo by a deactivated account or behind a closed queue, as it refuses
a grade. A database out of reach inside a callback is one sentence. The ended-session cases run on SQLite and,
marked `postgres`, on PostgreSQL. The lead pages' writes: test_app_lead_revoked.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from annotator.app.auth import SESSION_ENDED, TOKEN_KEY
from db.accounts.permissions import OPERATOR
from db.accounts.sessions import revoke
from db.accounts.users import deactivate
from db.grading import get_pair, next_pair, record_judgment, undo_judgment
from db.store.models import Judgment, JudgmentHistory
from db.store.schema import init_db
from eval_core.errors import Refused
from tests.conftest import ROOT, pg_schema
from tests.helpers import READ_ONLY_PRESSES, app_as, app_buttons, build, password, snapshot


def _counts(engine) -> tuple[int, int]:
    with engine.connect() as conn:
        return (
            conn.execute(sa.select(sa.func.count()).select_from(Judgment)).scalar_one(),
            conn.execute(sa.select(sa.func.count()).select_from(JudgmentHistory)).scalar_one(),
        )


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_at(request, tmp_path):
    """Where `build` puts the project: a SQLite file in tmp_path, or a PostgreSQL schema of its own (dropped
    afterwards)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'app.db'}"
        return
    from db.store.engine import get_engine

    url, drop = pg_schema(request.getfixturevalue("pg_url"))
    yield url
    get_engine(url).dispose()
    get_engine.cache_clear()
    drop()


def _graded_app(tmp_path, monkeypatch, url: str | None = None):
    """ana graded her first pair 2 in the app, and the pair is open again on screen (Back)."""
    url = build(tmp_path, monkeypatch, url=url)
    engine = init_db(url)
    first = next_pair(engine, "t", "ana")
    at = app_as("ana", url)
    at.button(key="grade_2").click().run()
    at.button(key="back").click().run()
    assert not at.exception and get_pair(engine, "t", "ana", first.pair_id).grade == 2
    return engine, at, first


@pytest.mark.parametrize("end", ["revoked", "deactivated"])
@pytest.mark.parametrize("action", ["undo", "grade_3", "cant_judge"])
def test_an_ended_session_writes_nothing(tmp_path, monkeypatch, store_at, end, action) -> None:
    engine, at, first = _graded_app(tmp_path, monkeypatch, store_at)
    if action == "cant_judge":
        at.button(key="cant_judge_open").click().run()
        at.text_input(key=f"reason_{first.pair_id}").input("unreadable")
    before = _counts(engine)
    if end == "revoked":
        revoke(engine, at.session_state[TOKEN_KEY])
    else:
        deactivate(engine, "ana", actor=OPERATOR)
    at.button(key=action).click().run()  # the tab still shows the pair and its buttons
    assert not at.exception
    assert _counts(engine) == before  # before issue 29, "Clear my grade" deleted the judgment (294 → 293)
    assert any(b.label == "Log in" for b in at.button)  # the rerun shows the login form
    assert [i.value for i in at.info] == [SESSION_ENDED]  # and says why, in one sentence


def _end(engine, at, end: str, username: str) -> None:
    if end == "revoked":
        revoke(engine, at.session_state[TOKEN_KEY])
    elif end == "deactivated":
        deactivate(engine, username, actor=OPERATOR)


def _after(engine, at, end: str, before) -> None:
    """An ended session's click wrote nothing and the login form says why; a live one's did write."""
    assert not at.exception
    if end == "live":
        assert snapshot(engine) != before, "the click from a live session changed nothing: the case proves nothing"
        return
    assert snapshot(engine) == before
    assert any(b.label == "Log in" for b in at.button)
    assert [i.value for i in at.info] == [SESSION_ENDED]


@pytest.mark.parametrize("end", ["revoked", "deactivated", "live"])
def test_keep_mine_from_an_ended_session_writes_nothing(tmp_path, monkeypatch, store_at, end) -> None:
    """Two tabs of ana on one pair: the fresh one grades 2, the stale one presses 1 and is asked keep mine / take
    the newer; the session ends before "Keep mine"."""
    url = build(tmp_path, monkeypatch, url=store_at)
    engine = init_db(url)
    stale, fresh = app_as("ana", url), app_as("ana", url)
    fresh.button(key="grade_2").click().run()
    stale.button(key="grade_1").click().run()
    assert not stale.exception and any(b.key == "keep_mine" for b in stale.button)
    _end(engine, stale, end, "ana")
    before = snapshot(engine)
    stale.button(key="keep_mine").click().run()
    _after(engine, stale, end, before)


@pytest.mark.parametrize("end", ["revoked", "deactivated", "live"])
def test_a_qualification_answer_from_an_ended_session_writes_nothing(tmp_path, monkeypatch, store_at, end) -> None:
    """cat, new, in a round of 2 control pairs: the session ends with the first round pair on screen."""
    from db.accounts.users import create_user
    from db.assignment import assign
    from db.control import add_control
    from db.qualification import set_qualification

    url = build(tmp_path, monkeypatch, url=store_at)
    engine = init_db(url)
    add_control(engine, "t", "qa", "f1", 3, "states the 30 days", actor="lea")
    add_control(engine, "t", "qb", "f4", 2, "warranty, no laptops", actor="lea")
    create_user(engine, "cat", "annotator", password("cat"), actor=OPERATOR)
    assign(engine, "t", overlap=3, annotators=["ana", "ben", "cat"], actor=OPERATOR)
    set_qualification(engine, "t", 2, actor="lea")
    at = app_as("cat", url)
    assert not at.exception and [s.value for s in at.subheader] == ["Qualification round"]
    _end(engine, at, end, "cat")
    before = snapshot(engine)
    at.button(key="round_grade_2").click().run()
    _after(engine, at, end, before)


def test_the_store_refuses_an_undo_by_a_deactivated_account(tmp_path, monkeypatch, store_at) -> None:
    engine = init_db(build(tmp_path, monkeypatch, url=store_at))
    pair = next_pair(engine, "t", "ana")
    record_judgment(engine, pair.pair_id, "ana", 1)
    deactivate(engine, "ana", actor=OPERATOR)
    before = _counts(engine)
    with pytest.raises(Refused, match="deactivated"):
        undo_judgment(engine, pair.pair_id, "ana")
    assert _counts(engine) == before


def test_the_store_refuses_an_undo_behind_a_closed_queue(tmp_path, monkeypatch, store_at) -> None:
    from db import qualification

    engine = init_db(build(tmp_path, monkeypatch, url=store_at))
    pair = next_pair(engine, "t", "ana")
    record_judgment(engine, pair.pair_id, "ana", 1)
    qualification.close_queue(engine, "t", "ana", "off-topic grades", actor="lea")
    before = _counts(engine)
    with pytest.raises(Refused, match="closed"):
        undo_judgment(engine, pair.pair_id, "ana")
    assert _counts(engine) == before


def test_an_outage_inside_clear_my_grade_is_one_sentence_and_the_next_press_works(tmp_path, monkeypatch) -> None:
    engine, at, first = _graded_app(tmp_path, monkeypatch)
    import db.grading

    real, calls = db.grading.undo_judgment, []

    def down_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise OperationalError("DELETE FROM judgments …", {}, Exception("server closed the connection"))
        return real(*args, **kwargs)

    monkeypatch.setattr(db.grading, "undo_judgment", down_once)
    at.run()  # the page binds its callbacks afresh on every run
    at.button(key="undo").click().run()
    assert not at.exception  # before: the error escaped the button callback
    shown = [w.value for w in at.warning] + [e.value for e in at.error]
    assert len(shown) == 1 and "database did not answer" in shown[0] and "DELETE" not in shown[0], shown
    assert get_pair(engine, "t", "ana", first.pair_id).grade == 2
    at.button(key="undo").click().run()  # the next press
    assert not at.exception and get_pair(engine, "t", "ana", first.pair_id).grade is None


# Callbacks that write nothing and read nothing from the store, so need no guard.
UNGUARDED = {"show", "open_cant_judge", "_set", "auth.logout", "submit_login", "_picked", "ignore", "take_newer"}


def test_every_write_callback_of_the_pages_goes_through_the_guard() -> None:
    """Every on_click / on_change / on_submit under annotator/app is auth.guarded(...), a listed callback that
    touches no store, or a lambda that only changes st.session_state (a lambda calling anything else — a store
    write, a helper — is reported, as is a callback passed by any other name)."""
    found = []
    for path in sorted((Path(ROOT) / "annotator" / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg in ("on_click", "on_change", "on_submit"):
                value = node.value
                if isinstance(value, ast.Call) and ast.unparse(value.func) == "auth.guarded":
                    continue
                if isinstance(value, ast.Constant):  # "ignore", "rerun": no callback
                    continue
                if isinstance(value, ast.Lambda) and ast.unparse(value.body).startswith("st.session_state."):
                    continue  # a lambda that only changes this tab's state; any other lambda is reported
                name = ast.unparse(value)
                if name not in UNGUARDED:
                    found.append(f"{path.relative_to(ROOT)}:{node.value.lineno}: {name}")
    assert found == []


def _lead_screens() -> dict[str, ast.Module]:
    return {
        str(path.relative_to(ROOT)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted((Path(ROOT) / "annotator" / "app" / "screens").glob("lead_*.py"))
    }


def _page_run_starts_with_the_lead_check(tree: ast.Module) -> bool:
    """The module's page code (what follows its last import or definition) begins with `… = views.lead_page(…)`."""
    definitions = (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    last_def = max(i for i, node in enumerate(tree.body) if isinstance(node, definitions))
    first = tree.body[last_def + 1]
    return isinstance(first, ast.Assign) and ast.unparse(first.value).startswith("views.lead_page(")


def test_every_write_read_in_a_page_body_runs_after_the_pages_session_check() -> None:
    """A press read in the page body (`if st.button(...):`, `submitted = st.form_submit_button(...)`) writes in
    the press's own page run, after the run's first act resolved the session (views.lead_page: an ended session
    stops at the login form, another role at "Not allowed"). So every such write is on a lead page whose page
    code starts with that check, or in a component only lead pages draw; and none sits where a fragment's rerun
    would skip the check (no st.fragment in those modules). The rest of the presses read in a body write
    nothing (READ_ONLY_PRESSES); every callback goes through auth.guarded (the test above)."""
    screens = _lead_screens()
    assert screens and [path for path, tree in screens.items() if not _page_run_starts_with_the_lead_check(tree)] == []
    drawn_by: dict[str, set[str]] = {}  # component module → the screens that import it
    for path in sorted((Path(ROOT) / "annotator" / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "annotator.app.components":
                for alias in node.names:
                    drawn_by.setdefault(f"annotator/app/components/{alias.name}.py", set()).add(
                        str(path.relative_to(ROOT))
                    )
    wrong = []
    for press in app_buttons():
        if not press.body or press.label in READ_ONLY_PRESSES:
            continue
        where = f"{press.path}:{press.line}: {press.label}"
        if press.callback is not None:
            wrong.append(f"{where}: read in the body and wired to a callback")
        elif press.path not in screens and not (drawn_by.get(press.path) and drawn_by[press.path] <= set(screens)):
            wrong.append(f"{where}: not on a lead page (nor in a component only lead pages draw)")
        elif "st.fragment" in (Path(ROOT) / press.path).read_text(encoding="utf-8"):
            wrong.append(f"{where}: in a module with a fragment, whose reruns skip the page's session check")
    assert wrong == []


# The Annotate page's guarded buttons (by key, as written) and the case that presses each after the session ended.
ANNOTATE_CASES = {
    "f'grade_{grade}'": "test_an_ended_session_writes_nothing[grade_3-*]",
    "'cant_judge'": "test_an_ended_session_writes_nothing[cant_judge-*]",
    "'undo'": "test_an_ended_session_writes_nothing[undo-*]",
    "'keep_mine'": "test_keep_mine_from_an_ended_session_writes_nothing",
    "f'round_grade_{grade}'": "test_a_qualification_answer_from_an_ended_session_writes_nothing",
    "'back'": "none: go_back only reads the queue (previous_pair)",
}


def test_every_guarded_button_of_the_annotate_page_has_a_case() -> None:
    guarded = {
        b.key for b in app_buttons() if b.path.endswith("annotate.py") and (b.callback or "").startswith("auth.")
    }
    assert guarded == set(ANNOTATE_CASES)

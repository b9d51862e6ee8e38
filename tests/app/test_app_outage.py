"""The Annotate page through a database outage (AppTest): a grade that cannot be stored even after the store's
retry is one sentence, not Streamlit's error page, and the next key press grades as usual; nothing is doubled."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError

from db.grading import get_pair, next_pair, progress
from db.store.engine import retry_once
from db.store.schema import init_db
from tests.helpers import app_as, build


def test_a_grade_during_an_outage_is_one_sentence_and_the_next_key_press_saves(tmp_path, monkeypatch) -> None:
    url = build(tmp_path, monkeypatch)
    engine = init_db(url)
    first = next_pair(engine, "t", "ana")
    import db.grading

    real, calls = db.grading.record_judgment.__wrapped__, []

    @retry_once
    def down_twice(*args, **kwargs):
        calls.append(args)
        if len(calls) <= 2:  # the server is still restarting when the store retries
            raise OperationalError(
                "INSERT INTO judgments (grade, note) VALUES (2, 'secret')",
                {},
                Exception("server closed the connection"),
                connection_invalidated=True,
            )
        return real(*args, **kwargs)

    monkeypatch.setattr("db.grading.record_judgment", down_twice)
    at = app_as("ana", url)
    at.button(key="grade_2").click().run()
    assert not at.exception
    shown = [w.value for w in at.warning] + [e.value for e in at.error]
    assert len(shown) == 1 and "database did not answer" in shown[0] and "INSERT" not in shown[0], shown
    assert progress(engine, "t", "ana").done == 0
    at.button(key="grade_2").click().run()  # the next key press
    assert not at.exception and not at.error and not at.warning
    assert get_pair(engine, "t", "ana", first.pair_id).grade == 2
    assert progress(engine, "t", "ana").done == 1
    assert next_pair(engine, "t", "ana").pair_id != first.pair_id


def test_a_wrong_statement_is_not_taken_for_an_outage() -> None:
    from sqlalchemy.exc import IntegrityError

    from annotator.app.errors import store_outage

    with pytest.raises(IntegrityError), store_outage():
        raise IntegrityError("INSERT …", {}, Exception("duplicate key"))


def test_a_login_while_the_database_restarts_is_one_sentence_and_the_next_try_logs_in(tmp_path, monkeypatch):
    from db.accounts import logins
    from tests.helpers import password

    url = build(tmp_path, monkeypatch)
    real, calls = logins.login, []

    def down_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise OperationalError("INSERT INTO login_attempts …", {}, Exception("connection refused"))
        return real(*args, **kwargs)

    monkeypatch.setattr(logins, "login", down_once)
    at = app_as(None, url)
    at.text_input(key="login_username").input("ana")
    at.text_input(key="login_password").input(password("ana"))
    at.button[0].click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Not logged in: the database did not answer (it may be restarting), so "
        "this was not done; what was saved is kept, try again in a moment."
    ]
    at.text_input(key="login_password").input(password("ana"))
    at.button[0].click().run()
    assert not at.exception and at.session_state["user"].username == "ana"


def test_a_full_disk_or_a_refusing_database_during_an_export_is_one_sentence(
    store_url, queue, tmp_path, capsys, monkeypatch
):
    import errno

    from annotator.cli import main

    out = str(tmp_path / "j.jsonl")
    for failure, said in (
        (OSError(errno.ENOSPC, "No space left on device", out), "the disk is full"),
        (
            OperationalError("INSERT …", {"secret": "x"}, Exception("database or disk is full")),
            "the database refused: database or disk is full",
        ),
    ):

        def fail(*args, failure=failure, **kwargs):
            raise failure

        monkeypatch.setattr("db.exports.write_atomically", fail)
        code = main(["export", "--project", "demo", "--judgments", "--format", "jsonl", "-o", out, "--db", store_url])
        err = capsys.readouterr().err
        assert code == 2 and said in err and err.count("\n") == 1 and "secret" not in err and "INSERT" not in err

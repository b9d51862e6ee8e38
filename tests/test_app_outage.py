"""The Annotate page through a database outage (AppTest): a grade that cannot be stored even after the store's
retry is one sentence, not Streamlit's error page, and the next key press grades as usual; nothing is doubled."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError

from db.judging import get_pair, next_pair, progress
from db.store.engine import retry_once
from db.store.schema import init_db
from tests.test_app_annotator import app_as, build


def test_a_grade_during_an_outage_is_one_sentence_and_the_next_key_press_saves(tmp_path, monkeypatch) -> None:
    url = build(tmp_path, monkeypatch)
    engine = init_db(url)
    first = next_pair(engine, "t", "ana")
    import db.judging

    real, calls = db.judging.record_judgment.__wrapped__, []

    @retry_once
    def down_twice(*args, **kwargs):
        calls.append(args)
        if len(calls) <= 2:  # the server is still restarting when the store retries
            raise OperationalError("INSERT INTO judgments (grade, note) VALUES (2, 'secret')", {},
                                   Exception("server closed the connection"), connection_invalidated=True)
        return real(*args, **kwargs)

    monkeypatch.setattr("db.judging.record_judgment", down_twice)
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

"""Every write a lead page makes in its body (a form's submit button, not a callback) writes nothing once the tab's
session was revoked or the account deactivated: each page run resolves the session first (views.lead_page), so
the click's rerun shows the login form and the write never runs. Each case first proves the same click, from a
live session, does change the store — so a case that wrote nothing for another reason would fail."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlmodel import SQLModel
from streamlit.testing.v1 import AppTest

from annotator.app.auth import TOKEN_KEY
from db.accounts.permissions import OPERATOR
from db.accounts.sessions import revoke
from db.accounts.users import activate, deactivate
from tests.helpers import page_test

# The tables the revocation itself and a page run touch (a session, its last use); the rest is what writes change.
VOLATILE = {"sessions", "login_attempts"}


def snapshot(engine) -> dict[str, list[tuple]]:
    """Every row of every table but the volatile ones, in a stable order."""
    with engine.connect() as conn:
        return {
            t.name: sorted(map(tuple, conn.execute(sa.select(t)).all()), key=repr)
            for t in SQLModel.metadata.sorted_tables
            if t.name not in VOLATILE
        }


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def release(at: AppTest) -> None:
    button(at, "Create release").click().run()


def guideline(at: AppTest) -> None:
    next(t for t in at.text_area if t.label == "Guideline (Markdown)").input("# New rules\n\nGrade 3: answers it.")
    button(at, "Save as new version").click().run()


def annotator(at: AppTest) -> None:
    next(t for t in at.text_input if t.label == "Username").input("newcomer")
    button(at, "Add annotator").click().run()


def assign(at: AppTest) -> None:
    [n for n in at.number_input if n.label == "Annotators per pair"][-1].set_value(1)  # the first: a new project's
    button(at, "Save policy and assign").click().run()


def control(at: AppTest) -> None:
    next(t for t in at.text_input if t.label == "Query id").input("q000")
    next(t for t in at.text_input if t.label == "Fragment id").input("d3")
    next(t for t in at.text_area if t.label.startswith("Reason")).input("it states the policy")
    button(at, "Add control pair").click().run()


# action: (page, its submit button, how to fill the form in and press it)
ACTIONS: dict[str, tuple[str, str, Callable[[AppTest], None]]] = {
    "create release": ("lead_releases.py", "Create release", release),
    "save guideline": ("lead_guidelines.py", "Save as new version", guideline),
    "add annotator": ("lead_project.py", "Add annotator", annotator),
    "save policy and assign": ("lead_project.py", "Save policy and assign", assign),
    "add control pair": ("lead_controls.py", "Add control pair", control),
}


@pytest.mark.parametrize("end", ["revoked", "deactivated"])
@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_lead_page_write_from_an_ended_session_writes_nothing(store, action, end) -> None:
    page, label, act = ACTIONS[action]
    at = page_test(store, page)
    assert not at.exception
    if end == "revoked":
        revoke(store, at.session_state[TOKEN_KEY])
    else:
        deactivate(store, "lea", actor=OPERATOR)
    before = snapshot(store)
    act(at)  # the tab still shows the form: fill it in and submit
    assert not at.exception
    assert snapshot(store) == before, f"{action} wrote from a {end} session"
    assert not [b for b in at.button if b.label == label], "the page body ran after the session ended"

    if end == "deactivated":
        activate(store, "lea", actor=OPERATOR)
    before = snapshot(store)
    live = page_test(store, page)  # the same click from a live session does write
    act(live)
    assert not live.exception
    assert snapshot(store) != before, f"{action} from a live session changed nothing: the case proves nothing"

"""Refusals as one sentence: a store that says no (eval_core.errors.USER_ERRORS: Refused, NotFound, Conflict,
bad values, a failing model endpoint) is shown in the page as what was not done and why; the traceback goes
to the server log, never to the browser."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st
from sqlalchemy.exc import DBAPIError

from annotator.app.text import literal
from db.store.engine import STORE_DOWN, StoreUnavailable, is_outage
from eval_core.errors import USER_ERRORS

# What a page shows as one sentence: a refusal, a bad value, a failing endpoint, or the store out of reach.
PAGE_ERRORS: tuple[type[Exception], ...] = (*USER_ERRORS, StoreUnavailable)
log = logging.getLogger("qrelkit.app")


def sentence(exc: BaseException) -> str:
    """The refusal's own message as one sentence (first line, capitalised, full stop)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0].strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


@contextmanager
def user_errors(action: str = "Not done") -> Iterator[None]:
    """Wrap a store action in a page: `with user_errors("No release"): create_release(...)` shows
    "No release: <why>." (the reason shown literally) instead of a traceback, and logs the details."""
    try:
        yield
    except PAGE_ERRORS as exc:
        log.warning("%s: %s", action, exc, exc_info=True)
        st.error(literal(f"{action}: {sentence(exc)}"))


@contextmanager
def store_outage() -> Iterator[None]:
    """Around a whole page run: a database that is down or lost its connection even after the store's one
    retry (db.store.engine.retry_once) is one sentence, not "This app has encountered an error"; the pool was
    invalidated, so the next key press opens a fresh connection."""
    try:
        yield
    except StoreUnavailable:
        st.error(sentence(ValueError(STORE_DOWN)))
    except DBAPIError as exc:
        if not is_outage(exc):
            raise
        log.warning("database unavailable during a page run: %s", exc.orig)
        st.error(sentence(ValueError(STORE_DOWN)))


def survives_outage(panel: Callable[..., None]) -> Callable[..., None]:
    """For an st.fragment (whose reruns skip the page-level store_outage): a database out of reach while the
    fragment runs is the same one sentence, and the next key press runs it afresh."""

    @functools.wraps(panel)
    def run(*args, **kwargs) -> None:
        with store_outage():
            panel(*args, **kwargs)

    return run

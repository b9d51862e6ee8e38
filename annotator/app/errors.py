"""Refusals as one sentence: a store that says no (PermissionError, ValueError, LookupError) is shown in the
page as what was not done and why; the traceback goes to the server log, never to the browser."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from annotator.app.text import literal

REFUSALS = (PermissionError, ValueError, LookupError)
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
    except REFUSALS as exc:
        log.warning("%s: %s", action, exc, exc_info=True)
        st.error(literal(f"{action}: {sentence(exc)}"))

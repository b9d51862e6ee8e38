"""The judging page's context: a query's description and narrative under it, and the fragment's document beside
the fragment being graded — its neighbours first (key D), the whole document on a second D, closed by Escape.
The grade stays the fragment's; every text is shown escaped (query terms marked)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st
from sqlalchemy.engine import Engine

from annotator.app.text import highlighted, literal
from annotator.app.views import FRAGMENT_STYLE
from db.context import ContextFragment, pair_context, query_context
from db.grading import PairView

OPEN_KEY = "D"
STATE = "context_view"  # None (closed), "neighbours" or "document"
NEIGHBOURS = "neighbours"
DOCUMENT = "document"


def _set(value: str | None) -> None:
    """Open the neighbours or the whole document, or close the context (None)."""
    st.session_state[STATE] = value


def query_lines(engine: Engine, project: str, view: PairView) -> None:
    """The query's description and narrative, when the import had them, under the query (literal)."""
    description, narrative = query_context(engine, project, view.pair_id)
    if description:
        st.caption(f"Description: {literal(description)}")
    if narrative:
        st.caption(f"Narrative: {literal(narrative)}")


def _fragment(f: ContextFragment, query: str) -> None:
    """One fragment of the document, its place and id above it; the graded one says so."""
    where = "" if f.position is None else f"position {f.position} · "
    mark = " · **the fragment you are grading**" if f.current else ""
    title = f"**{literal(f.title)}** · " if f.title else ""
    st.caption(f"{title}{where}fragment {literal(f.external_id)}{mark}")
    st.html(f'<div class="qrelkit-context" style="{FRAGMENT_STYLE}">{highlighted(f.text, query)}</div>')


def beside(engine: Engine, project: str, view: PairView, draw_fragment: Callable[[PairView], None]) -> None:
    """The fragment box, with its document beside it when the annotator opened it (only for a fragment whose
    document holds other fragments)."""
    shown = st.session_state.get(STATE)
    if view.fragment_doc_id is None:
        draw_fragment(view)
        return
    if shown is None:
        draw_fragment(view)
        st.button(
            f"Read it in its document ({OPEN_KEY})",
            key="context_open",
            shortcut=OPEN_KEY,
            on_click=_set,
            args=(NEIGHBOURS,),
        )
        return
    context = pair_context(engine, project, view.pair_id)
    left, right = st.columns(2)
    with left:
        draw_fragment(view)
    with right, st.container(border=True, key="context_box"):
        parts = context.neighbours() if shown == NEIGHBOURS else context.document
        what = "neighbours" if shown == NEIGHBOURS else "whole document"
        st.markdown(f"**Document {literal(context.doc_id)}** · {what} ({len(context.document)} fragments)")
        for f in parts:
            _fragment(f, view.query_text)
        if not context.has_document:
            st.caption("No other fragment of this document was imported.")
        one, two = st.columns(2)
        if shown == NEIGHBOURS:
            one.button(
                f"Whole document ({OPEN_KEY})",
                key="context_document",
                shortcut=OPEN_KEY,
                on_click=_set,
                args=(DOCUMENT,),
            )
        two.button("Close (Esc)", key="context_close", shortcut="Escape", on_click=_set, args=(None,))

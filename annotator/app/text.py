"""Text for the page: a user's string escaped so Markdown shows it literally, and query terms marked in a fragment.
Needs nothing from the app, so every module of it can use these."""

from __future__ import annotations

import html
import re
from typing import Any

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&=\"'^])")
_TERM = re.compile(r"\w{3,}")
# Streamlit rewrites the text after parsing, where escapes no longer count: bare URLs, `www.` and e-mail addresses
# become links, `:material/x:` an icon, `:streamlit:` a logo, and ` -> ` `<-` `<->` `--` `>=` `<=` `~=` arrows and
# signs. An empty `:small[]` (Streamlit's own directive, drawn as an empty <span>) cuts the text node there, so no
# such pattern is ever whole, and the text still reads and copies exactly as typed (no invisible character).
BREAK = ":small[]"
_BREAK_AT = re.compile(r"(?<=:)|(?=@)|(?<=(?i:www))(?=\\\.)|(?<=[-<>~=])(?=\\[-<>~=])")  # on escaped text


def literal(text: Any) -> str:
    """Backslash-escape every Markdown/HTML character so a user's string shows as typed inside st.markdown,
    captions, alerts, labels and st.table cells (no links, images, tags, colours or maths ever come from data),
    then cut the text with BREAK after every colon, before every @, inside `www.` and between the signs of an
    arrow, so none of Streamlit's after-parsing rewrites applies either."""
    escaped = _MD_SPECIAL.sub(r"\\\1", "" if text is None else str(text))
    return _BREAK_AT.sub(BREAK, escaped)


def query_terms(query: str) -> list[str]:
    """The query's words of three or more letters, longest first (so a longer word wins an overlap)."""
    return sorted({t.lower() for t in _TERM.findall(query or "")}, key=lambda t: (-len(t), t))


def highlighted(text: str, query: str) -> str:
    """The fragment as safe HTML: escaped first, then every whole-word occurrence of a query term wrapped in
    <mark>. Escaped text holds no tags, and a term never matches inside an entity (&amp;, &#x27;)."""
    escaped = html.escape(text or "", quote=True)
    terms = query_terms(query)
    if not terms:
        return escaped
    pattern = re.compile(r"(?<![\w&#])(" + "|".join(map(re.escape, terms)) + r")(?!\w)", re.IGNORECASE)
    return pattern.sub(r"<mark>\1</mark>", escaped)

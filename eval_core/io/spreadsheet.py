"""CSV cells a spreadsheet would run as a formula are escaped (OWASP's CSV-injection rule).

A text cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`, so Excel,
LibreOffice and Google Sheets show it as text. A cell that already starts with `'` gets one more, so the
escape can be undone exactly (unescape_cell: qrelkit's own CSV readers drop one leading `'`). Numbers are
never touched (a score of -0.5 stays a number), and TREC / JSONL / BEIR outputs are never escaped: they are
exact, machine-read formats.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
ESCAPE = "'"


def escape_cell(value: Any) -> Any:
    """`=cmd|' /C calc'!A0` → `'=cmd|' /C calc'!A0`, `'x` → `''x`; anything that is not a string is returned
    as is."""
    if isinstance(value, str) and value.startswith((*FORMULA_START, ESCAPE)):
        return ESCAPE + value
    return value


def unescape_cell(value: Any) -> Any:
    """The inverse of escape_cell for a cell read back from a CSV qrelkit wrote: one leading `'` removed."""
    if isinstance(value, str) and value.startswith(ESCAPE):
        return value[1:]
    return value


def escape_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells (and column names) are safe to open in a spreadsheet."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(escape_cell)
    out.columns = [escape_cell(str(c)) for c in out.columns]
    if out.index.name is not None:
        out.index = out.index.map(escape_cell)
    return out

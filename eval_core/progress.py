"""The one progress bar: tqdm on stderr, drawn only when stderr is a terminal (never in CI logs, pipes or files,
never on stdout where the results go), and only when the caller asked for progress."""

from __future__ import annotations

import sys
from typing import Any


def on_terminal() -> bool:
    """True when stderr is an interactive terminal (a bar there is seen, not logged)."""
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced by an object without isatty
        return False


def bar(iterable: Any = None, *, show: bool = True, **options: Any) -> Any:
    """A tqdm bar (over `iterable` if given) with tqdm's options, written to stderr and disabled unless `show`
    and stderr is a terminal; a disabled bar still counts (`n`) and iterates, so callers need no second path."""
    from tqdm import tqdm

    options.pop("file", None)
    options.pop("disable", None)
    return tqdm(iterable, file=sys.stderr, disable=not (show and on_terminal()), **options)

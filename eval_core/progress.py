"""The one progress bar: tqdm on stderr, drawn only when stderr is a terminal (never in CI logs, pipes or files,
never on stdout where the results go), and only when the caller asked for progress. A bar that will not be drawn
is a `QuietBar`, and tqdm (≈ 40 ms of imports, multiprocessing's among them) is not even imported."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any


def on_terminal() -> bool:
    """True when stderr is an interactive terminal (a bar there is seen, not logged)."""
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced by an object without isatty
        return False


class QuietBar:
    """A bar that is not drawn: the part of tqdm's interface the product calls, doing nothing but count. Iterating
    it yields the iterable's items; `update` adds to `n`; labels, refreshes and closing are no-ops."""

    disable = True

    def __init__(
        self, iterable: Iterable[Any] | None = None, *, total: float | None = None, initial: float = 0
    ) -> None:
        self.iterable = iterable
        if total is None and iterable is not None:
            try:
                total = len(iterable)  # type: ignore[arg-type]
            except (TypeError, AttributeError):
                total = None
        self.total = total
        self.n = initial

    def __iter__(self) -> Iterator[Any]:
        if self.iterable is None:
            raise TypeError("a bar without an iterable cannot be iterated")
        return iter(self.iterable)

    def __len__(self) -> int:
        return int(self.total or 0)

    def __enter__(self) -> QuietBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        """Count `n` more done."""
        self.n += n

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Nothing to label."""

    def set_postfix(self, ordered_dict: Any = None, refresh: bool = True, **kwargs: Any) -> None:
        """Nothing to label."""

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        """Nothing to label."""

    def refresh(self) -> None:
        """Nothing to draw."""

    def clear(self) -> None:
        """Nothing to clear."""

    def close(self) -> None:
        """Nothing to close."""


def bar(iterable: Any = None, *, show: bool = True, **options: Any) -> Any:
    """A tqdm bar (over `iterable` if given) with tqdm's options, written to stderr, when `show` and stderr is a
    terminal; else a QuietBar (no tqdm import), which still counts (`n`) and iterates, so callers need no second
    path."""
    options.pop("file", None)
    options.pop("disable", None)
    if not (show and on_terminal()):
        return QuietBar(iterable, total=options.get("total"), initial=options.get("initial", 0))
    from tqdm import tqdm

    return tqdm(iterable, file=sys.stderr, **options)

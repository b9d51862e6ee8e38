"""A rule for the browser tests themselves, read from their source (no browser, so this runs in the fast suite):
a test module waits for what it needs, never for a fixed time outside a polling loop. (That no test module
imports another, here or anywhere under tests/, is tests/browser/test_hygiene.py's rule.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MODULES = sorted(HERE.glob("*.py"))
SLEEPS = {"sleep", "wait_for_timeout"}  # time.sleep(...), page.wait_for_timeout(...)


def sleeps_outside_loops(source: str) -> list[int]:
    """Lines of every call named sleep or wait_for_timeout that no `while` loop encloses."""
    lines: list[int] = []

    def visit(node: ast.AST, in_loop: bool) -> None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name in SLEEPS and not in_loop:
                lines.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, in_loop or isinstance(node, ast.While))

    visit(ast.parse(source), False)
    return lines


def test_the_check_catches_what_it_forbids() -> None:
    assert sleeps_outside_loops(
        "page.wait_for_timeout(300)\nwhile x:\n    time.sleep(0.2)\ndef f():\n    sleep(1)\n"
    ) == [1, 5]


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_fixed_waits_only_inside_polling_loops(module: Path) -> None:
    assert sleeps_outside_loops(module.read_text(encoding="utf-8")) == []


class _Clock:
    """A page stand-in for until(): each wait moves a fake clock on, so no time passes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now, self.waits = 0.0, 0
        monkeypatch.setattr("tests.browser.conftest.time.monotonic", lambda: self.now)

    def wait_for_timeout(self, ms: float) -> None:
        self.now += ms / 1000
        self.waits += 1


def test_until_raises_on_timeout_naming_what_it_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.browser.conftest import until

    page = _Clock(monkeypatch)
    with pytest.raises(TimeoutError, match=r"waited 1 s for the round's feedback to go"):
        until(page, lambda: False, timeout=1000, what="the round's feedback to go")
    assert page.waits == 5  # polled every 200 ms over the second
    with pytest.raises(TimeoutError, match=r"lambda: 1 \+ 1 == 3"):  # unnamed: the check's own source
        until(page, lambda: 1 + 1 == 3, timeout=400)


def test_until_returns_once_the_check_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.browser.conftest import until

    page = _Clock(monkeypatch)
    answers = iter([False, False, True])
    until(page, lambda: next(answers), timeout=1000)
    assert page.waits == 2

"""Rules for the browser tests themselves, read from their source (no browser, so this runs in the fast suite):
a test module takes its helpers from pages.py or conftest.py, never from another test module, and waits for
what it needs, never for a fixed time outside a polling loop."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MODULES = sorted(HERE.glob("*.py"))
SLEEPS = {"sleep", "wait_for_timeout"}  # time.sleep(...), page.wait_for_timeout(...)


def imported_modules(tree: ast.Module) -> list[str]:
    """Dotted names of every module `tree` imports, at any depth (lazy imports inside functions too)."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def imports_of_test_modules(source: str) -> list[str]:
    """The imported modules of `source` that are test modules (their last part starts with test_)."""
    return [name for name in imported_modules(ast.parse(source)) if name.rsplit(".", 1)[-1].startswith("test_")]


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


def test_the_checks_catch_what_they_forbid() -> None:
    assert imports_of_test_modules("from tests.browser.test_lead_browser import LEAD\nimport tests.test_x\n"
                                   "def f():\n    from tests.test_app_seams import human_disputes\n") == [
        "tests.browser.test_lead_browser", "tests.test_x", "tests.test_app_seams"]
    assert imports_of_test_modules("from tests.browser.pages import SLOW\nfrom tests.conftest import ROOT\n") == []
    assert sleeps_outside_loops("page.wait_for_timeout(300)\nwhile x:\n    time.sleep(0.2)\n"
                                "def f():\n    sleep(1)\n") == [1, 5]


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_no_browser_test_module_imports_another_test_module(module: Path) -> None:
    assert imports_of_test_modules(module.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("module", MODULES, ids=[m.name for m in MODULES])
def test_fixed_waits_only_inside_polling_loops(module: Path) -> None:
    assert sleeps_outside_loops(module.read_text(encoding="utf-8")) == []

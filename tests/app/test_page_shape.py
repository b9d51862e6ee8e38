"""Every page under annotator/app/screens/ has annotate.py's shape: functions that take what they need, and a
page body of a few lines. A page that grows back into a module-level script fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SCREENS = Path(__file__).resolve().parents[2] / "annotator" / "app" / "screens"
MAX_MODULE_STATEMENTS = 20
PAGES = sorted(p for p in SCREENS.glob("*.py") if p.name != "__init__.py")


def module_statements(source: str) -> int:
    """Statements that run at module level: every statement outside a function or class body (those nested in a
    module-level `if`, `with` or `for` included), leaving out imports and the module docstring."""
    tree = ast.parse(source)
    docstring = tree.body[0] if tree.body and isinstance(tree.body[0], ast.Expr) else None
    count = 0
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, ast.stmt) and child is not docstring:
                count += not isinstance(child, (ast.Import, ast.ImportFrom))
            pending.append(child)
    return count


def test_the_count_is_of_statements_at_module_level() -> None:
    """Hand count: a docstring, two imports, a function of three statements (not counted), and at module level
    a constant, an `if` with two statements inside and a `with` with one: 1 + 1 + 2 + 1 + 1 = 6."""
    source = '''"""Doc."""
import streamlit as st
from db import projects

def section(x):
    a = 1
    b = 2
    return a + b

LIMIT = 3
if LIMIT:
    st.write(1)
    st.stop()
with st.sidebar:
    st.write(2)
'''
    assert module_statements(source) == 6


def test_the_pages_are_there() -> None:
    assert {p.name for p in PAGES} >= {"annotate.py", "lead_project.py", "lead_evaluate.py", "lead_agreement.py"}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_a_page_is_functions_and_a_short_body(page: Path) -> None:
    count = module_statements(page.read_text())
    assert count <= MAX_MODULE_STATEMENTS, (
        f"{page.name}: {count} statements at module level (at most {MAX_MODULE_STATEMENTS}); put sections into "
        "functions (a page's own, or an annotator/app/components/ module's) and call them from a short page body"
    )

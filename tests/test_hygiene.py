"""A rule for the test suite itself, read from its source: no module under tests/ imports a test module (one
whose name starts with test_). Shared helpers live in tests/helpers.py, fixtures in tests/conftest.py, and the
browser tests' own in tests/browser/pages.py and tests/browser/conftest.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
MODULES = sorted(TESTS.rglob("*.py"))


def imported_modules(tree: ast.Module) -> list[str]:
    """Dotted names of every module `tree` imports, at any depth (lazy imports inside functions too); a name
    taken from a package (`from tests import test_x`, `from . import test_x`) counts as a module too."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                names.append(node.module)
            package = "." * node.level + (f"{node.module}." if node.module else "")
            names += [package + alias.name for alias in node.names if alias.name.startswith("test_")]
    return names


def imports_of_test_modules(source: str) -> list[str]:
    """The imported modules of `source` that are test modules (their last part starts with test_)."""
    return [name for name in imported_modules(ast.parse(source)) if name.rsplit(".", 1)[-1].startswith("test_")]


def test_the_check_catches_what_it_forbids() -> None:
    assert imports_of_test_modules(
        "from tests.browser.test_lead_browser import LEAD\nimport tests.test_x\n"
        "def f():\n    from tests.test_app_seams import human_disputes\n"
    ) == ["tests.browser.test_lead_browser", "tests.test_x", "tests.test_app_seams"]
    assert imports_of_test_modules("from tests.browser.pages import SLOW\nfrom tests.conftest import ROOT\n") == []
    # pytest puts tests/ on sys.path, so a bare name imports a test module too; so does a package's attribute
    assert imports_of_test_modules(
        "from test_store_pool import seed\nimport test_app_lead as lead\n"
        "from tests import test_agreement_cli\nfrom . import test_y\n"
    ) == ["test_store_pool", "test_app_lead", "tests.test_agreement_cli", ".test_y"]
    assert (
        imports_of_test_modules(
            "from tests.helpers import seed\nimport tests.fake_judge\n"
            "from sklearn.model_selection import train_test_split\n"
        )
        == []
    )


def test_every_module_under_tests_is_checked() -> None:
    names = {m.relative_to(TESTS).as_posix() for m in MODULES}
    assert {
        "conftest.py",
        "helpers.py",
        "app/test_app_lead.py",
        "browser/pages.py",
        "browser/test_scale_evaluate_browser.py",
    } <= names


@pytest.mark.parametrize("module", MODULES, ids=[m.relative_to(TESTS).as_posix() for m in MODULES])
def test_no_test_module_imports_another_test_module(module: Path) -> None:
    assert imports_of_test_modules(module.read_text(encoding="utf-8")) == []


# Test modules sit in folders that mirror the packages; only the guards over the whole repository stay at the top.
TEST_FOLDERS = {"eval_core", "db", "app", "cli", "browser"}
REPO_GUARDS = {"test_architecture.py", "test_docs.py", "test_hygiene.py", "test_packaging.py", "test_typecheck.py"}


def test_test_modules_mirror_the_packages() -> None:
    misplaced = [
        m.relative_to(TESTS).as_posix()
        for m in MODULES
        if m.name.startswith("test_")
        and not (m.parent == TESTS and m.name in REPO_GUARDS)
        and not (m.parent.parent == TESTS and m.parent.name in TEST_FOLDERS)
    ]
    assert misplaced == [], f"put these under tests/{{{','.join(sorted(TEST_FOLDERS))}}}/: {misplaced}"
    for folder in TEST_FOLDERS:
        assert (TESTS / folder / "__init__.py").is_file(), f"tests/{folder}/ needs an __init__.py (unique module names)"

"""docs/architecture.md is drawn from the code: every module is described there, and imports go one way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("eval_core", "db", "annotator")
FORBIDDEN = {
    "eval_core": ("db", "annotator", "streamlit", "sqlalchemy", "sqlmodel"),
    "db": ("annotator", "streamlit"),
}


def modules() -> list[Path]:
    """Every Python module of the three packages (package markers without code left out)."""
    found = [p for layer in LAYERS for p in sorted((ROOT / layer).rglob("*.py")) if "migrations" not in p.parts]
    return [p for p in found if p.name not in ("__main__.py",) and not (p.name == "__init__.py" and not p.read_text().strip())]


def imported(path: Path) -> set[str]:
    """Top-level package names a module imports (at any depth of the file, lazy imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_flow_annotator_db_eval_core(layer: str) -> None:
    bad = {str(p.relative_to(ROOT)): sorted(imported(p) & set(FORBIDDEN[layer]))
           for p in sorted((ROOT / layer).rglob("*.py")) if "migrations" not in p.parts}
    assert {k: v for k, v in bad.items() if v} == {}


def test_every_module_is_described_in_the_architecture_doc() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    missing = [str(p.relative_to(ROOT)) for p in modules() if f"`{p.relative_to(ROOT).as_posix()}`" not in doc]
    assert missing == []


def test_the_doc_names_no_module_that_does_not_exist() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    named = {line.split("`")[1] for line in doc.splitlines() if line.startswith("- `") and line.split("`")[1].endswith(".py")}
    assert sorted(n for n in named if not (ROOT / n).exists()) == []

"""docs/architecture.md is drawn from the code: every module is described there, imports go one way between
the packages, no module imports itself back through others (inside a package either), and migrations import
nothing of qrelkit."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("eval_core", "db", "annotator")
PACKAGES = (*LAYERS, "guidelines")
FORBIDDEN = {
    "eval_core": ("db", "annotator", "streamlit", "sqlalchemy", "sqlmodel"),
    "db": ("annotator", "streamlit"),
}


def modules() -> list[Path]:
    """Every Python module of the three packages (package markers without code left out)."""
    found = [p for layer in LAYERS for p in sorted((ROOT / layer).rglob("*.py")) if "migrations" not in p.parts]
    return [
        p
        for p in found
        if p.name not in ("__main__.py",) and not (p.name == "__init__.py" and not p.read_text().strip())
    ]


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
    bad = {
        str(p.relative_to(ROOT)): sorted(imported(p) & set(FORBIDDEN[layer]))
        for p in sorted((ROOT / layer).rglob("*.py"))
        if "migrations" not in p.parts
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_every_module_is_described_in_the_architecture_doc() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    missing = [str(p.relative_to(ROOT)) for p in modules() if f"`{p.relative_to(ROOT).as_posix()}`" not in doc]
    assert missing == []


def test_the_doc_names_no_module_that_does_not_exist() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    named = {
        line.split("`")[1] for line in doc.splitlines() if line.startswith("- `") and line.split("`")[1].endswith(".py")
    }
    assert sorted(n for n in named if not (ROOT / n).exists()) == []


def module_names(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted name → file of every module under the packages (a package by its __init__.py)."""
    out: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The most specific known module a dotted import name reaches (`a.b.func` → `a.b`)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of import nodes inside `if TYPE_CHECKING:` (never run, so they make no circle)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    """Module → the modules of the packages it imports, function-local imports included (a lazy import hides a
    circle from Python at import time, not from the design)."""
    known = module_names(root, packages)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_only(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets |= {t for a in node.names if (t := _resolve(a.name, known))}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                for alias in node.names:
                    if t := _resolve(f"{base}.{alias.name}", known):
                        targets.add(t)
        graph[name] = targets - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted: the import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_circle_between_or_inside_packages() -> None:
    assert cycles(import_graph(ROOT, PACKAGES)) == []


def test_a_circle_inside_a_package_through_a_lazy_import_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n    return c\n")  # lazy and relative
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    (pkg / "e.py").write_text("from pkg.a import thing\n")  # imports into the circle, is not part of it
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.sub.b"] == {"pkg.c"} and graph["pkg.d"] == set()
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


def test_migrations_import_nothing_of_qrelkit() -> None:
    """A migration's values are frozen literals: importing a live list would change an old revision."""
    versions = sorted((ROOT / "db" / "store" / "migrations" / "versions").glob("*.py"))
    assert versions
    bad = {p.name: sorted(imported(p) & set(PACKAGES)) for p in versions}
    assert {k: v for k, v in bad.items() if v} == {}


def module_aliases(path: Path, root: Path = ROOT) -> list[str]:
    """`from pkg import module as other` and `import pkg.module as other` of a module of the repository: the
    reader meets `other` and cannot find its file (names of functions and classes may be aliased)."""

    def is_module(dotted: str) -> bool:
        base = root.joinpath(*dotted.split("."))
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [
                f"{node.module}.{a.name} as {a.asname}"
                for a in node.names
                if a.asname and a.asname != a.name and is_module(f"{node.module}.{a.name}")
            ]
        elif isinstance(node, ast.Import):
            found += [f"{a.name} as {a.asname}" for a in node.names if a.asname and is_module(a.name)]
    return found


def test_no_alias_hides_a_module_name_in_the_app_or_the_store() -> None:
    paths = [p for layer in ("annotator", "db") for p in sorted((ROOT / layer).rglob("*.py"))]
    bad = {str(p.relative_to(ROOT)): module_aliases(p) for p in paths}
    assert {k: v for k, v in bad.items() if v} == {}


def test_a_module_alias_is_found_and_a_function_alias_is_not(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "judges.py").write_text("def tab():\n    pass\n")
    page = tmp_path / "page.py"
    page.write_text("from pkg import judges as views_judges\nfrom pkg.judges import tab as judges_tab\n")
    assert module_aliases(page, tmp_path) == ["pkg.judges as views_judges"]

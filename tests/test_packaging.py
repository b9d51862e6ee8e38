"""A non-editable install works: the wheel holds every file the code reads at run time (the bundled guidelines
and judge prompt, the migrations, the app's pages, the demo data), and an install of it into a fresh virtual
environment creates a project with the bundled guideline, builds the demo and reads the default judge prompt.

The wheel is built by pip from a copy of the repository's tracked files in tmp_path: setuptools writes build/
and *.egg-info next to pyproject.toml, which must never happen in the checkout (nor touch its qrelkit.egg-info).
Building needs setuptools and wheel (pyproject's build-system) from PyPI or pip's cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, require

pytestmark = pytest.mark.slow
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# The top-level packages the wheel ships, as pyproject's package finder names them ("db*" → db).
PACKAGES = sorted(
    {name.split(".")[0].rstrip("*") for name in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]}
)
OFFLINE = ("NewConnectionError", "No matching distribution found", "Could not find a version")


def _tracked() -> list[str]:
    """The repository's tracked files (what a clean checkout, e.g. CI, builds from)."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


def _runtime_files() -> list[str]:
    """Every tracked file in a folder the code reads at run time, named by the constants that read it."""
    from annotator.app.components.agreement import PAGES
    from annotator.cli.app import APP
    from annotator.demo import DATA
    from db.projects import BUNDLED_GUIDELINE
    from db.store.schema import MIGRATIONS
    from guidelines import DIR as GUIDELINES
    from guidelines import JUDGE_PROMPT

    folders = [p.relative_to(ROOT).as_posix() + "/" for p in (GUIDELINES, MIGRATIONS, PAGES, DATA)]
    named = [p.relative_to(ROOT).as_posix() for p in (APP, BUNDLED_GUIDELINE, JUDGE_PROMPT)]
    tracked = _tracked()
    assert set(named) <= set(tracked)
    return sorted({*(name for name in tracked if name.startswith(tuple(folders))), *named})


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """qrelkit's wheel, built by `pip wheel --no-deps` from a copy of the tracked files in a temporary folder."""
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    for name in _tracked():
        if name in ("pyproject.toml", "README.md", "LICENSE") or name.split("/")[0] in PACKAGES:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, source / name)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(work / "dist"), str(source)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode and any(word in done.stderr for word in OFFLINE):
        require(False, f"building the wheel needs setuptools and wheel from PyPI: {done.stderr[-400:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = (work / "dist").glob("qrelkit-*.whl")
    return built


def test_the_wheel_holds_what_the_code_reads_at_run_time(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [name for name in _runtime_files() if name not in names] == []
    for name in (
        "guidelines/grading-0-3.md",
        "guidelines/grading-0-3-v1-ambiguous.md",
        "guidelines/judge-prompt.md",
        "db/store/migrations/env.py",
        "annotator/app/screens/annotate.py",
        "annotator/demo_data/grades.jsonl",
    ):
        assert name in names  # the list above is not empty by accident
    outside = sorted({name.split("/")[0] for name in names} - {*PACKAGES, wheel.name.split("-py3")[0] + ".dist-info"})
    assert outside == []  # no tests/ or build leftovers at the top level


def test_a_non_editable_install_creates_projects_and_the_demo(wheel, tmp_path):
    """Installed (no dependencies: they come from the test's own environment) into a fresh virtual environment
    and run from a folder outside the checkout, the package reads only its own files.

    The test's environment is usually itself a virtualenv, whose packages a `--system-site-packages` child of
    `sys.executable` would not see (it sees the base interpreter's): a `.pth` file in the new environment adds
    the test environment's site-packages after its own, so the installed wheel is found before the checkout."""
    import site

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    Path(own, "test-environment.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet", str(wheel)],
        check=True,
        timeout=300,
    )
    run = tmp_path / "run"
    run.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QRELKIT_DB_URL")}

    def call(*args: str) -> str:
        done = subprocess.run([*args], cwd=run, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    where = call(
        str(python),
        "-c",
        "import annotator.demo, db.projects, guidelines; "
        "print(annotator.demo.__file__, db.projects.BUNDLED_GUIDELINE, guidelines.JUDGE_PROMPT)",
    )
    assert all(Path(path).is_relative_to(venv) for path in where.split()), where  # not the editable checkout
    db = f"sqlite:///{run / 'store.db'}"
    call(str(venv / "bin" / "qrelkit"), "init", "--project", "faq", "--db", db)
    shown = call(str(venv / "bin" / "qrelkit"), "guideline", "show", "--project", "faq", "--db", db)
    assert shown == (ROOT / "guidelines" / "grading-0-3.md").read_text(encoding="utf-8")
    demo = call(
        str(python),
        "-c",
        "from annotator.demo import build_demo; from db.projects import list_guidelines; "
        "from db.store.schema import init_db; from guidelines import JUDGE_PROMPT; "
        f"from eval_core.judges.prompt import check_template; e = init_db('sqlite:///{run / 'demo.db'}'); "
        "print(build_demo(e).created, [g.version for g in list_guidelines(e, 'demo')]); "
        "check_template(JUDGE_PROMPT.read_text(encoding='utf-8'))",
    )
    assert demo.strip() == "True [1, 2]"

"""A store command's process start: `qrelkit user`, `adjudicate`, `disputes` (by spread) and `import
adjudications` load the store but not pandas, NumPy or Alembic (the schema check reads the revision directly), so a
script's loop over them is not paying for libraries it never uses. Not a timing test: it asserts which modules a
fresh interpreter loaded (benchmarks/bench_startup.py times them)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.pooling import pool
from db.projects import create_project
from db.store.engine import get_engine
from db.store.schema import init_db
from tests.conftest import ROOT
from tests.helpers import seed

HEAVY = ("pandas", "numpy", "pyarrow", "alembic", "scipy", "streamlit")


def run_fresh(argv: list[str]) -> tuple[int, list[str]]:
    """Exit status of `qrelkit argv` in a fresh interpreter and which HEAVY modules it loaded."""
    probe = (
        "import sys, json\nfrom annotator.cli import main\n"
        f"try:\n    status = main({argv!r})\nexcept SystemExit as exc:  # --help\n    status = exc.code\n"
        f"print(json.dumps([status, [m for m in {HEAVY!r} if m in sys.modules]]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    status, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    return status, loaded


@pytest.mark.slow
def test_user_adjudicate_and_disputes_start_without_pandas_numpy_or_alembic(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = init_db(url)
    project = create_project(engine, "demo", actor=OPERATOR)
    seed(engine, project.id, {"q1": "query"}, {"f1": "text"}, {"R": {"q1": ["f1"]}})
    pool(engine, "demo", depth=1, bm25=0, actor=OPERATOR)
    create_user(engine, "lea", "lead", actor=OPERATOR)
    engine.dispose()
    get_engine.cache_clear()
    decided = tmp_path / "decided.qrels"
    decided.write_text("q1 0 f1 2 on topic\n")
    for argv in (
        ["user", "list", "--db", url],
        ["adjudicate", "--help"],
        ["disputes", "--help"],
        ["disputes", "--project", "demo", "--db", url],
        ["disputes", "--project", "demo", "--open", "--boundary", "1", "--format", "json", "--db", url],
        [
            "adjudicate",
            "--project",
            "demo",
            "--query",
            "q1",
            "--fragment",
            "f1",
            "--grade",
            "3",
            "--reason",
            "r",
            "--user",
            "lea",
            "--db",
            url,
        ],
    ):
        assert run_fresh(argv) == (0, [])
    # importing a file of decisions reads it with eval_core's reader (pandas), still without Alembic
    status, loaded = run_fresh(
        ["import", "adjudications", str(decided), "--project", "demo", "--lead", "lea", "--db", url]
    )
    assert status == 0 and "alembic" not in loaded

"""A store command's process start: `qrelkit user`, `adjudicate`, `disputes` (by spread) and `import
adjudications` load the store but not pandas, NumPy or Alembic (the schema check reads the revision directly), so a
script's loop over them is not paying for libraries it never uses. Not a timing test: it asserts which modules a
fresh interpreter loaded (benchmarks/bench_startup.py times them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def test_dispose_engines_closes_every_pooled_connection(engine, project):
    """What a CLI process does before it leaves: every engine get_engine made gives back its connections (on
    SQLite the last close checkpoints and removes the WAL file), and stays usable."""
    from sqlalchemy import text

    from db.store.engine import dispose_engines

    with engine.begin() as conn:  # a write: SQLite now has a -wal file beside the database
        conn.execute(text("UPDATE projects SET overlap = 3"))
    assert engine.pool.checkedin() == 1
    dispose_engines()
    assert engine.pool.checkedin() == 0
    if engine.dialect.name == "sqlite":
        assert engine.url.database is not None
        assert not Path(engine.url.database + "-wal").exists()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT overlap FROM projects")).scalar_one() == 3


@pytest.mark.slow
def test_a_store_commands_process_closes_the_store_and_freezes_before_it_leaves(tmp_path):
    """`qrelkit user list` as a process (main() with no argv): the same table, the connection closed (no WAL
    file left beside the SQLite database) and the objects frozen, so the interpreter's teardown skips them."""
    db = tmp_path / "store.db"
    engine = init_db(f"sqlite:///{db}")
    create_user(engine, "lea", "lead", actor=OPERATOR)
    engine.dispose()
    get_engine.cache_clear()
    probe = (
        "import gc, sys\nfrom annotator.cli import main\n"
        f"sys.argv = ['qrelkit', 'user', 'list', '--db', {str(db)!r}]\n"
        "status = main()\nprint(status, gc.get_freeze_count() > 0)"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    table, last = out.stdout.strip().rsplit("\n", 1)
    assert last == "0 True"
    assert table.splitlines()[1].split() == ["1", "lea", "lead", "yes", "no", "human"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]

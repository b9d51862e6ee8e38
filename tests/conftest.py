"""Shared fixtures and the rule that CI runs browser and PostgreSQL tests instead of skipping them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
PG_URL = os.environ.get("QRELKIT_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def require(condition: bool, reason: str) -> None:
    """Skip locally when a component is missing, but fail in CI, where every test must run."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_url() -> str:
    """URL of a reachable PostgreSQL server (skips locally, fails in CI when it is down)."""
    try:
        import sqlalchemy as sa

        engine = sa.create_engine(PG_URL)
        with engine.connect() as conn:
            conn.execute(sa.text("select 1"))
        engine.dispose()
        ok, why = True, ""
    except Exception as exc:  # any failure to connect means "not available"
        ok, why = False, f"PostgreSQL not reachable at {PG_URL}: {exc}"
    require(ok, why)
    return PG_URL

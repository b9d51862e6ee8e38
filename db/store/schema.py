"""Create and upgrade the database with Alembic, configured in code so an installed package needs no alembic.ini.

Every command checks the schema revision before it runs, so that check reads `alembic_version` and the
migration files' names directly: loading Alembic's machinery for it cost a store command most of its start.
Alembic itself is imported only to migrate."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine

from db.store.engine import get_engine

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


def alembic_config() -> Config:
    """An Alembic Config pointing at the packaged migrations."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Migrate to `revision` (idempotent: already there is a no-op); returns the revision now in force."""
    from alembic import command

    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    return current_revision(engine)


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for an empty database): Alembic's one-row version table, read
    directly."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    if len(rows) > 1:
        raise RuntimeError(f"the database is at several schema revisions at once ({', '.join(rows)})")
    return rows[0] if rows else None


def head_revision() -> str:
    """The newest revision shipped with this package: the chain is linear and each migration file is named by
    its revision (`NNNN_what.py`, revision 'NNNN'; tests/db/test_store_schema.py holds Alembic to the same
    head), so the highest number is the head."""
    numbers = [m[1] for p in (MIGRATIONS / "versions").iterdir() if (m := _REVISION_FILE.match(p.name))]
    if not numbers:
        raise RuntimeError(f"no migrations in {MIGRATIONS / 'versions'}")
    return max(numbers)


def init_db(url: str | None = None) -> Engine:
    """The engine for `url` (argument, QRELKIT_DB_URL, or ./qrelkit.db) with its schema at head."""
    engine = get_engine(url)
    upgrade(engine)
    return engine

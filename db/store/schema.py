"""Create and upgrade the database with Alembic, configured in code so an installed package needs no alembic.ini."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from db.store.engine import get_engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config() -> Config:
    """An Alembic Config pointing at the packaged migrations."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Migrate to `revision` (idempotent: already there is a no-op); returns the revision now in force."""
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    return current_revision(engine)


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for an empty database)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str:
    """The newest revision shipped with this package."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def init_db(url: str | None = None) -> Engine:
    """The engine for `url` (argument, QRELKIT_DB_URL, or ./qrelkit.db) with its schema at head."""
    engine = get_engine(url)
    upgrade(engine)
    return engine

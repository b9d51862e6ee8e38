"""Alembic environment: the schema is db.store.models' SQLModel metadata; the connection comes from db.store.schema."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlmodel import SQLModel

import db.store.models  # noqa: F401  (registers the tables on SQLModel.metadata)

target_metadata = SQLModel.metadata


def _configure(connection) -> None:
    """Batch mode on SQLite, whose ALTER TABLE cannot change constraints in place."""
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_online() -> None:
    """Use the connection db.store.schema passed in; else open one from the configured URL (alembic CLI use)."""
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("no connection passed in and no sqlalchemy.url configured")
    engine = create_engine(url)
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("qrelkit migrations run online only: use `qrelkit db upgrade`")
run_migrations_online()

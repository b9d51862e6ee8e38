"""One engine per database URL: SQLite by default (WAL, busy timeout, foreign keys), PostgreSQL by URL."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

DEFAULT_URL = "sqlite:///./qrelkit.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def database_url(url: str | None = None) -> str:
    """The URL to use: explicit argument, else QRELKIT_DB_URL, else ./qrelkit.db."""
    return url or os.environ.get("QRELKIT_DB_URL") or DEFAULT_URL


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    """Make every SQLite connection safe for several writers and enforce foreign keys."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _sqlite_begin(conn) -> None:
    """Let SQLAlchemy, not pysqlite, emit BEGIN, so `BEGIN IMMEDIATE` can be requested per transaction."""
    conn.exec_driver_sql(conn.info.pop("begin_sql", "BEGIN"))


@lru_cache(maxsize=8)
def get_engine(url: str | None = None) -> Engine:
    """Create (once per URL per process) the engine for `url`."""
    url = database_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)

        @event.listens_for(engine, "connect")
        def _no_pysqlite_begin(dbapi_conn, _record) -> None:
            dbapi_conn.isolation_level = None

        event.listen(engine, "begin", _sqlite_begin)
        return engine
    # No pool_pre_ping: it costs a round trip per request, a third of next_pair's budget; connections idle for
    # an hour are recycled instead, and a request that meets a restarted server fails once and is retried by the user.
    return create_engine(url, pool_recycle=3600)


def is_sqlite(engine: Engine) -> bool:
    """True for the embedded default, where write transactions must take the lock up front."""
    return engine.dialect.name == "sqlite"


@contextmanager
def session_scope(engine: Engine, *, write: bool = False) -> Iterator[Session]:
    """One transaction: commit on success, roll back on error. `write=True` takes SQLite's write lock up
    front (BEGIN IMMEDIATE), so a read-modify-write never fails midway with 'database is locked'."""
    with engine.connect() as conn:
        if write and is_sqlite(engine):
            conn.info["begin_sql"] = "BEGIN IMMEDIATE"
        with Session(bind=conn, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

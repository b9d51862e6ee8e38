"""One engine per database URL: SQLite by default (WAL, busy timeout, foreign keys), PostgreSQL by URL."""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache, wraps
from typing import Any, ParamSpec, TypeVar, cast

from sqlalchemy import event
from sqlalchemy.engine import CursorResult, Engine, Result
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlmodel import Session, create_engine

DEFAULT_URL = "sqlite:///./qrelkit.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000
STORE_DOWN = (
    "the database did not answer (it may be restarting), so this was not done; what was saved is "
    "kept, try again in a moment"
)
log = logging.getLogger("qrelkit.store")
P = ParamSpec("P")
R = TypeVar("R")


def database_url(url: str | None = None) -> str:
    """The URL to use: explicit argument, else QRELKIT_DB_URL, else ./qrelkit.db. A plain file path (no `://`)
    names a SQLite file."""
    url = url or os.environ.get("QRELKIT_DB_URL") or DEFAULT_URL
    return url if "://" in url else f"sqlite:///{url}"


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


# Every engine get_engine made in this process (weakly: a cache_clear lets them go), for dispose_engines.
_MADE: weakref.WeakSet[Engine] = weakref.WeakSet()


@lru_cache(maxsize=8)
def get_engine(url: str | None = None) -> Engine:
    """Create (once per URL per process) the engine for `url`."""
    engine = _new_engine(database_url(url))
    _MADE.add(engine)
    return engine


def dispose_engines() -> None:
    """Close the pooled connections of every engine get_engine made in this process: SQLite checkpoints its
    WAL and removes it on the last close, PostgreSQL sees the session end. What a process does before it
    leaves without the interpreter's slow teardown (annotator.cli.main); the engines stay usable (a later
    checkout opens a new connection)."""
    for engine in list(_MADE):
        engine.dispose()


def _new_engine(url: str) -> Engine:
    """The engine for a full URL: SQLite with its pragmas and explicit BEGIN, PostgreSQL with pre-ping."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)

        @event.listens_for(engine, "connect")
        def _no_pysqlite_begin(dbapi_conn, _record) -> None:
            dbapi_conn.isolation_level = None

        event.listen(engine, "begin", _sqlite_begin)
        return engine
    # pool_pre_ping: a pooled connection that a server restart (or pg_terminate_backend) killed is replaced
    # before use, at one round trip per checkout; one that dies mid-transaction is retried by retry_once.
    return create_engine(url, pool_pre_ping=True, pool_recycle=3600)


class StoreUnavailable(ConnectionError):
    """The database could not be reached or lost the connection, even after one retry: one sentence for the
    user (STORE_DOWN); nothing of the failed action was written."""


def is_outage(exc: BaseException) -> bool:
    """True when `exc` says the database is unreachable or the connection was lost (SQLAlchemy has then
    invalidated the pool) rather than that a statement was wrong."""
    return isinstance(exc, OperationalError) or (isinstance(exc, DBAPIError) and bool(exc.connection_invalidated))


RETRY_PAUSE_SECONDS = 0.5


def retry_once(fn: Callable[P, R]) -> Callable[P, R]:
    """Run `fn` again, once, when the database was unreachable or its connection was lost; a second failure is
    StoreUnavailable. Only for reads and for writes that are idempotent (recording the same grade twice is a
    no-op), so a retry never doubles anything."""

    @wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except DBAPIError as exc:
            if not is_outage(exc):
                raise
            log.warning("%s lost its database connection (%s); retrying once", fn.__qualname__, exc.orig)
        time.sleep(RETRY_PAUSE_SECONDS)  # a restarting server needs a moment; an immediate retry finds it down
        try:
            return fn(*args, **kwargs)
        except DBAPIError as exc:
            if not is_outage(exc):
                raise
            raise StoreUnavailable(STORE_DOWN) from exc

    return run


def affected(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE changed: `rowcount` belongs to the CursorResult that session.execute
    returns for them, though it is typed as a plain Result."""
    return int(cast(CursorResult[Any], result).rowcount or 0)


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

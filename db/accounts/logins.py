"""Password login with back-off: after repeated failures per account and per client, attempts must wait.

Attempts are rows in the store, so the back-off holds across browser sessions, tabs, processes and restarts.
An account's failures count since its last successful login; a client's failures count whatever account they
named (a client cannot reset its counter by logging in to an account it holds). Both look back WINDOW only.
An attempt is recorded as a failure in the same locked transaction that decides it may go ahead, before its
password is checked, and turned into a success afterwards: N simultaneous attempts check at most FREE_FAILURES.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.engine import Engine
from sqlmodel import col

from db.accounts.permissions import Actor, require_lead
from db.accounts.sessions import NewSession, create_session
from db.accounts.users import UserInfo, authenticate, user_row
from db.store.engine import affected, is_sqlite, session_scope
from db.store.models import LoginAttempt, User, UserSession, utcnow

FREE_FAILURES = 5  # failures allowed before any wait
FIRST_WAIT_SECONDS = 10.0  # the wait after the fifth failure; it doubles with each further failure
MAX_WAIT_SECONDS = 900.0
WINDOW = timedelta(minutes=30)
KEEP = timedelta(days=30)  # attempts and ended sessions stay this long for audits, then a login prunes them
LOGIN_LOCK_KEY = 0x71726C6B  # PostgreSQL advisory lock ('qrlk') that serialises the short go/wait decisions
UNLOCK_CLIENT = "unlocked by "  # an unlock is a success row whose client says who lifted the back-off
log = logging.getLogger("qrelkit.auth")


@dataclass(frozen=True)
class LoginResult:
    """A login's outcome: the user and a new session, or None with the seconds to wait before trying again."""

    user: UserInfo | None
    session: NewSession | None
    retry_after: int


def wait_after(failures: int) -> float:
    """Seconds to wait after `failures` consecutive failures: none up to FREE_FAILURES, then doubling."""
    if failures < FREE_FAILURES:
        return 0.0
    return min(FIRST_WAIT_SECONDS * 2 ** (failures - FREE_FAILURES), MAX_WAIT_SECONDS)


def _failures(conn, key_column, key: str, since: datetime, reset_on_success: bool) -> tuple[int, datetime | None]:
    """How many failures `key` has since `since` (and its last success, if that resets the count), and when
    the latest was."""
    if reset_on_success:
        last_ok = conn.execute(
            select(func.max(LoginAttempt.attempted_at)).where(
                key_column == key, col(LoginAttempt.succeeded).is_(True), col(LoginAttempt.attempted_at) > since
            )
        ).scalar()
        since = max(since, last_ok) if last_ok is not None else since
    count, latest = conn.execute(
        select(func.count(), func.max(LoginAttempt.attempted_at)).where(
            key_column == key, col(LoginAttempt.succeeded).is_(False), col(LoginAttempt.attempted_at) > since
        )
    ).one()
    return int(count), latest


def _wait_of(conn, key_column, key: str, resets: bool, now: datetime) -> float:
    """Seconds `key` (an account name or a client) must still wait by its own failures; 0 or less = go."""
    count, latest = _failures(conn, key_column, key, now - WINDOW, resets)
    if latest is None:
        return 0.0
    latest = latest if latest.tzinfo else latest.replace(tzinfo=now.tzinfo)
    return wait_after(count) - (now - latest).total_seconds()


def _wait(conn, username: str, client: str, now: datetime) -> int:
    """Whole seconds this account name or this client must still wait, read inside the caller's transaction."""
    wait = max(
        0.0,
        _wait_of(conn, LoginAttempt.username, username, True, now),
        _wait_of(conn, LoginAttempt.client, client, False, now),
    )
    return max(0, math.ceil(wait))


def retry_after(engine: Engine, username: str, client: str, now: datetime | None = None) -> int:
    """Whole seconds this account name or this client must still wait before the next attempt (0 = go)."""
    with session_scope(engine) as session:
        return _wait(session.connection(), username, client, now or utcnow())


def locked_accounts(engine: Engine, now: datetime | None = None) -> dict[str, int]:
    """Accounts whose own failures (from any client) make their next login wait right now, by name, with the
    whole seconds left: what `unlock` lifts. A client's own back-off is not an account's and is not listed."""
    now = now or utcnow()
    with session_scope(engine) as session:
        conn = session.connection()
        names = (
            conn.execute(
                select(col(LoginAttempt.username))
                .distinct()
                .where(
                    col(LoginAttempt.succeeded).is_(False),
                    col(LoginAttempt.attempted_at) > now - WINDOW,
                    col(LoginAttempt.username).in_(select(col(User.username))),
                )
            )
            .scalars()
            .all()
        )
        waits = {name: math.ceil(_wait_of(conn, LoginAttempt.username, name, True, now)) for name in names}
    return {name: wait for name, wait in sorted(waits.items()) if wait > 0}


def _claim_attempt(engine: Engine, username: str, client: str) -> tuple[int, int | None]:
    """Decide and record in one serialised transaction: (wait > 0, None) with nothing recorded, or (0, the id
    of a new attempt row written as a failure before any password is checked)."""
    with session_scope(engine, write=True) as session:  # SQLite: BEGIN IMMEDIATE serialises
        if not is_sqlite(engine):
            session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOGIN_LOCK_KEY})
        now = utcnow()
        wait = _wait(session.connection(), username, client, now)
        if wait:
            return wait, None
        attempt_id = session.execute(
            insert(LoginAttempt)
            .values(username=username, client=client, succeeded=False, attempted_at=now)
            .returning(col(LoginAttempt.id))
        ).scalar_one()
        return 0, int(attempt_id)


def prune(engine: Engine, now: datetime | None = None) -> tuple[int, int]:
    """Drop attempts older than KEEP and sessions that ended (expired or revoked) more than KEEP ago, so the
    tables stay small; returns (attempts, sessions) removed."""
    cutoff = (now or utcnow()) - KEEP
    with session_scope(engine, write=True) as session:
        attempts = affected(session.execute(delete(LoginAttempt).where(col(LoginAttempt.attempted_at) < cutoff)))
        ended = affected(
            session.execute(
                delete(UserSession).where(
                    (col(UserSession.expires_at) < cutoff) | (col(UserSession.revoked_at) < cutoff)
                )
            )
        )
    return attempts, ended


def login(engine: Engine, username: str, password: str, *, client: str) -> LoginResult:
    """Check a password unless this account or client must wait; on success open a session. Every failure
    and every refused wait is logged with the account name and client."""
    name = (username or "").strip()[:200]
    client = (client or "unknown")[:200]
    wait, attempt_id = _claim_attempt(engine, name, client)
    if attempt_id is None:
        log.warning("login throttled: user %r from %s must wait %d s", name, client, wait)
        return LoginResult(None, None, wait)
    user = authenticate(engine, name, password)
    if user is None:
        wait = retry_after(engine, name, client)
        log.warning("login failed: user %r from %s%s", name, client, f" (next attempt in {wait} s)" if wait else "")
        return LoginResult(None, None, wait)
    with session_scope(engine, write=True) as session:
        session.execute(update(LoginAttempt).where(col(LoginAttempt.id) == attempt_id).values(succeeded=True))
    log.info("login: user %r from %s", name, client)
    prune(engine)
    return LoginResult(user, create_session(engine, user.id, client=client), 0)


def unlock(engine: Engine, username: str, *, actor: Actor) -> None:
    """Lift an account's back-off (a lead's or the operator's act): a success row, its client naming the
    actor, restarts the account's failure count; the clients that guessed stay throttled."""
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        name = user_row(session, username).username
        session.execute(
            insert(LoginAttempt).values(
                username=name, client=f"{UNLOCK_CLIENT}{actor}"[:200], succeeded=True, attempted_at=utcnow()
            )
        )
    log.warning("login back-off of %r lifted by %r", username, actor)

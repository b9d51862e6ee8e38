"""Password login with back-off: after repeated failures per account and per client, attempts must wait.

Attempts are rows in the store, so the back-off holds across browser sessions, tabs, processes and restarts.
An account's failures count since its last successful login; a client's failures count whatever account they
named (a client cannot reset its counter by logging in to an account it holds). Both look back WINDOW only.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, insert, select
from sqlalchemy.engine import Engine

from db.accounts.sessions import NewSession, create_session
from db.accounts.users import UserInfo, authenticate
from db.store.engine import session_scope
from db.store.models import LoginAttempt, UserSession, utcnow

FREE_FAILURES = 5  # failures allowed before any wait
FIRST_WAIT_SECONDS = 10.0  # the wait after the fifth failure; it doubles with each further failure
MAX_WAIT_SECONDS = 900.0
WINDOW = timedelta(minutes=30)
KEEP = timedelta(days=30)  # attempts and ended sessions stay this long for audits, then a login prunes them
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
        last_ok = conn.execute(select(func.max(LoginAttempt.attempted_at)).where(
            key_column == key, LoginAttempt.succeeded.is_(True), LoginAttempt.attempted_at > since)).scalar()
        since = max(since, last_ok) if last_ok is not None else since
    count, latest = conn.execute(select(func.count(), func.max(LoginAttempt.attempted_at)).where(
        key_column == key, LoginAttempt.succeeded.is_(False), LoginAttempt.attempted_at > since)).one()
    return int(count), latest


def retry_after(engine: Engine, username: str, client: str, now: datetime | None = None) -> int:
    """Whole seconds this account name or this client must still wait before the next attempt (0 = go)."""
    now = now or utcnow()
    since = now - WINDOW
    wait = 0.0
    with session_scope(engine) as session:
        conn = session.connection()
        for column, key, resets in ((LoginAttempt.username, username, True), (LoginAttempt.client, client, False)):
            count, latest = _failures(conn, column, key, since, resets)
            if latest is not None:
                latest = latest if latest.tzinfo else latest.replace(tzinfo=now.tzinfo)
                wait = max(wait, wait_after(count) - (now - latest).total_seconds())
    return max(0, math.ceil(wait))


def record_attempt(engine: Engine, username: str, client: str, succeeded: bool) -> None:
    """Keep one attempt (account name as typed, trimmed; client label) for the back-off and the audit trail."""
    with session_scope(engine) as session:
        session.execute(insert(LoginAttempt).values(username=username[:200], client=client[:200],
                                                    succeeded=succeeded, attempted_at=utcnow()))


def prune(engine: Engine, now: datetime | None = None) -> tuple[int, int]:
    """Drop attempts older than KEEP and sessions that ended (expired or revoked) more than KEEP ago, so the
    tables stay small; returns (attempts, sessions) removed."""
    cutoff = (now or utcnow()) - KEEP
    with session_scope(engine, write=True) as session:
        attempts = session.execute(delete(LoginAttempt).where(LoginAttempt.attempted_at < cutoff)).rowcount
        ended = session.execute(delete(UserSession).where(
            (UserSession.expires_at < cutoff) | (UserSession.revoked_at < cutoff))).rowcount
    return int(attempts or 0), int(ended or 0)


def login(engine: Engine, username: str, password: str, *, client: str) -> LoginResult:
    """Check a password unless this account or client must wait; on success open a session. Every failure
    and every refused wait is logged with the account name and client."""
    name = (username or "").strip()[:200]
    client = (client or "unknown")[:200]
    wait = retry_after(engine, name, client)
    if wait:
        log.warning("login throttled: user %r from %s must wait %d s", name, client, wait)
        return LoginResult(None, None, wait)
    user = authenticate(engine, name, password)
    record_attempt(engine, name, client, user is not None)
    if user is None:
        wait = retry_after(engine, name, client)
        log.warning("login failed: user %r from %s%s", name, client, f" (next attempt in {wait} s)" if wait else "")
        return LoginResult(None, None, wait)
    log.info("login: user %r from %s", name, client)
    prune(engine)
    return LoginResult(user, create_session(engine, user.id, client=client), 0)

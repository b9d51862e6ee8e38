"""Password login with back-off: after repeated failures per account and per client, attempts must wait.

Attempts are rows in the store, so the back-off holds across browser sessions, tabs, processes and restarts.
An account's failures count since its last successful login; a client's failures count whatever account they
named (a client cannot reset its counter by logging in to an account it holds). Both look back WINDOW only.
An attempt is recorded as in flight (succeeded NULL) in the same locked transaction that decides it may go
ahead, before its password is checked, and becomes a failure or a success afterwards. An in-flight attempt is
no failure: colleagues logging in at the same moment from one address never wait on each other's correct
passwords. But while a key's failures plus its attempts in flight reach FREE_FAILURES, a further attempt is
held (a short poll, not a refusal) until those checks end: N simultaneous wrong guesses still check at most
FREE_FAILURES. An attempt left in flight longer than STALE_SECONDS (its process died) counts as a failure.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, delete, func, insert, or_, select, text, update
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
STALE_SECONDS = 60.0  # an attempt in flight this long was never finished (its process died): a failure
HOLD_SECONDS = 30.0  # how long an attempt may be held behind others' checks before it is told to retry
HOLD_POLL_SECONDS = 0.2
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


def _failed(now: datetime):
    """A failure: checked and wrong, or left in flight longer than STALE_SECONDS."""
    stale = now - timedelta(seconds=STALE_SECONDS)
    return or_(
        col(LoginAttempt.succeeded).is_(False),
        and_(col(LoginAttempt.succeeded).is_(None), col(LoginAttempt.attempted_at) < stale),
    )


def _failures(
    conn, key_column, key: str, since: datetime, reset_on_success: bool, now: datetime | None = None
) -> tuple[int, datetime | None, int]:
    """`key`'s failures since `since` (and its last success, if that resets the count), when the latest was,
    and how many of its attempts are in flight: failures and attempts in flight in ONE statement, so a check
    ending between two reads cannot be missed by both."""
    now = now or utcnow()
    if reset_on_success:
        last_ok = conn.execute(
            select(func.max(col(LoginAttempt.attempted_at))).where(
                key_column == key, col(LoginAttempt.succeeded).is_(True), col(LoginAttempt.attempted_at) > since
            )
        ).scalar()
        since = max(since, last_ok) if last_ok is not None else since
    failed = _failed(now)
    in_flight = and_(
        col(LoginAttempt.succeeded).is_(None), col(LoginAttempt.attempted_at) >= now - timedelta(seconds=STALE_SECONDS)
    )
    count, latest, flying = conn.execute(
        select(
            func.count().filter(failed),
            func.max(col(LoginAttempt.attempted_at)).filter(failed),
            func.count().filter(in_flight),
        ).where(key_column == key, col(LoginAttempt.attempted_at) > since)
    ).one()
    return int(count), latest, int(flying)


def _wait_of(conn, key_column, key: str, resets: bool, now: datetime) -> tuple[float, bool]:
    """Seconds `key` (an account name or a client) must still wait by its own failures (0 or less = go), and
    whether its checks in flight, were they all to fail, would make it wait (then one more attempt is held)."""
    count, latest, flying = _failures(conn, key_column, key, now - WINDOW, resets, now)
    held = bool(flying) and count + flying >= FREE_FAILURES
    if latest is None:
        return 0.0, held
    latest = latest if latest.tzinfo else latest.replace(tzinfo=now.tzinfo)
    return wait_after(count) - (now - latest).total_seconds(), held


def _decide(conn, username: str, client: str, now: datetime) -> tuple[int, bool]:
    """Whole seconds this account name or this client must still wait, and whether an attempt must be held
    behind checks in flight; read inside the caller's transaction."""
    by_name = _wait_of(conn, col(LoginAttempt.username), username, True, now)
    by_client = _wait_of(conn, col(LoginAttempt.client), client, False, now)
    wait = max(0, math.ceil(max(0.0, by_name[0], by_client[0])))
    return wait, by_name[1] or by_client[1]


def _wait(conn, username: str, client: str, now: datetime) -> int:
    """Whole seconds this account name or this client must still wait, read inside the caller's transaction."""
    return _decide(conn, username, client, now)[0]


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
        waits = {name: math.ceil(_wait_of(conn, col(LoginAttempt.username), name, True, now)[0]) for name in names}
    return {name: wait for name, wait in sorted(waits.items()) if wait > 0}


def _try_claim(engine: Engine, username: str, client: str) -> tuple[int, int | None]:
    """One serialised decision: (wait > 0, None) refused, (0, None) held behind checks in flight, or (0, the
    id of a new attempt row written as in flight before any password is checked)."""
    with session_scope(engine, write=True) as session:  # SQLite: BEGIN IMMEDIATE serialises
        if not is_sqlite(engine):
            session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOGIN_LOCK_KEY})
        now = utcnow()
        wait, held = _decide(session.connection(), username, client, now)
        if wait:
            return wait, None
        if held:
            return 0, None
        attempt_id = session.execute(
            insert(LoginAttempt)
            .values(username=username, client=client, succeeded=None, attempted_at=now)
            .returning(col(LoginAttempt.id))
        ).scalar_one()
        return 0, int(attempt_id)


def _claim_attempt(engine: Engine, username: str, client: str) -> tuple[int, int | None]:
    """Decide and record: (wait > 0, None) with nothing recorded, or (0, the id of an attempt in flight). An
    attempt held behind others' checks polls until they end (at most HOLD_SECONDS, then it is told to retry)."""
    deadline = time.monotonic() + HOLD_SECONDS
    while True:
        wait, attempt_id = _try_claim(engine, username, client)
        if wait or attempt_id is not None:
            return wait, attempt_id
        if time.monotonic() > deadline:
            return 1, None
        time.sleep(HOLD_POLL_SECONDS)


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


def _finish(engine: Engine, attempt_id: int, succeeded: bool) -> None:
    """Turn an attempt in flight into a success, or a failure dated now (the wait runs from when the password
    was found wrong, however long the check took). If the store is out of reach now, the row stays
    in flight and counts as a failure after STALE_SECONDS."""
    try:
        with session_scope(engine, write=True) as session:
            values = {"succeeded": succeeded} if succeeded else {"succeeded": False, "attempted_at": utcnow()}
            session.execute(update(LoginAttempt).where(col(LoginAttempt.id) == attempt_id).values(**values))
    except Exception:
        if succeeded:
            raise
        log.warning(
            "login attempt %d could not be marked failed; it counts as one after %d s", attempt_id, STALE_SECONDS
        )


def login(engine: Engine, username: str, password: str, *, client: str) -> LoginResult:
    """Check a password unless this account or client must wait; on success open a session. Every failure
    and every refused wait is logged with the account name and client."""
    name = (username or "").strip()[:200]
    client = (client or "unknown")[:200]
    wait, attempt_id = _claim_attempt(engine, name, client)
    if attempt_id is None:
        log.warning("login throttled: user %r from %s must wait %d s", name, client, wait)
        return LoginResult(None, None, wait)
    try:
        user = authenticate(engine, name, password)
    except BaseException:
        _finish(engine, attempt_id, False)
        raise
    if user is None:
        _finish(engine, attempt_id, False)
        wait = retry_after(engine, name, client)
        log.warning("login failed: user %r from %s%s", name, client, f" (next attempt in {wait} s)" if wait else "")
        return LoginResult(None, None, wait)
    _finish(engine, attempt_id, True)
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

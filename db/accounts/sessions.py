"""Login sessions that survive reloads and new tabs: a random token in the browser, its SHA-256 in the store.

The token alone grants nothing the store has not recorded: resolve() re-reads the account on every call, so
an expired, idle, revoked or deactivated session, or a changed role, takes effect on the next page run.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from sqlmodel import col

from db.accounts.users import UserInfo, end_sessions, user_row
from db.store.engine import affected, retry_once, session_scope
from db.store.models import User, UserSession, utcnow

SESSION_LIFETIME = timedelta(hours=12)  # one working day; then log in again
IDLE_TIMEOUT = timedelta(hours=2)  # no page run for this long ends the session (docs/security.md says why 2 h)
TOUCH_EVERY = timedelta(minutes=5)  # last_seen_at is refreshed at most this often: not worth a write per page run


@dataclass(frozen=True)
class NewSession:
    """What the browser keeps (the token, shown once) and when it stops working."""

    token: str
    expires_at: datetime


def token_hash(token: str) -> str:
    """SHA-256 hex of the token: what the store keeps, so a copy of the table opens no session."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_session(
    engine: Engine, user_id: int, *, client: str | None = None, lifetime: timedelta = SESSION_LIFETIME
) -> NewSession:
    """Open a session for an active account (after its password was checked) and return its fresh token."""
    if lifetime <= timedelta(0):
        raise ValueError("a session lifetime must be positive")
    token = secrets.token_urlsafe(32)
    now = utcnow()
    with session_scope(engine, write=True) as session:
        active = session.execute(select(col(User.active)).where(col(User.id) == user_id)).scalar_one_or_none()
        if not active:
            raise PermissionError(f"user id {user_id} is unknown or deactivated")
        row = UserSession(
            token_hash=token_hash(token),
            user_id=user_id,
            client=(client or None) and client[:200],
            created_at=now,
            last_seen_at=now,
            expires_at=now + lifetime,
        )
        session.add(row)
    return NewSession(token, now + lifetime)


@retry_once
def resolve(engine: Engine, token: str | None) -> UserInfo | None:
    """The account behind a token as the store has it now (current role), or None when the token is unknown,
    expired, idle for IDLE_TIMEOUT or longer (last_seen_at, refreshed here every TOUCH_EVERY) or revoked, or the
    account is deactivated."""
    if not token or not isinstance(token, str):
        return None
    now = utcnow()
    with session_scope(engine) as session:
        row = session.execute(
            select(
                col(UserSession.id),
                col(UserSession.last_seen_at),
                col(User.id).label("user_id"),
                col(User.username),
                col(User.role),
                col(User.password_hash).is_not(None).label("has_password"),
                col(User.kind),
            )
            .join(User, col(User.id) == col(UserSession.user_id))
            .where(
                col(UserSession.token_hash) == token_hash(token),
                col(UserSession.revoked_at).is_(None),
                col(UserSession.expires_at) > now,
                col(UserSession.last_seen_at) > now - IDLE_TIMEOUT,
                col(User.active).is_(True),
            )
        ).first()
    if row is None:
        return None
    if now - row.last_seen_at > TOUCH_EVERY:
        with session_scope(engine) as session:
            session.execute(update(UserSession).where(UserSession.id == row.id).values(last_seen_at=now))
    return UserInfo(row.user_id, row.username, row.role, True, bool(row.has_password), row.kind)


@retry_once
def revoke(engine: Engine, token: str | None) -> bool:
    """End one session (logout); True if it was open."""
    if not token:
        return False
    with session_scope(engine, write=True) as session:
        result = session.execute(
            update(UserSession)
            .where(col(UserSession.token_hash) == token_hash(token), col(UserSession.revoked_at).is_(None))
            .values(revoked_at=utcnow())
        )
        return bool(affected(result))


def revoke_all_for_user(engine: Engine, username: str) -> int:
    """End every open session of an account (all its tabs and browsers); returns how many were open."""
    with session_scope(engine, write=True) as session:
        user = user_row(session, username)
        assert user.id is not None
        return end_sessions(session, user.id)

"""Accounts: annotators and leads, scrypt-hashed passwords; an account without a password cannot log in."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from db.engine import session_scope
from db.models import User

ROLES = ("annotator", "lead")
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}
_DUMMY_HASH: str | None = None


@dataclass(frozen=True)
class UserInfo:
    """A user as the app sees it (never the password hash)."""

    id: int
    username: str
    role: str
    active: bool
    can_login: bool


def hash_password(password: str) -> str:
    """Salted scrypt hash in a self-describing `scrypt$n$r$p$salt$hash` form."""
    if not password:
        raise ValueError("password must not be empty")
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """Constant-time check of `password` against a hash from hash_password."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
    except ValueError:
        return False
    if scheme != "scrypt":
        return False
    candidate = hashlib.scrypt(password.encode("utf-8"), salt=bytes.fromhex(salt), n=int(n), r=int(r),
                               p=int(p), dklen=len(digest) // 2)
    return hmac.compare_digest(candidate.hex(), digest)


def user_info(user: User) -> UserInfo:
    """Detach a row into plain data."""
    assert user.id is not None
    return UserInfo(user.id, user.username, user.role, user.active, bool(user.password_hash) and user.active)


def user_row(session: Session, username: str) -> User:
    """The row for `username`, or LookupError naming it."""
    user = session.exec(select(User).where(User.username == username)).first()
    if user is None:
        raise LookupError(f"no user named {username!r}")
    return user


def check_username(username: str) -> str:
    """Usernames are trimmed, non-empty and at most 200 characters."""
    name = (username or "").strip()
    if not name or len(name) > 200:
        raise ValueError(f"username must be 1-200 characters, got {username!r}")
    return name


def create_user(engine: Engine, username: str, role: str, password: str | None = None) -> UserInfo:
    """Add an account; without a password it exists (e.g. for imported judgments) but cannot log in."""
    name = check_username(username)
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    hashed = hash_password(password) if password is not None else None
    with session_scope(engine, write=True) as session:
        if session.exec(select(User.id).where(User.username == name)).first() is not None:
            raise ValueError(f"user {name!r} already exists")
        user = User(username=name, role=role, password_hash=hashed)
        session.add(user)
        session.flush()
        return user_info(user)


def set_password(engine: Engine, username: str, password: str) -> UserInfo:
    """Give an account a (new) password, e.g. one created by a judgments import."""
    hashed = hash_password(password)
    with session_scope(engine, write=True) as session:
        user = user_row(session, username)
        user.password_hash = hashed
        session.add(user)
        session.flush()
        return user_info(user)


def authenticate(engine: Engine, username: str, password: str) -> UserInfo | None:
    """The user if the password matches an active account; None otherwise (same work either way)."""
    global _DUMMY_HASH
    with session_scope(engine) as session:
        user = session.exec(select(User).where(User.username == (username or "").strip())).first()
        info = user_info(user) if user is not None else None
        stored = user.password_hash if user is not None else None
    if stored is None:
        _DUMMY_HASH = _DUMMY_HASH or hash_password("not a password")
        verify_password(password or "", _DUMMY_HASH)
        return None
    if not verify_password(password or "", stored) or info is None or not info.active:
        return None
    return info


def list_users(engine: Engine, role: str | None = None) -> list[UserInfo]:
    """Every account (optionally of one role), by username."""
    with session_scope(engine) as session:
        stmt = select(User).order_by(User.username)
        if role is not None:
            stmt = stmt.where(User.role == role)
        return [user_info(u) for u in session.exec(stmt)]


def set_active(engine: Engine, username: str, active: bool) -> UserInfo:
    """Deactivate (cannot log in, gets no new assignments) or reactivate an account; history is kept."""
    with session_scope(engine, write=True) as session:
        user = user_row(session, username)
        user.active = bool(active)
        session.add(user)
        session.flush()
        return user_info(user)

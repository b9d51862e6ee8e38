"""Login sessions: only the token's SHA-256 is stored; resolve re-reads the account, so expiry, logout,
deactivation and role changes take effect on the next page run (SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from db.models import UserSession, utcnow
from db.permissions import OPERATOR
from db.sessions import create_session, resolve, revoke, revoke_all_for_user
from db.users import create_user, deactivate, set_role

OP = {"actor": OPERATOR}


@pytest.fixture
def lea(engine):
    """An active lead with a password."""
    return create_user(engine, "lea", "lead", "lead-password", **OP)


def test_the_store_keeps_only_the_tokens_sha256(engine, lea):
    new = create_session(engine, lea.id, client="10.0.0.7")
    assert len(new.token) >= 43  # 32 random bytes, URL-safe base64
    with engine.connect() as conn:
        rows = conn.execute(sa.select(UserSession.token_hash, UserSession.client, UserSession.expires_at,
                                      UserSession.created_at)).all()
    assert len(rows) == 1
    stored, client, expires, created = rows[0]
    assert stored == hashlib.sha256(new.token.encode()).hexdigest() and new.token not in stored
    assert client == "10.0.0.7" and expires.tzinfo is not None and expires - created == timedelta(hours=12)
    assert resolve(engine, new.token) == lea
    assert create_session(engine, lea.id).token != new.token


def test_unknown_empty_and_tampered_tokens_resolve_to_nobody(engine, lea):
    new = create_session(engine, lea.id)
    assert resolve(engine, None) is None and resolve(engine, "") is None
    assert resolve(engine, new.token[:-1]) is None
    assert resolve(engine, hashlib.sha256(new.token.encode()).hexdigest()) is None  # the stored hash is no key


def test_an_expired_session_resolves_to_nobody(engine, lea):
    new = create_session(engine, lea.id)
    with engine.begin() as conn:
        conn.execute(sa.update(UserSession).values(expires_at=utcnow() - timedelta(seconds=1),
                                                   created_at=utcnow() - timedelta(hours=13)))
    assert resolve(engine, new.token) is None
    with pytest.raises(ValueError, match="positive"):
        create_session(engine, lea.id, lifetime=timedelta(0))


def test_logout_revokes_that_session_only(engine, lea):
    first, second = create_session(engine, lea.id), create_session(engine, lea.id)
    assert revoke(engine, first.token) is True
    assert revoke(engine, first.token) is False  # already ended
    assert resolve(engine, first.token) is None
    assert resolve(engine, second.token) == lea


def test_revoke_all_and_deactivation_end_every_session_of_the_user_only(engine, lea):
    ana = create_user(engine, "ana", "annotator", "ana-password", **OP)
    tabs = [create_session(engine, lea.id) for _ in range(3)]
    other = create_session(engine, ana.id)
    assert revoke_all_for_user(engine, "lea") == 3
    assert all(resolve(engine, t.token) is None for t in tabs)
    fresh = create_session(engine, lea.id)
    deactivate(engine, "lea", **OP)
    assert resolve(engine, fresh.token) is None
    with engine.connect() as conn:
        open_rows = conn.execute(sa.select(sa.func.count()).select_from(UserSession)
                                 .where(UserSession.revoked_at.is_(None))).scalar_one()
    assert open_rows == 1  # ana's, untouched
    assert resolve(engine, other.token) == ana
    with pytest.raises(PermissionError, match="deactivated"):
        create_session(engine, lea.id)


def test_resolve_rereads_the_role_on_every_call(engine, lea):
    new = create_session(engine, lea.id)
    set_role(engine, "lea", "annotator", **OP)
    assert resolve(engine, new.token).role == "annotator"
    set_role(engine, "lea", "lead", **OP)
    assert resolve(engine, new.token).role == "lead"


def test_the_database_refuses_a_raw_token_or_a_session_ending_before_it_starts(engine, lea):
    now = utcnow()
    for values in ({"token_hash": "raw-token"}, {"token_hash": "a" * 64, "expires_at": now - timedelta(hours=1)}):
        row = {"token_hash": "b" * 64, "user_id": lea.id, "created_at": now, "last_seen_at": now,
               "expires_at": now + timedelta(hours=1)} | values
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(sa.insert(UserSession.__table__).values(**row))

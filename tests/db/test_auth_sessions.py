"""Login sessions: only the token's SHA-256 is stored; resolve re-reads the account, so expiry, idleness, logout,
deactivation and role changes take effect on the next page run (SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from db.accounts import sessions
from db.accounts.permissions import OPERATOR
from db.accounts.sessions import (
    IDLE_TIMEOUT,
    TOUCH_EVERY,
    create_session,
    resolve,
    revoke,
    revoke_all_for_user,
)
from db.accounts.users import create_user, deactivate, set_password, set_role
from db.store.models import UserSession, utcnow

OP = {"actor": OPERATOR}
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday morning, for tests that set the store's clock


@pytest.fixture
def lea(engine):
    """An active lead with a password."""
    return create_user(engine, "lea", "lead", "lead-password", **OP)


def test_the_store_keeps_only_the_tokens_sha256(engine, lea):
    new = create_session(engine, lea.id, client="10.0.0.7")
    assert len(new.token) >= 43  # 32 random bytes, URL-safe base64
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(UserSession.token_hash, UserSession.client, UserSession.expires_at, UserSession.created_at)
        ).all()
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
        conn.execute(
            sa.update(UserSession).values(
                expires_at=utcnow() - timedelta(seconds=1), created_at=utcnow() - timedelta(hours=13)
            )
        )
    assert resolve(engine, new.token) is None
    with pytest.raises(ValueError, match="positive"):
        create_session(engine, lea.id, lifetime=timedelta(0))


class Clock:
    """The time db.accounts.sessions reads (utcnow), moved by hand: idleness without sleeping."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """db.accounts.sessions' clock, starting at T0."""
    clock = Clock(T0)
    monkeypatch.setattr(sessions, "utcnow", clock)
    return clock


def last_seen(engine) -> datetime:
    """The only session row's last_seen_at."""
    with engine.connect() as conn:
        return conn.execute(sa.select(UserSession.last_seen_at)).scalar_one()


def set_last_seen(engine, when: datetime) -> None:
    """Pretend the only session was last used at `when`."""
    with engine.begin() as conn:
        conn.execute(sa.update(UserSession).values(last_seen_at=when))


def test_a_session_idle_longer_than_the_timeout_resolves_to_nobody(engine, lea):
    new = create_session(engine, lea.id)
    idle_since = utcnow() - IDLE_TIMEOUT - timedelta(minutes=1)
    set_last_seen(engine, idle_since)
    assert resolve(engine, new.token) is None
    assert resolve(engine, new.token) is None  # a refused attempt does not revive it
    assert last_seen(engine) == idle_since


def test_a_session_used_within_the_timeout_keeps_working_and_is_touched(engine, lea):
    new = create_session(engine, lea.id)
    set_last_seen(engine, utcnow() - IDLE_TIMEOUT + timedelta(minutes=1))
    before = utcnow()
    assert resolve(engine, new.token) == lea
    assert before <= last_seen(engine) <= utcnow()  # refreshed: a new idle period starts now
    assert resolve(engine, new.token) == lea


def test_the_session_ends_exactly_when_it_has_been_idle_for_the_timeout(engine, lea, clock):
    new = create_session(engine, lea.id)
    set_last_seen(engine, T0 - IDLE_TIMEOUT + timedelta(microseconds=1))
    assert resolve(engine, new.token) == lea
    set_last_seen(engine, T0 - IDLE_TIMEOUT)
    assert resolve(engine, new.token) is None


def test_a_session_in_steady_use_outlives_the_idle_timeout_until_its_lifetime_ends(engine, lea, clock):
    new = create_session(engine, lea.id)
    assert last_seen(engine) == T0
    clock.now = T0 + TOUCH_EVERY - timedelta(seconds=1)  # too soon to write last_seen_at again
    assert resolve(engine, new.token) == lea and last_seen(engine) == T0
    gap = IDLE_TIMEOUT - TOUCH_EVERY  # the longest pause that is always safe (docs/security.md)
    while clock.now + gap < T0 + sessions.SESSION_LIFETIME:
        clock.now += gap
        assert resolve(engine, new.token) == lea, clock.now - T0
        assert last_seen(engine) == clock.now
    assert clock.now - T0 > 5 * IDLE_TIMEOUT  # the loop really went past the idle timeout many times
    clock.now = T0 + sessions.SESSION_LIFETIME
    assert resolve(engine, new.token) is None  # in use or not, the working day is over


def test_last_seen_is_refreshed_well_within_the_idle_timeout():
    assert timedelta(0) < TOUCH_EVERY * 10 <= IDLE_TIMEOUT


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
        open_rows = conn.execute(
            sa.select(sa.func.count()).select_from(UserSession).where(UserSession.revoked_at.is_(None))
        ).scalar_one()
    assert open_rows == 1  # ana's, untouched
    assert resolve(engine, other.token) == ana
    with pytest.raises(PermissionError, match="deactivated"):
        create_session(engine, lea.id)


def test_a_role_change_ends_every_session_of_that_account_and_only_a_change_does(engine, lea):
    tabs = [create_session(engine, lea.id) for _ in range(2)]
    set_role(engine, "lea", "lead", **OP)  # the same role: nothing changes, the tabs stay
    assert all(resolve(engine, t.token) == lea for t in tabs)
    set_role(engine, "lea", "annotator", **OP)
    assert all(resolve(engine, t.token) is None for t in tabs)  # a tab opened as a lead is not one any more
    after = create_session(engine, lea.id)
    assert resolve(engine, after.token).role == "annotator"


def test_a_password_change_ends_every_session_of_that_account_even_a_copied_cookie(engine, lea):
    ana = create_user(engine, "ana", "annotator", "ana-password", **OP)
    victim, copied, other = (
        create_session(engine, ana.id),
        create_session(engine, ana.id),
        create_session(engine, lea.id),
    )
    set_password(engine, "ana", "a-new-password", actor="ana")  # the user's own change ends her tabs too
    assert resolve(engine, victim.token) is None and resolve(engine, copied.token) is None
    assert resolve(engine, other.token) == lea
    mine = create_session(engine, ana.id)
    set_password(engine, "ana", "lead-chose-this", actor="lea")  # a lead's reset, likewise
    assert resolve(engine, mine.token) is None


def test_the_database_refuses_a_raw_token_or_a_session_ending_before_it_starts(engine, lea):
    now = utcnow()
    for values in ({"token_hash": "raw-token"}, {"token_hash": "a" * 64, "expires_at": now - timedelta(hours=1)}):
        row = {
            "token_hash": "b" * 64,
            "user_id": lea.id,
            "created_at": now,
            "last_seen_at": now,
            "expires_at": now + timedelta(hours=1),
        } | values
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(sa.insert(UserSession.__table__).values(**row))

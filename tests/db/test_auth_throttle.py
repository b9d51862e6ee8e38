"""Login back-off: five free failures per account and per client, then a wait that doubles, kept in the store
so it holds across sessions and processes (SQLite and PostgreSQL)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from datetime import timedelta

import pytest
import sqlalchemy as sa

from db.accounts.logins import login, retry_after, wait_after
from db.accounts.permissions import OPERATOR
from db.accounts.sessions import resolve, token_hash
from db.accounts.users import create_user
from db.store.models import LoginAttempt, utcnow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def ana(engine):
    """An annotator with a password."""
    return create_user(engine, "ana", "annotator", "right-password", actor=OPERATOR)


def fail(engine, times: int, username: str = "ana", client: str = "10.0.0.1") -> list[int]:
    """`times` wrong passwords; the wait each answer asked for."""
    return [login(engine, username, "wrong-password", client=client).retry_after for _ in range(times)]


def age_attempts(engine, seconds: float) -> None:
    """Move every recorded attempt `seconds` into the past (instead of sleeping)."""
    with engine.begin() as conn:
        for aid, at in conn.execute(sa.select(LoginAttempt.id, LoginAttempt.attempted_at)).all():
            conn.execute(
                sa.update(LoginAttempt)
                .where(LoginAttempt.id == aid)
                .values(attempted_at=at - timedelta(seconds=seconds))
            )


def test_the_wait_doubles_after_five_failures_and_is_capped():
    assert [wait_after(n) for n in range(8)] == [0, 0, 0, 0, 0, 10, 20, 40]
    assert wait_after(50) == 900


def test_five_wrong_passwords_make_even_the_right_one_wait(engine, ana, caplog):
    with caplog.at_level(logging.WARNING, logger="qrelkit.auth"):
        assert fail(engine, 5) == [0, 0, 0, 0, 10]
        refused = login(engine, "ana", "right-password", client="10.0.0.1")
    assert refused.user is None and refused.session is None and 9 <= refused.retry_after <= 10
    assert "login throttled: user 'ana' from 10.0.0.1" in caplog.text
    assert caplog.text.count("login failed: user 'ana'") == 5
    with engine.connect() as conn:  # a refused wait checks no password and records nothing
        assert conn.execute(sa.select(sa.func.count()).select_from(LoginAttempt)).scalar_one() == 5
    age_attempts(engine, 11)
    ok = login(engine, "ana", "right-password", client="10.0.0.1")
    assert ok.user == ana and ok.retry_after == 0 and resolve(engine, ok.session.token) == ana


def test_each_further_failure_doubles_the_wait(engine, ana):
    fail(engine, 5)
    age_attempts(engine, 11)
    assert fail(engine, 1) == [20]
    age_attempts(engine, 21)
    assert fail(engine, 1) == [40]


def test_the_account_is_throttled_from_every_client(engine, ana):
    for i in range(5):
        fail(engine, 1, client=f"10.0.1.{i}")
    assert login(engine, "ana", "right-password", client="10.9.9.9").retry_after > 0


def test_a_client_spraying_many_accounts_is_throttled(engine, ana):
    for name in ("bob", "cy", "dee", "eve", "fay"):
        fail(engine, 1, username=name)
    assert login(engine, "ana", "right-password", client="10.0.0.1").retry_after > 0
    assert login(engine, "ana", "right-password", client="10.0.0.2").user == ana  # other clients unaffected


def test_a_success_resets_the_account_count_but_not_the_clients(engine, ana):
    fail(engine, 4, client="10.0.0.1")
    assert login(engine, "ana", "right-password", client="10.0.0.2").user == ana
    assert fail(engine, 4, client="10.0.0.3") == [0, 0, 0, 0]  # the account starts again at zero
    assert fail(engine, 1, client="10.0.0.1") == [10]  # the first client's fifth failure


def test_failures_older_than_the_window_are_forgotten(engine, ana):
    fail(engine, 5)
    age_attempts(engine, 31 * 60)
    assert retry_after(engine, "ana", "10.0.0.1") == 0
    assert fail(engine, 1) == [0]


def test_the_back_off_holds_in_another_process(engine, store_url, ana):
    fail(engine, 5)
    code = (
        "import sys; from db.accounts.logins import login; from db.store.engine import get_engine; "
        "r = login(get_engine(sys.argv[1]), 'ana', 'right-password', client='10.0.0.1'); "
        "print(r.user is None, r.retry_after)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, store_url], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out[0] == "True" and 1 <= int(out[1]) <= 10


def test_a_login_prunes_attempts_and_ended_sessions_older_than_thirty_days(engine, ana):
    from db.accounts.sessions import create_session
    from db.store.models import UserSession

    fail(engine, 2)
    old, recent, open_ = (create_session(engine, ana.id) for _ in range(3))
    long_ago = utcnow() - timedelta(days=31)
    with engine.begin() as conn:
        conn.execute(sa.update(LoginAttempt).values(attempted_at=long_ago))
        for new, ended in ((old, long_ago), (recent, utcnow() - timedelta(days=29))):
            conn.execute(
                sa.update(UserSession)
                .where(UserSession.token_hash == token_hash(new.token))
                .values(created_at=ended - timedelta(hours=13), expires_at=ended)
            )
    ok = login(engine, "ana", "right-password", client="10.0.0.1")
    with engine.connect() as conn:
        attempts = conn.execute(sa.select(LoginAttempt.succeeded)).scalars().all()
        kept = set(conn.execute(sa.select(UserSession.token_hash)).scalars())
    assert attempts == [True]  # the two old failures are gone, this login is kept
    assert kept == {token_hash(t.token) for t in (recent, open_, ok.session)}


def _parallel_logins(engine, monkeypatch, attempts: list[tuple[str, str]]) -> tuple[int, list[int]]:
    """Run every (username, client) attempt at once in its own thread; (passwords checked, waits returned).
    A checked password is one scrypt call (the dummy hash for unknown names is made before counting)."""
    import hashlib
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import db.accounts.users as users

    users._DUMMY_HASH = users._DUMMY_HASH or users.hash_password("not a password")
    real, calls, lock = hashlib.scrypt, [0], threading.Lock()

    def counting(*args, **kwargs):
        with lock:
            calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(hashlib, "scrypt", counting)
    start = threading.Barrier(len(attempts))

    def attempt(pair: tuple[str, str]) -> int:
        start.wait()
        return login(engine, pair[0], "wrong-password", client=pair[1]).retry_after

    with ThreadPoolExecutor(len(attempts)) as pool:
        waits = list(pool.map(attempt, attempts))
    return calls[0], waits


def test_forty_simultaneous_guesses_at_one_account_check_at_most_five(engine, ana, monkeypatch):
    checked, waits = _parallel_logins(engine, monkeypatch, [("ana", f"10.1.0.{i}") for i in range(40)])
    assert checked == 5  # the limit, not the 29 the check-then-act login let through
    assert sum(w > 0 for w in waits) >= 35
    with engine.connect() as conn:  # one row per checked attempt, none for a refused wait
        assert conn.execute(sa.select(sa.func.count()).select_from(LoginAttempt)).scalar_one() == 5


def test_forty_simultaneous_guesses_from_one_client_check_at_most_five(engine, ana, monkeypatch):
    checked, _ = _parallel_logins(engine, monkeypatch, [(f"user{i}", "10.2.0.1") for i in range(40)])
    assert checked == 5


def test_a_lead_unlocks_an_account_that_someone_else_locked(engine, ana):
    from db.accounts.logins import unlock

    for i in range(5):
        fail(engine, 1, client=f"10.3.0.{i}")
    assert login(engine, "ana", "right-password", client="10.0.0.9").retry_after > 0
    unlock(engine, "ana", actor=OPERATOR)
    assert login(engine, "ana", "right-password", client="10.0.0.9").user == ana
    with pytest.raises(PermissionError):
        unlock(engine, "ana", actor="ana")


def test_locked_accounts_lists_the_accounts_waiting_now_until_unlocked(engine, ana):
    from db.accounts.logins import locked_accounts, unlock

    create_user(engine, "bo", "annotator", "bo-password-1", actor=OPERATOR)
    fail(engine, 4, "bo")  # four are free: bo does not wait
    fail(engine, 6, "nobody", client="10.5.0.1")  # no such account: nothing to unlock
    for i in range(5):  # five clients, one guess each: the account waits, no client does (the last guess
        fail(engine, 1, client=f"10.4.0.{i}")  # comes just before the checks: the seconds read are exact)
    assert locked_accounts(engine) == {"ana": 10}
    age_attempts(engine, 4)
    assert locked_accounts(engine) == {"ana": 6}
    age_attempts(engine, 7)  # the wait is over, though one more failure would wait 20 s
    assert locked_accounts(engine) == {}
    fail(engine, 1, client="10.4.9.9")
    assert locked_accounts(engine) == {"ana": 20}
    unlock(engine, "ana", actor=OPERATOR)
    assert locked_accounts(engine) == {}
    assert login(engine, "ana", "right-password", client="10.4.9.9").user == ana


def test_sixteen_colleagues_logging_in_at_once_from_one_address_never_wait(engine, monkeypatch):
    """An office behind one proxy at 9:00: every correct password logs in, none is told to wait (an attempt in
    flight is no failure). Before, each attempt counted as a failure until checked, so the sixth waited."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import db.accounts.users as users

    monkeypatch.setitem(users._SCRYPT, "n", 2**10)  # cheap hashes: the test is about the back-off, not scrypt
    names = [f"colleague{i}" for i in range(16)]
    for name in names:
        create_user(engine, name, "annotator", f"{name}-password", actor=OPERATOR)
    start = threading.Barrier(len(names))

    def attempt(name: str):
        start.wait()
        return login(engine, name, f"{name}-password", client="10.9.0.1")

    with ThreadPoolExecutor(len(names)) as pool:
        results = list(pool.map(attempt, names))
    assert [r.retry_after for r in results] == [0] * 16
    assert sorted(r.user.username for r in results if r.user is not None) == sorted(names)
    with engine.connect() as conn:
        assert conn.execute(sa.select(LoginAttempt.succeeded)).scalars().all() == [True] * 16
    assert fail(engine, 6, username="nobody", client="10.9.0.1") == [0, 0, 0, 0, 10, 10]  # guesses still held


def test_an_attempt_left_in_flight_counts_as_a_failure_once_stale(engine, ana):
    """A process that died while checking a password leaves its attempt in flight: after STALE_SECONDS it
    counts as a failure (before that it only holds further attempts, it never refuses them)."""
    from db.accounts.logins import STALE_SECONDS

    with engine.begin() as conn:
        for _ in range(5):
            conn.execute(
                sa.insert(LoginAttempt).values(
                    username="ana", client="10.3.0.1", succeeded=None, attempted_at=utcnow() - timedelta(seconds=1)
                )
            )
    assert retry_after(engine, "ana", "10.4.0.1") == 0  # in flight: not failures (and nothing to wait for)
    age_attempts(engine, STALE_SECONDS)
    # stale: five failures, so a sixth wrong password asks for the doubled wait (20 s); were they not
    # counted, one failure would ask for none
    assert fail(engine, 1, client="10.4.0.1") == [20]

"""A database restart loses no grade and doubles none: pooled connections killed by pg_terminate_backend are
replaced before use (pre-ping), and a grade whose connection dies mid-transaction is recorded once by the retry."""

from __future__ import annotations

import threading
import uuid

import pytest
import sqlalchemy as sa

from db.accounts.sessions import create_session, resolve
from db.grading import next_pair, record_judgment
from db.store.engine import get_engine
from db.store.models import Judgment, JudgmentHistory, User

pytestmark = pytest.mark.postgres


@pytest.fixture
def store_kind() -> str:
    """PostgreSQL only: pg_terminate_backend is a server's; SQLite has no server to restart."""
    return "postgresql"


@pytest.fixture
def outage(store_url, queue):
    """(engine whose connections carry a name of their own, kill(): terminate every one of them now)."""
    name = f"qrelkit_outage_{uuid.uuid4().hex[:12]}"
    engine = get_engine(f"{store_url}&application_name={name}")
    admin = sa.create_engine(store_url)

    def kill() -> int:
        with admin.begin() as conn:
            return len(
                conn.execute(
                    sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :n"),
                    {"n": name},
                ).all()
            )

    yield engine, kill
    engine.dispose()
    admin.dispose()
    get_engine.cache_clear()


def stored(engine) -> tuple[int, int, list[int]]:
    """(judgments, history rows, revisions) of ann1."""
    with engine.connect() as conn:
        uid = conn.execute(sa.select(User.id).where(User.username == "ann1")).scalar_one()
        judgments = conn.execute(sa.select(Judgment.revision).where(Judgment.user_id == uid)).scalars().all()
        history = conn.execute(
            sa.select(sa.func.count()).select_from(JudgmentHistory).where(JudgmentHistory.user_id == uid)
        ).scalar_one()
    return len(judgments), history, sorted(set(judgments))


def test_every_grade_is_stored_once_when_the_connections_are_killed_before_each_grade(outage, queue):
    engine, kill = outage
    token = create_session(engine, 1).token
    for _ in range(12):
        pair = next_pair(engine, "demo", "ann1")
        assert kill() >= 1  # the pooled connection is dead now
        assert resolve(engine, token) is not None  # the page run's session check gets a new connection
        kill()
        record_judgment(engine, pair.pair_id, "ann1", 2)
    assert next_pair(engine, "demo", "ann1") is None
    assert stored(engine) == (12, 12, [1])


def test_a_grade_whose_connection_dies_mid_transaction_is_retried_once_and_stored_once(outage, queue):
    engine, kill = outage
    fired: list[int] = []

    @sa.event.listens_for(engine, "before_cursor_execute")
    def die_before_history(conn, cursor, statement, parameters, *_args) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO JUDGMENT_HISTORY") and parameters["pair_id"] not in fired:
            fired.append(parameters["pair_id"])  # the first attempt of each grade dies, its retry goes through
            threading.Thread(target=kill).start()  # the admin connection ends this very backend
            cursor.execute("SELECT pg_sleep(5)")  # interrupted by the kill

    pairs = sorted(queue.values())[:6]
    for pid in pairs[:6]:
        assert record_judgment(engine, pid, "ann1", 1).changed
    assert fired == pairs[:6]
    sa.event.remove(engine, "before_cursor_execute", die_before_history)
    assert stored(engine) == (6, 6, [1])

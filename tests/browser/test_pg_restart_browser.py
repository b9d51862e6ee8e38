"""Issue 29: PostgreSQL restarted while an annotator's grading tab is open. Before, the tab showed Streamlit's
"This app has encountered an error" and 32 of 32 later key presses did nothing until a reload; now the next key
press stores (the pool replaces the dead connections, and a press that meets the restart is one sentence).

This test restarts the machine's PostgreSQL cluster: every other PostgreSQL test running at that moment loses
its connections. It is marked slow, postgres and browser; run it alone."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.browser.conftest import CHROMIUM, login, serving, wait_idle
from tests.browser.pages import FRAGMENT_BOX, press_grade, shown_fragment_id
from tests.conftest import require

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]
PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
CONFIG = Path("/etc/postgresql")


def restart_postgres() -> None:
    """`pg_ctlcluster VERSION main restart`, then wait until it accepts connections again."""
    version = sorted(p.name for p in CONFIG.iterdir())[-1]
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"], check=True, timeout=120)
    deadline = time.monotonic() + 60
    while subprocess.run(["pg_isready", "-h", "127.0.0.1", "-q"]).returncode != 0:
        assert time.monotonic() < deadline, "PostgreSQL did not come back within 60 s"
        time.sleep(0.5)


def graded(url: str, user: str) -> dict[str, int]:
    from db.store.engine import get_engine

    engine = get_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT f.external_id, j.grade FROM judgments j JOIN users u ON u.id = j.user_id "
                "JOIN pairs p ON p.id = j.pair_id JOIN fragments f ON f.id = p.fragment_id WHERE u.username = :u"
            ),
            {"u": user},
        ).all()
    engine.dispose()
    return dict(rows)


def test_the_next_key_press_stores_after_a_postgresql_restart(chromium, tmp_path) -> None:
    require(os.path.exists(CHROMIUM), f"Debian's Chromium not found at {CHROMIUM}")
    require(CONFIG.is_dir() and os.geteuid() == 0, "needs the machine's PostgreSQL cluster and root to restart it")
    from annotator.demo import build_demo
    from db.store.schema import init_db

    admin = sa.create_engine(PG, pool_pre_ping=True)  # its pooled connection dies with the restart
    schema = f"restart_{uuid.uuid4().hex[:8]}"
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = f"{PG}?options=-csearch_path%3D{schema}"
    try:
        info = build_demo(init_db(url))
        user, _, password = next(u for u in info.users if u[1] == "annotator")
        with serving(url, tmp_path) as server:
            context = chromium.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.set_default_timeout(60_000)
            login(page, server.url, user, password)
            first = shown_fragment_id(page)
            press_grade(page, "2")
            assert graded(url, user).get(first) == 2
            restart_postgres()
            second = shown_fragment_id(page)
            page.evaluate("document.activeElement && document.activeElement.blur()")
            deadline = time.monotonic() + 30
            while graded(url, user).get(second) != 1 and time.monotonic() < deadline:
                page.keyboard.press("1")  # the next press; one that meets the restart is one sentence
                wait_idle(page)
                time.sleep(0.5)
            assert graded(url, user).get(second) == 1
            assert page.get_by_text("This app has encountered an error").count() == 0
            page.locator(FRAGMENT_BOX).wait_for()
            third = shown_fragment_id(page)
            assert third != second
            press_grade(page, "3")  # and grading goes on as usual
            assert graded(url, user).get(third) == 3
            context.close()
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        admin.dispose()

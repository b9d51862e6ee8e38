"""Login sessions in a real browser: reloads, tabs, logout, deactivation, deep links, role refusals,
back-off, and stopping `qrelkit serve`. One behaviour per test, on a server and database of this module's own
(it deactivates accounts and provokes back-off, which must not leak into other modules' demo server)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    CHROMIUM,
    ROOT,
    Server,
    login,
    require,
    serving,
    start_server,
    stop_server,
    until,
    wait_idle,
)
from tests.browser.pages import choose, open_page, show_tab

pytestmark = pytest.mark.browser

ANNOTATOR = ("ana", "ana-demo")
LEAD = ("lea", "lea-demo")
LOGIN_FORM = "[data-testid='stForm']"
LOCKED = ("*uma* <b>x</b>", "uma-password-1")  # an annotator named in Markdown and HTML
SLOW = 90_000  # ms: lead pages compute reports on their first run


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The demo project plus accounts only these tests use, served by `qrelkit serve`."""
    require(os.path.exists(CHROMIUM), f"Debian's Chromium not found at {CHROMIUM}")
    from annotator.demo import build_demo
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.releases import create_release
    from db.store.schema import init_db

    folder = tmp_path_factory.mktemp("browser-sessions")
    db_url = f"sqlite:///{folder / 'sessions.db'}"
    engine = init_db(db_url)
    build_demo(engine)
    create_user(engine, "leo", "lead", "leo-password", actor=OPERATOR)
    create_user(engine, "lex", "lead", "lex-password", actor=OPERATOR)
    create_release(engine, "demo", actor=OPERATOR)
    with serving(db_url, folder) as server:
        yield server


def qrelkit(*args: str) -> subprocess.CompletedProcess:
    """Run the CLI as an operator would, from another process than the server."""
    return subprocess.run(
        [sys.executable, "-m", "annotator", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )


def logged_in_as(page, username: str) -> bool:
    """True when the sidebar names `username` and no login form is shown (waits for the sidebar's name, or for
    the login form that says it will not come)."""
    named = page.get_by_test_id("stSidebar").get_by_text(username, exact=False)
    named.or_(page.locator(LOGIN_FORM)).first.wait_for()
    wait_idle(page)
    return named.count() > 0 and page.locator(LOGIN_FORM).count() == 0


def shows_login_form(page) -> bool:
    """True when the login form, and no logged-in sidebar, is what the page shows (waits for the form)."""
    page.get_by_role("button", name="Log in").wait_for(state="visible")
    wait_idle(page)
    return page.locator(LOGIN_FORM).count() == 1 and page.get_by_role("button", name="Log out").count() == 0


def session_cookie(page) -> dict | None:
    """The browser's login cookie, if it has one."""
    return next((c for c in page.context.cookies() if c["name"] == "qrelkit_session"), None)


def wait_for_cookie(page, present: bool = True) -> None:
    """Wait until the page's script has set (or removed) the login cookie: it runs once st.html draws it, after
    the run that sends it has ended."""
    page.wait_for_function(
        "want => document.cookie.split('; ').some(c => c.startsWith('qrelkit_session=')) === want",
        arg=present,
        polling=100,
    )


def test_the_login_password_is_a_current_password_for_password_managers(server: Server, page) -> None:
    """Streamlit marks a password field `new-password` by default, so managers offered to generate one at login;
    the login form asks for the saved one instead."""
    page.goto(server.url)
    field = page.locator("input[type='password']")
    expect(field).to_have_count(1, timeout=SLOW)
    expect(field).to_have_attribute("autocomplete", "current-password")


def test_a_reload_keeps_the_session(server: Server, page) -> None:
    login(page, server.url, *ANNOTATOR)
    wait_for_cookie(page)  # the page's script writes the cookie once the first page is drawn
    cookie = session_cookie(page)
    assert cookie is not None and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    page.reload()
    assert logged_in_as(page, "ana")


def test_a_second_tab_shares_the_session(server: Server, page) -> None:
    login(page, server.url, *ANNOTATOR)
    wait_for_cookie(page)
    second = page.context.new_page()
    second.goto(f"{server.url}/guideline")
    assert logged_in_as(second, "ana")


def test_logging_out_ends_the_session_in_the_other_tab_too(server: Server, page) -> None:
    login(page, server.url, *ANNOTATOR)
    wait_for_cookie(page)
    second = page.context.new_page()
    second.goto(server.url)
    assert logged_in_as(second, "ana")
    page.get_by_role("button", name="Log out").click()
    assert shows_login_form(page)
    wait_for_cookie(page, present=False)  # the login page's script removes the ended token
    assert session_cookie(page) is None
    second.locator("[data-testid='stSidebarNavLink']", has_text="Guideline").first.click()  # its next action
    assert shows_login_form(second)
    second.reload()
    assert shows_login_form(second)


def test_a_tab_logged_out_elsewhere_cannot_grade_by_key_press(server: Server, page) -> None:
    import sqlalchemy as sa

    from db.store.engine import get_engine
    from db.store.models import Judgment, User

    def judged_by_ben() -> int:
        with get_engine(server.db_url).connect() as conn:
            return conn.execute(
                sa.select(sa.func.count())
                .select_from(Judgment)
                .join(User, User.id == Judgment.user_id)
                .where(User.username == "ben")
            ).scalar_one()

    login(page, server.url, "ben", "ben-demo")
    page.get_by_role("button", name=re.compile("Answers fully")).wait_for()
    wait_for_cookie(page)  # the second tab finds the session through it
    other = page.context.new_page()
    other.goto(server.url)
    assert logged_in_as(other, "ben")
    before = judged_by_ben()
    other.get_by_role("button", name="Log out").click()
    assert shows_login_form(other)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("3")  # the grading panel's shortcut, in the tab that still shows it
    assert shows_login_form(page)
    assert judged_by_ben() == before


def test_a_deactivated_leads_open_tab_cannot_create_a_release(server: Server, page) -> None:
    from db.releases import list_releases
    from db.store.engine import get_engine

    login(page, f"{server.url}/lead_releases", "leo", "leo-password")
    page.get_by_role("button", name="Create release").wait_for(timeout=SLOW)
    wait_idle(page, SLOW)
    before = len(list_releases(get_engine(server.db_url), "demo"))
    qrelkit("user", "deactivate", "leo", "--db", server.db_url)
    page.get_by_role("button", name="Create release").click()
    assert shows_login_form(page)
    assert len(list_releases(get_engine(server.db_url), "demo")) == before


def test_a_deactivated_leads_open_tab_gets_no_release_download(server: Server, page) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from db.releases import release_files
    from db.store.engine import get_engine

    login(page, f"{server.url}/lead_releases", "lex", "lex-password")
    button = page.get_by_role("button", name="TREC qrels (gains)")
    button.wait_for(timeout=SLOW)
    wait_idle(page)
    with page.expect_download() as allowed:
        button.click()
    expected = release_files(get_engine(server.db_url), "demo", 1)["qrels.trec"]
    assert allowed.value.path().read_bytes() == expected  # a lead in force gets the file
    qrelkit("user", "deactivate", "lex", "--db", server.db_url)
    wait_idle(page)
    with pytest.raises(PlaywrightTimeout), page.expect_download(timeout=8_000):
        button.click()


def test_a_deep_link_opens_its_page_after_login(server: Server, page) -> None:
    page.goto(f"{server.url}/lead_agreement")
    assert shows_login_form(page)
    login(page, None, *LEAD)
    page.get_by_role("heading", name="Agreement").wait_for(timeout=SLOW)
    assert page.url.rstrip("/").endswith("/lead_agreement")
    assert "Page not found" not in page.inner_text("body")


def test_an_annotator_on_a_lead_link_is_told_it_is_not_allowed(server: Server, page) -> None:
    page.goto(f"{server.url}/lead_releases")
    login(page, None, *ANNOTATOR)
    alert = page.get_by_test_id("stAlert").filter(has_text="Not allowed for your role")
    alert.wait_for()
    assert "Page not found" not in page.inner_text("body")
    assert page.get_by_role("button", name="Create release").count() == 0


def test_the_toolbar_offers_no_deploy_button_or_developer_menu(server: Server, page) -> None:
    login(page, server.url, *ANNOTATOR)
    expect(page.get_by_test_id("stToolbar")).to_be_attached()  # drawn by lazily loaded code: read it once it is there
    assert page.get_by_test_id("stAppDeployButton").count() == 0
    assert page.get_by_role("button", name="Deploy").count() == 0
    menu = page.get_by_test_id("stMainMenu")
    if menu.count():
        menu.click()
        items = page.get_by_test_id("stMainMenuList").inner_text()
        assert "Clear cache" not in items and "Developer" not in items


def test_a_lead_unlocks_an_account_that_wrong_passwords_locked(server: Server, page) -> None:
    """Wrong passwords from other machines lock the account (not this browser's address): its owner is told to
    wait; the lead unlocks it on the Project page's Annotators tab, and the owner logs in."""
    import sqlalchemy as sa

    from db.accounts import logins
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.store.engine import get_engine
    from db.store.models import LoginAttempt, utcnow

    engine = get_engine(server.db_url)
    create_user(engine, LOCKED[0], "annotator", LOCKED[1], actor=OPERATOR)
    with engine.begin() as conn:  # nine failures just now (five, then one after each of four waits): 160 s to wait
        conn.execute(
            sa.insert(LoginAttempt),
            [
                {"username": LOCKED[0], "client": f"10.8.0.{i}", "succeeded": False, "attempted_at": utcnow()}
                for i in range(9)
            ],
        )
    assert logins.locked_accounts(engine)[LOCKED[0]] > 100
    page.goto(server.url)
    wait_idle(page)
    page.get_by_role("textbox", name="Username").fill(LOCKED[0])
    page.get_by_role("textbox", name="Password").fill(LOCKED[1])  # the right one: it must wait all the same
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_test_id("stAlert").filter(has_text="Too many attempts; try again in")).to_be_visible()

    login(page, None, *LEAD)
    open_page(page, "Project")
    show_tab(page, "Annotators")
    name = re.escape(LOCKED[0]).replace("/", r"\/")  # Playwright passes the pattern on as /…/: escape its /
    choose(page, "Account", re.compile(rf"^{name}$"))
    page.get_by_role("button", name="Unlock").click()
    expect(page.get_by_text(f"{LOCKED[0]} is unlocked and can log in now.", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Unlock")).to_have_count(0)  # nobody else waits
    main = page.get_by_test_id("stMain")
    assert main.locator("b, em, strong").filter(has_text="uma").count() == 0  # the name made no markup
    assert LOCKED[0] not in logins.locked_accounts(engine)

    page.get_by_role("button", name="Log out").click()
    assert shows_login_form(page)
    login(page, None, *LOCKED)
    assert logged_in_as(page, LOCKED[0])


def failed_attempts(server: Server, username: str) -> int:
    """Failed password attempts the store has recorded for `username`."""
    import sqlalchemy as sa

    from db.store.engine import get_engine
    from db.store.models import LoginAttempt

    with get_engine(server.db_url).connect() as conn:
        return conn.execute(
            sa.select(sa.func.count())
            .select_from(LoginAttempt)
            .where(LoginAttempt.username == username, LoginAttempt.succeeded.is_(False))
        ).scalar_one()


def countdown(message: str) -> int:
    """The seconds a "Too many attempts; try again in N s." message asks to wait."""
    return int(message.split("try again in")[1].split("s")[0])


def backoff_left(server: Server, username: str) -> int:
    """Seconds the store makes `username`'s next attempt, from the client of its latest failure, still wait:
    what the login form would answer now."""
    import sqlalchemy as sa

    from db.accounts.logins import retry_after
    from db.store.engine import get_engine
    from db.store.models import LoginAttempt

    engine = get_engine(server.db_url)
    with engine.connect() as conn:
        client = conn.execute(
            sa.select(LoginAttempt.client)
            .where(LoginAttempt.username == username)
            .order_by(LoginAttempt.id.desc())
            .limit(1)
        ).scalar_one()
    return retry_after(engine, username, client)


def test_five_wrong_passwords_make_the_next_attempt_wait(server: Server, page) -> None:
    # The last login of this module: afterwards this browser's address itself must wait (per-client back-off).
    page.goto(server.url)
    wait_idle(page)
    failed = failed_attempts(server, "ben")
    for attempt in range(1, 6):
        page.get_by_role("textbox", name="Username").fill("ben")
        page.get_by_role("textbox", name="Password").fill("not-bens-password")
        page.get_by_role("button", name="Log in").click()
        # each click must reach the server before the next (a click during a run can replace the one before)
        until(page, lambda n=failed + attempt: failed_attempts(server, "ben") >= n, what=f"failed login {attempt}")
        wait_idle(page)
    message = page.get_by_test_id("stAlert").filter(has_text="Too many attempts; try again in")
    message.wait_for()  # the 5th answer
    fifth = message.inner_text()
    # The next answer must be told apart from this one: wait until the store's countdown (what the server will
    # answer) is a second below the one shown.
    until(page, lambda: backoff_left(server, "ben") < countdown(fifth), what="the back-off to tick below the 5th's")
    page.get_by_role("textbox", name="Username").fill("ben")
    page.get_by_role("textbox", name="Password").fill("ben-demo")  # the right one, too soon
    page.get_by_role("button", name="Log in").click()
    expect(message).not_to_have_text(fifth, use_inner_text=True)
    wait_idle(page)
    seconds = countdown(message.inner_text())
    assert 1 <= seconds < countdown(fifth) <= 10
    assert shows_login_form(page)


def port_is_free(port: int) -> bool:
    """True when nothing accepts connections on 127.0.0.1:port."""
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def wait_for_free_port(port: int, seconds: float) -> None:
    """Poll until nothing listens on 127.0.0.1:port, for at most `seconds` (the caller asserts it is free)."""
    deadline = time.monotonic() + seconds
    while not port_is_free(port) and time.monotonic() < deadline:
        time.sleep(0.2)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stopping_qrelkit_serve_frees_the_port(server: Server, tmp_path, signum: int) -> None:
    proc, base_url = start_server(server.db_url, tmp_path / "serve.log")
    port = int(base_url.rsplit(":", 1)[1])
    try:
        assert not port_is_free(port)
        os.kill(proc.pid, signum)  # the `qrelkit serve` process only, not its group
        proc.wait(timeout=30)
        wait_for_free_port(port, seconds=10)
        assert port_is_free(port)
        orphans = subprocess.run(["pgrep", "-f", f"server.port={port}"], capture_output=True, text=True).stdout
        assert orphans.strip() == ""
    finally:
        stop_server(proc)

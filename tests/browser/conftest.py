"""A live `qrelkit serve` on a free port over a temporary SQLite demo database, driven by Debian's Chromium."""

from __future__ import annotations

import inspect
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, require

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# Tests write screenshots to a temporary folder; `python3 scripts/screenshots.py` sets this variable to
# docs/screenshots and runs the browser tests to refresh the README's pictures.
SCREENSHOTS_ENV = "QRELKIT_SCREENSHOTS"
STARTUP_SECONDS = 120  # a cold `streamlit` start on a loaded 2-core CI machine takes tens of seconds
# ms: Playwright's default for every wait, action and expect. CI runs ~900 tests on 2 cores shared by the server,
# Chromium and pytest, so a first page run can take several seconds; a real failure only fails later.
TIMEOUT = 30_000
IDLE = """() => { const app = document.querySelector("[data-testid='stApp']");
    return !!app && app.getAttribute('data-test-connection-state') === 'CONNECTED'
        && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector("[data-testid='stSkeleton']"); }"""


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(base_url: str, proc: subprocess.Popen, timeout: float = STARTUP_SECONDS) -> None:
    """Poll Streamlit's /_stcore/health until it answers ok (or the server dies / time runs out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"qrelkit serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=2) as resp:
                if resp.status == 200 and resp.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"qrelkit serve not healthy at {base_url} after {timeout} s")


def start_server(db_url: str, log: Path) -> tuple[subprocess.Popen, str]:
    """Start `qrelkit serve --db URL --port P` in its own process group; returns it and its base URL."""
    port = free_port()
    env = dict(os.environ, QRELKIT_PROJECT="demo", PYTHONPATH=str(ROOT))
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "annotator", "serve", "--db", db_url, "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url, proc)
    except RuntimeError:
        stop_server(proc)
        raise
    return proc, base_url


def stop_server(proc: subprocess.Popen) -> None:
    """Stop the server we started (its process group holds `qrelkit serve` and its streamlit child)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@dataclass
class Server:
    """A running app: where to point the browser, and the database behind it."""

    url: str
    db_url: str


@contextmanager
def serving(db_url: str, folder: Path) -> Iterator[Server]:
    """`qrelkit serve` over a database a fixture built, stopped (port freed) when the block ends."""
    proc, base_url = start_server(db_url, folder / "serve.log")
    try:
        yield Server(base_url, db_url)
    finally:
        stop_server(proc)


@contextmanager
def serving_demo(tmp_path_factory: pytest.TempPathFactory, label: str) -> Iterator[Server]:
    """The app serving a demo project built afresh in a new temporary folder named after `label`."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    from annotator.demo import build_demo
    from db.store.schema import init_db

    folder = tmp_path_factory.mktemp(label)
    db_url = f"sqlite:///{folder / 'demo.db'}"
    build_demo(init_db(db_url))
    with serving(db_url, folder) as server:
        yield server


@pytest.fixture(scope="package")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app serving a freshly built demo project, shared by the package's tests that only read it."""
    with serving_demo(tmp_path_factory, "browser-demo") as server:
        yield server


@pytest.fixture(scope="package")
def chromium():
    """One headless Chromium for the browser tests (Playwright drives the system binary; no download).
    Package scope: Playwright's sync API keeps an event loop running in the main thread until it exits,
    which would break every later test that calls asyncio.run."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(False, "playwright is not installed")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    """A fresh browser context (no cookies, no session) and page per test."""
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    yield page
    context.close()


def wait_idle(page, timeout: float | None = None) -> None:
    """Wait until Streamlit is connected, no script run is in progress and every element's code has arrived
    (Streamlit loads each element type's code lazily and shows a skeleton meanwhile, so a run can end before its
    text is on screen). Not proof that a click's rerun has even started: first wait for what it shows."""
    page.wait_for_function(IDLE, timeout=timeout, polling=100)


def until(page, holds: Callable[[], bool], timeout: float = TIMEOUT, what: str | None = None) -> None:
    """Re-read the page until `holds()`, for checks `expect` cannot state, such as text with the app's word
    joiners dropped. On timeout it raises, naming what it waited for (`what`, else the check's source line), as
    Streamlit's e2e `wait_until` does: a caller never goes on as if the check had held."""
    deadline = time.monotonic() + timeout / 1000
    while not holds():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"waited {timeout / 1000:g} s for {what or described(holds)}")
        page.wait_for_timeout(200)


def described(check: Callable[[], bool]) -> str:
    """A check as its source says it (a lambda's line), for the timeout's message."""
    try:
        return inspect.getsource(check).strip()
    except (OSError, TypeError):
        return repr(check)


def login(page, base_url: str | None, username: str, password: str) -> None:
    """Open the app (unless base_url is None: use the page as it is) and log in through the form."""
    if base_url is not None:
        page.goto(base_url)
    wait_idle(page)  # typing into the form while its first run still draws it can lose the text
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.get_by_test_id("stSidebar").get_by_text(username, exact=False).first.wait_for()
    wait_idle(page)


def screenshot_dir() -> Path:
    """Where screenshots go: $QRELKIT_SCREENSHOTS when refreshing the README's, else a temporary folder (a test
    run never touches the repository)."""
    chosen = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(chosen) if chosen else Path(tempfile.gettempdir()) / f"qrelkit-screenshots-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot named `name`.png (see screenshot_dir)."""
    path = screenshot_dir() / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path

"""App latency with 1M judgments stored: key press → next fragment visible, and first page after login.

    python3 benchmarks/bench_app.py [--judgments 1000000] [--presses 60] [--logins 5]

Drives Debian's Chromium through Playwright against `qrelkit serve` on a temporary SQLite database filled by the
store benchmark's loader (100 annotators, 2 per pair, all judged but the last 100 pairs of every queue).
Targets (issue 5): key press → next fragment p95 < 400 ms; first page after login < 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from bench_store_judging import build  # noqa: E402  (the store benchmark's 1M-judgment loader)

from db.judging import next_pair, progress  # noqa: E402
from db.projects import add_guideline  # noqa: E402
from db.schema import init_db  # noqa: E402
from db.users import set_password  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server, wait_idle  # noqa: E402

USER, PASSWORD = "ann1", "bench-password"
BOX = ".st-key-fragment_box"
CHANGED = "([sel, old]) => { const e = document.querySelector(sel); return e && e.innerText !== old; }"


def pct(values: list[float], q: int) -> float:
    """The q-th percentile (inclusive method), or the single value."""
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def summary(name: str, ms: list[float], target: float | None = None) -> str:
    """One result line: median, p95, max, and p95 against the target."""
    line = f"{name:<34} n={len(ms):<4} median {statistics.median(ms):7.1f} ms  p95 {pct(ms, 95):7.1f} ms  " \
           f"max {max(ms):7.1f} ms"
    return line + (f"  (p95 / target {target:.0f} ms = {pct(ms, 95) / target:.2f})" if target else "")


def store_timings(engine, samples: int = 20) -> dict[str, list[float]]:
    """What one grading rerun asks the store for, timed alone (ms)."""
    out: dict[str, list[float]] = {"store next_pair": [], "store progress": []}
    for _ in range(samples):
        t = time.perf_counter()
        next_pair(engine, "bench", USER)
        out["store next_pair"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        progress(engine, "bench", USER)
        out["store progress"].append((time.perf_counter() - t) * 1000)
    return out


def login_timings(browser, base_url: str, logins: int) -> list[float]:
    """Click 'Log in' → the first fragment is visible, in fresh browser sessions (ms)."""
    out = []
    for _ in range(logins):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(base_url)
        wait_idle(page)
        page.get_by_role("textbox", name="Username").fill(USER)
        page.get_by_role("textbox", name="Password").fill(PASSWORD)
        t = time.perf_counter()
        page.get_by_role("button", name="Log in").click()
        page.locator(BOX).wait_for()
        out.append((time.perf_counter() - t) * 1000)
        context.close()
    return out


def keypress_timings(browser, base_url: str, presses: int) -> list[float]:
    """Press a grade key → the next fragment's text is on screen (ms); each press saves a judgment."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(base_url)
    wait_idle(page)
    page.get_by_role("textbox", name="Username").fill(USER)
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.locator(BOX).wait_for()
    wait_idle(page)
    out = []
    for i in range(presses):
        before = page.locator(BOX).inner_text()
        page.evaluate("document.activeElement && document.activeElement.blur()")
        t = time.perf_counter()
        page.keyboard.press(str(i % 4))
        page.wait_for_function(CHANGED, arg=[BOX, before])
        out.append((time.perf_counter() - t) * 1000)
        wait_idle(page)
    context.close()
    return out


def main() -> int:
    """Build the database, serve it, drive the browser, print medians / p95 against the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgments", type=int, default=1_000_000)
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--logins", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="qrelkit-bench-app-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        engine = init_db(url)
        t = time.perf_counter()
        build(engine, args.judgments)
        set_password(engine, USER, PASSWORD)
        add_guideline(engine, "bench", (ROOT / "guidelines" / "grading-0-3.md").read_text(encoding="utf-8"))
        print(f"built {args.judgments:,} judgments in {time.perf_counter() - t:.1f} s", flush=True)
        prog = progress(engine, "bench", USER)
        print(f"{USER}: {prog.done:,} judged of {prog.assigned:,} assigned", flush=True)
        results = store_timings(engine)
        proc, base_url = start_server(url, Path(tmp) / "serve.log")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                login_timings(browser, base_url, 1)  # warm-up: first script compile, engine, caches
                logins = login_timings(browser, base_url, args.logins)
                presses = keypress_timings(browser, base_url, args.presses)
                browser.close()
        finally:
            stop_server(proc)
    for name, ms in results.items():
        print(summary(name, ms))
    print(summary("first page after login", logins, 2000))
    print(summary("key press -> next fragment visible", presses, 400))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""App latency with 1M judgments stored: key press → next fragment visible, and first page after login; with
`--context`, the same with grading in context (every fragment a chunk of a 4-chunk document, the neighbours panel
open beside the fragment: key press → next fragment and its neighbours visible), and D → neighbours visible; and
8 annotators grading at once in 8 headless browsers against one `qrelkit serve`.

    python3 benchmarks/bench_app.py [--judgments 1000000] [--presses 60] [--logins 5] [--context]
    python3 benchmarks/bench_app.py --annotators 8 [--judgments 100000] [--presses 40] [--backend sqlite|postgresql]
        [--replicas 2] [--think SECONDS]

Drives Debian's Chromium through Playwright against `qrelkit serve` on a temporary database filled by the store
benchmark's loader (100 annotators, 2 per pair, all judged but the last 100 pairs of every queue).
Targets: one annotator, key press → next fragment p95 < 400 ms and first page after login < 2 s; 8 annotators at
once (each in its own browser process, pressing back to back with no think time unless `--think` gives the mean
seconds an annotator reads before the next press, each wait drawn between half and one and a half of it), key
press → next fragment p95 < 600 ms on 2 cores, and the store holds exactly one judgment (and one history row)
per press, with the grade that was pressed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from bench_store_grading import PG_URL, UNJUDGED_PER_USER, build  # noqa: E402  (the store benchmark's 1M-judgment loader)

from db.accounts.permissions import OPERATOR  # noqa: E402
from db.accounts.users import set_password  # noqa: E402
from db.grading import next_pair, progress  # noqa: E402
from db.projects import BUNDLED_GUIDELINE, add_guideline  # noqa: E402
from db.store.schema import init_db  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server, wait_idle  # noqa: E402

USER, PASSWORD = "ann1", "bench-password"
CONTEXT_USER = "ann2"  # grades in context with a queue of its own (each queue keeps only 100 pairs open)
BOX = ".st-key-fragment_box"
CONTEXT_BOX = ".st-key-context_box"  # annotator/app/components/context.py's panel
CHUNKS = 4  # --context: fragments f1-f4 are document doc0's chunks 0-3, f5-f8 doc1's, …
# Waits run in the page as promises woken by DOM mutations, not as Playwright's polls on every animation frame:
# eight pages polling innerText 60 times a second spent the two cores the app and browsers are measured on.
CHANGED = """([sel, old]) => new Promise(resolve => {
  const done = () => { const e = document.querySelector(sel); return e !== null && e.innerText !== old; };
  if (done()) { resolve(true); return; }
  const watch = new MutationObserver(() => { if (done()) { watch.disconnect(); resolve(true); } });
  watch.observe(document.body, {subtree: true, childList: true, characterData: true});
})"""
SETTLED = """() => new Promise(resolve => {
  const app = document.querySelector("[data-testid='stApp']");
  const done = () => app.getAttribute("data-test-script-state") === "notRunning"
    && app.getAttribute("data-test-connection-state") === "CONNECTED";
  if (done()) { resolve(true); return; }
  const watch = new MutationObserver(() => { if (done()) { watch.disconnect(); resolve(true); } });
  watch.observe(app, {attributes: true});
})"""


def next_fragment(page, before: str, context_before: str | None = None) -> None:
    """Return once the fragment box shows something other than `before` (and, with the context open, once the
    context panel shows something other than `context_before`: the new fragment's neighbours)."""
    page.evaluate(CHANGED, [BOX, before])
    if context_before is not None:
        page.evaluate(CHANGED, [CONTEXT_BOX, context_before])


def chunk_documents(engine) -> None:
    """Make every fragment a chunk of a document: f1-f4 doc0 at positions 0-3, f5-f8 doc1, … (what an import
    with doc_id and position stores), so the neighbours panel has something to show for every pair."""
    with engine.begin() as conn:
        conn.exec_driver_sql(
            f"UPDATE fragments SET doc_id = 'doc' || ((id - 1) / {CHUNKS}), position = (id - 1) % {CHUNKS}"
        )


def open_context(page) -> float:
    """Press D (the fragment's neighbours) and return ms until the context panel is visible; the app is idle
    after."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    t = time.perf_counter()
    page.keyboard.press("d")
    page.locator(CONTEXT_BOX).wait_for()
    took = (time.perf_counter() - t) * 1000
    settle(page)
    return took


def close_context(page) -> None:
    """Press Escape and wait until the context panel is gone and the app idle."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Escape")
    page.locator(CONTEXT_BOX).wait_for(state="detached")
    settle(page)


def settle(page) -> None:
    """Return once the app's script run is over (the press's rerun), without polling."""
    page.evaluate(SETTLED)


def pct(values: list[float], q: int) -> float:
    """The q-th percentile (inclusive method), or the single value."""
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def summary(name: str, ms: list[float], target: float | None = None) -> str:
    """One result line: median, p95, max, and p95 against the target."""
    line = (
        f"{name:<34} n={len(ms):<4} median {statistics.median(ms):7.1f} ms  p95 {pct(ms, 95):7.1f} ms  "
        f"max {max(ms):7.1f} ms"
    )
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


def log_in(page, base_url: str, user: str) -> None:
    """Open the app and log in as `user` until the first fragment is on screen and the app is idle."""
    page.goto(base_url)
    wait_idle(page)
    page.get_by_role("textbox", name="Username").fill(user)
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.locator(BOX).wait_for()
    wait_idle(page)


def press_keys(
    page, presses: int, context: bool = False, think: float = 0.0, seed: int = 0
) -> tuple[list[float], dict[str, int]]:
    """Press grade keys back to back (or `think` seconds apart on average, the time spent reading): each press →
    the next fragment's text on screen (ms; with `context`, the open context panel showing its neighbours too),
    and which grade each fragment was given (each press saves a judgment)."""
    import random

    timings, pressed = [], {}
    reading = random.Random(seed)
    for i in range(presses):
        if think:
            time.sleep(reading.uniform(0.5 * think, 1.5 * think))
        before = page.locator(BOX).inner_text()
        context_before = page.locator(CONTEXT_BOX).inner_text() if context else None
        fragment = before.split("fragment ", 1)[1].split()[0]
        page.evaluate("document.activeElement && document.activeElement.blur()")
        t = time.perf_counter()
        page.keyboard.press(str(i % 4))
        next_fragment(page, before, context_before)
        timings.append((time.perf_counter() - t) * 1000)
        pressed[fragment] = i % 4
        settle(page)
    return timings, pressed


def keypress_timings(browser, base_url: str, presses: int) -> list[float]:
    """One annotator's key press → next fragment times (ms), in a fresh browser session."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    log_in(page, base_url, USER)
    timings, _ = press_keys(page, presses)
    context.close()
    return timings


def context_timings(browser, base_url: str, presses: int, opens: int = 10) -> tuple[list[float], list[float]]:
    """Grading in context as CONTEXT_USER, in a fresh browser session: D → neighbours visible (`opens` times,
    Escape between), then with the neighbours open, key press → next fragment and its neighbours visible (ms)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    log_in(page, base_url, CONTEXT_USER)
    opened = []
    for _ in range(opens):
        opened.append(open_context(page))
        close_context(page)
    open_context(page)
    timings, _ = press_keys(page, presses, context=True)
    context.close()
    return opened, timings


def grader(base_url: str, user: str, presses: int, start, results, think: float = 0.0) -> None:
    """One annotator in their own browser process: log in, wait for the others, then press grade keys back to
    back; reports (user, press → next fragment ms, {fragment id: grade pressed})."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(120_000)
        try:
            log_in(page, base_url, user)
        except Exception as exc:  # report at once and release the others from the barrier: no hang
            results.put((user, None, f"could not log in ({type(exc).__name__}: {str(exc).splitlines()[0]})"))
            start.abort()
            return
        try:
            start.wait()
        except threading.BrokenBarrierError:
            results.put((user, None, "stopped: another grader could not log in"))
            return
        timings, pressed = press_keys(page, presses, think=think, seed=int(user.removeprefix("ann")))
        browser.close()
    results.put((user, timings, pressed))


def stored(engine, users: list[str]) -> tuple[dict[str, dict[str, int]], int]:
    """Each user's judgments as {fragment id: grade}, and how many history rows they have."""
    from db.store.frames import judgments_frame

    frame = judgments_frame(engine, "bench")
    mine = frame[frame.annotator.isin(users)]
    grades = {u: dict(zip(g.fragment_id, g.grade.astype(int), strict=True)) for u, g in mine.groupby("annotator")}
    with engine.connect() as conn:
        history = conn.exec_driver_sql(
            "SELECT count(*) FROM judgment_history h JOIN users u ON u.id = h.user_id WHERE u.username IN "
            f"({', '.join(repr(u) for u in users)})"
        ).scalar_one()
    return grades, int(history)


@contextmanager
def database(backend: str, folder: Path) -> Iterator[str]:
    """A fresh database URL: a SQLite file in `folder`, or a throwaway PostgreSQL schema dropped afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'bench.db'}"
        return
    import sqlalchemy as sa

    schema = f"bench_app_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    try:
        yield f"{PG_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


def concurrent_run(
    backend: str, judgments: int, annotators: int, presses: int, replicas: int = 1, think: float = 0.0
) -> bool:
    """8 (or `annotators`) browsers grading at once against one server (or `annotators` on each of `replicas`
    servers over one database); prints p50/p95 and the store check."""
    annotators *= replicas
    users = [f"ann{u}" for u in range(1, annotators + 1)]
    with tempfile.TemporaryDirectory(prefix="qrelkit-bench-app-") as tmp, database(backend, Path(tmp)) as url:
        engine = init_db(url)
        t = time.perf_counter()
        build(engine, judgments)
        for user in users:
            set_password(engine, user, PASSWORD, actor=OPERATOR)
        print(f"[{backend}] built {judgments:,} judgments in {time.perf_counter() - t:.1f} s", flush=True)
        before, history_before = stored(engine, users)
        servers = [start_server(url, Path(tmp) / f"serve{r}.log") for r in range(replicas)]
        ctx = multiprocessing.get_context("spawn")
        start, results = ctx.Barrier(annotators), ctx.Queue()
        workers = [
            ctx.Process(target=grader, args=(servers[i % replicas][1], u, presses, start, results, think), daemon=True)
            for i, u in enumerate(users)
        ]
        try:
            for w in workers:
                w.start()
            reports = []
            for _ in workers:
                report = results.get(timeout=1800)
                if report[1] is None:  # a grader could not log in: name it and stop now
                    print(f"[{backend}] FAILED: grader {report[0]} {report[2]}", flush=True)
                    for w in workers:
                        w.terminate()
                    return False
                reports.append(report)
            for w in workers:
                w.join()
        finally:
            for proc, _ in servers:
                stop_server(proc)
        after, history_after = stored(engine, users)
        engine.dispose()
    timings = [ms for _, per_user, _ in reports for ms in per_user]
    label = f"{annotators} at once" + (f" on {replicas} servers" if replicas > 1 else "")
    label += f", {think:g} s reading between presses" if think else ", back to back"
    print(summary(f"[{backend}] {label}: key press -> next", timings, 600 if replicas == 1 else 800))
    lost = shown_twice = extra = wrong = 0
    for user, _, pressed in reports:
        new = {f: g for f, g in after.get(user, {}).items() if f not in before.get(user, {})}
        lost += len(set(pressed) - set(new))  # pressed, yet no judgment
        shown_twice += presses - len(pressed)  # a graded fragment came back and was pressed again
        extra += len(set(new) - set(pressed))  # a judgment nobody pressed
        wrong += sum(new[f] != g for f, g in pressed.items() if f in new)
    expected = annotators * presses
    made = sum(len(after.get(u, {})) - len(before.get(u, {})) for u in users)
    print(
        f"[{backend}] judgments made {made} of {expected} presses; history rows +{history_after - history_before}; "
        f"lost {lost}, shown twice {shown_twice}, unpressed {extra}, wrong grade {wrong}"
    )
    return made == expected == history_after - history_before and lost == shown_twice == extra == wrong == 0


def main() -> int:
    """Build the database, serve it, drive the browser(s), print medians / p95 against the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgments", type=int, default=None, help="default 1,000,000 (100,000 with --annotators)")
    parser.add_argument("--presses", type=int, default=None, help="per annotator (default 60; 40 with --annotators)")
    parser.add_argument("--logins", type=int, default=5)
    parser.add_argument("--annotators", type=int, default=0, help="grade with this many browsers at once")
    parser.add_argument(
        "--context",
        action="store_true",
        help="one annotator: also grade with the neighbours panel open (fragments chunked into "
        f"{CHUNKS}-chunk documents)",
    )
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        action="append",
        help="with --annotators (repeatable; default both, SQLite first)",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="with --annotators: this many servers over one database, --annotators browsers on each "
        "(PostgreSQL; target p95 800 ms)",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="with --annotators: mean seconds each annotator reads before pressing (default 0: back to back)",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanups: stop the server, drop the schema
    if args.annotators:
        ok = [
            concurrent_run(
                backend, args.judgments or 100_000, args.annotators, args.presses or 40, args.replicas, args.think
            )
            for backend in args.backend or (("postgresql",) if args.replicas > 1 else ("sqlite", "postgresql"))
        ]
        return 0 if all(ok) else 1
    args.judgments, args.presses = args.judgments or 1_000_000, args.presses or 60
    if args.presses > UNJUDGED_PER_USER:
        parser.error(f"--presses {args.presses}: every queue keeps only {UNJUDGED_PER_USER} pairs open")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="qrelkit-bench-app-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        engine = init_db(url)
        t = time.perf_counter()
        build(engine, args.judgments)
        set_password(engine, USER, PASSWORD, actor=OPERATOR)
        add_guideline(engine, "bench", BUNDLED_GUIDELINE.read_text(encoding="utf-8"), actor=OPERATOR)
        if args.context:
            chunk_documents(engine)
            set_password(engine, CONTEXT_USER, PASSWORD, actor=OPERATOR)
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
                if args.context:
                    opened, in_context = context_timings(browser, base_url, args.presses)
                browser.close()
        finally:
            stop_server(proc)
        if args.context:
            results["store pair_context"] = context_store_timings(engine)
    for name, ms in results.items():
        print(summary(name, ms))
    print(summary("first page after login", logins, 2000))
    print(summary("key press -> next fragment visible", presses, 400))
    if args.context:
        print(summary("D -> neighbours visible", opened))
        print(summary("in context: press -> next + nbrs", in_context, 400))
    return 0


def context_store_timings(engine, samples: int = 20) -> list[float]:
    """db.context.pair_context for the user's next pair, timed alone (ms): what the open panel asks the store
    for on each press."""
    from db.context import pair_context

    pair = next_pair(engine, "bench", CONTEXT_USER)
    assert pair is not None
    out = []
    for _ in range(samples):
        t = time.perf_counter()
        pair_context(engine, "bench", pair.pair_id)
        out.append((time.perf_counter() - t) * 1000)
    return out


if __name__ == "__main__":
    sys.exit(main())

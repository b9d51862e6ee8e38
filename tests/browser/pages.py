"""What the browser tests share, in one place (no test module imports another): running the CLI to build a
project, serving it, page helpers that wait for what they need before they return, and the data two files
build their projects from. The server, login and idle waits live in tests/browser/conftest.py."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.browser.conftest import ROOT, Server, free_port, login, stop_server, until, wait_healthy
from tests.browser.conftest import wait_idle as wait_idle_within
from tests.helpers import RESULTS_LEAD

PLANT = "http://127.0.0.1:9"  # the discard port: nothing answers, and no request may even be tried
MARKUP_TAGS = "img, script, iframe, a, b, i, strong, em, del, code, li, h1, h2, h3, h4, h5, h6"
FRAGMENT_BOX = ".st-key-fragment_box"
MARKDOWN_NAME = "![t](http://127.0.0.1:9/x.png)"
HTML_QUERY = "<b>x</b>"
SLOW = 90_000  # ms: the first agreement report or evaluation of a session is computed, then cached
# The Evaluate page as `qrelkit eval` is asked for it: metrics and cutoffs (test_results_browser, test_scale_evaluate).
PAGE_METRICS = "P@k,recall@k,ndcg@k,success@k,judged@k,mrr,map,rprec,bpref,ndcg,recall"
KS = "1,3,5,10,20,100"
AGREEMENT_LEAD = ("lead", "lead-password-1")  # the lead of test_agreement's and test_calibration's stores
DEMO_LEAD = ("lea", "lea-demo")  # the demo project's lead (`qrelkit demo`, the demo_server fixture)
PROGRESS = re.compile(r"Overall: (\d+) / (\d+) judged")


def wait_drawn(page, timeout: float = SLOW) -> None:
    """Wait until the script run is over and drawn, allowing a slow page's first run (a report, a diagnosis)."""
    wait_idle_within(page, timeout)


def qrelkit(*args: str | Path, stdin: str = "") -> None:
    """Run one `qrelkit` command in this process (stdin holds e.g. a password) and require success."""
    from annotator.cli import main

    saved = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        assert main([str(a) for a in args]) == 0, args
    finally:
        sys.stdin = saved


def serve(db_url: str, project: str, folder: Path) -> Iterator[Server]:
    """`qrelkit serve` on a free port with `project` preselected, until the caller's fixture ends."""
    port = free_port()
    env = dict(os.environ, QRELKIT_PROJECT=project, PYTHONPATH=str(ROOT))
    with (folder / "serve.log").open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "annotator", "serve", "--db", db_url, "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        yield Server(f"http://127.0.0.1:{port}", db_url)
    finally:
        stop_server(proc)


def accounts(db: str, *names: tuple[str, str]) -> None:
    """`qrelkit user add NAME --role ROLE --password-stdin` for each (name, role); password NAME-password."""
    for name, role in names:
        qrelkit("user", "add", name, "--role", role, "--password-stdin", "--db", db, stdin=f"{name}-password\n")


def open_page(page, title: str) -> None:
    """Open another page from the sidebar menu and wait until its address shows and its run is done."""
    before = page.url
    link = page.get_by_test_id("stSidebarNav").get_by_role("link", name=re.compile(f"{title}$"))
    for attempt in range(3):  # a click landing while the login's follow-up run redraws the menu can be lost
        wait_idle_within(page)
        link.click()
        try:
            page.wait_for_function("old => location.href !== old", arg=before, timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    wait_idle_within(page)
    if page.locator(FRAGMENT_BOX).count():  # st.html draws the fragment a moment after the run ends
        expect(page.locator(".qrelkit-fragment")).to_be_visible()
    assert page.get_by_test_id("stException").all_inner_texts() == [], (
        title,
        page.get_by_test_id("stException").all_inner_texts(),
    )


def show_tab(page, name: str) -> None:
    """Open a tab and wait until it is the selected one and every element in it is drawn."""
    tab = page.get_by_role("tab", name=name)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    wait_idle_within(page)


def main_text(page) -> str:
    """Everything the main area and the sidebar show, as text."""
    return page.get_by_test_id("stMain").inner_text() + "\n" + page.get_by_test_id("stSidebar").inner_text()


def wait_for_texts(page, *texts: str) -> None:
    """Wait until the main area and the sidebar show every one of `texts` (elements, tab panels and st.html
    content are drawn after the run that sends them); the caller asserts them."""
    until(page, lambda: all(text in main_text(page) for text in texts))


def tiles(page) -> dict[str, tuple[str, str]]:
    """Each headline metric as label → (value, caption under it), as the browser shows them (read once the
    tiles, drawn by lazily loaded code, are on screen)."""
    expect(page.get_by_test_id("stMetric").first).to_be_visible()
    wait_drawn(page)
    out = {}
    columns = page.locator("[data-testid='stColumn']").filter(has=page.get_by_test_id("stMetric"))
    for i in range(columns.count()):
        column = columns.nth(i)
        label = column.get_by_test_id("stMetricLabel").inner_text().strip()
        value = column.get_by_test_id("stMetricValue").inner_text().strip()
        out[label] = (value, column.get_by_test_id("stCaptionContainer").first.inner_text().strip())
    return out


def judgments(annotators: list[str], seed: int) -> list[dict]:
    """Seeded grades on 0–3 for 6 queries × 8 fragments, each annotator off by one now and then; on the
    query with HTML in its id the planted annotator disagrees by three grades (the most disputed pair)."""
    rng = np.random.default_rng(seed)
    queries = ["q1", "q2", "q3", "q4", "q5", HTML_QUERY]
    rows = []
    for q, query in enumerate(queries):
        for f in range(8):
            truth = int(rng.choice(4, p=[0.4, 0.3, 0.2, 0.1]))
            for annotator in annotators:
                grade = int(np.clip(truth + rng.choice([-1, 0, 1], p=[0.15, 0.7, 0.15]), 0, 3))
                if query == HTML_QUERY and f == 0:
                    grade = 3 if annotator == MARKDOWN_NAME else 0
                rows.append({"query_id": query, "fragment_id": f"f{q}_{f}", "annotator": annotator, "grade": grade})
    return rows


def follow_lead_link(page, title: str, heading: str | None = None) -> None:
    """Follow the sidebar link `title` to a lead page and wait for its heading (`title` unless the page titles
    itself otherwise) and the run that draws it, generously: these tests share two cores with the server and
    the browser. A page that does not open fails with what it shows instead (a login form, an error)."""
    page.locator("[data-testid='stSidebarNavLink']", has_text=title).first.click(timeout=SLOW)
    try:
        page.get_by_role("heading", name=heading or title).first.wait_for(timeout=SLOW)
    except PlaywrightTimeout as exc:
        shown = page.locator("[data-testid='stApp']").inner_text()[:600]
        raise AssertionError(f"{title} did not open at {page.url}; the page shows: {shown!r}") from exc
    wait_drawn(
        page
    )  # the title comes first: let the run that draws it finish (an idle moment before it proves nothing)


def open_lead_page(page, server: Server, title: str, lead: tuple[str, str] = RESULTS_LEAD) -> None:
    """Log in as `lead` and follow the sidebar link to a lead page."""
    login(page, server.url, *lead)
    follow_lead_link(page, title)


def engine_of(server: Server):
    """The database behind the server, to check what the browser wrote."""
    from db.store.engine import get_engine

    return get_engine(server.db_url)


def overall(page) -> tuple[int, int]:
    """(done, assigned) read from the progress bar's label."""
    match = PROGRESS.search(page.get_by_test_id("stProgress").first.inner_text())
    assert match, "progress label not found"
    return int(match[1]), int(match[2])


def shown_fragment_id(page) -> str:
    """External id of the fragment on screen, from the fragment box's '… · fragment ID' line."""
    line = page.locator(FRAGMENT_BOX).get_by_text(re.compile(r"fragment \S+$")).first.inner_text()
    return line.rsplit("fragment ", 1)[1].strip()


def press(page, key: str) -> None:
    """Press a key with the focus outside any input (where a grade key would be typed instead)."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)


def press_grade(page, key: str) -> None:
    """Press a grade key once the app is idle, and wait until the next fragment is on screen and the run ends.
    The box is read once st.html has put the fragment in: read before, its later arrival would pass for the
    next pair."""
    box = page.locator(FRAGMENT_BOX)
    wait_idle_within(page)
    expect(box.locator(".qrelkit-fragment")).to_be_visible()
    before = box.inner_text()
    press(page, key)
    page.wait_for_function(
        "([sel, old]) => { const e = document.querySelector(sel); return e && e.innerText !== old; }",
        arg=[FRAGMENT_BOX, before],
    )
    wait_idle_within(page)


def literal_prefix(pattern: re.Pattern) -> str:
    """Text every match of `pattern` starts with, read off a pattern anchored at the start (`^` or `\\A`): its
    leading plain characters and escaped punctuation, up to the first other regex syntax (a character that a
    quantifier follows is left out).
    "" when the pattern is not anchored, has alternatives, ignores case or is verbose."""
    source = pattern.pattern
    anchor = next((a for a in ("^", "\\A") if source.startswith(a)), None)
    if anchor is None or "|" in source or pattern.flags & (re.IGNORECASE | re.VERBOSE):
        return ""
    prefix, i = "", len(anchor)
    while i < len(source):
        char = source[i]
        if char == "\\" and i + 1 < len(source) and not source[i + 1].isalnum():
            char, width = source[i + 1], 2
        elif char in ".^$*+?{}[]()\\":
            break
        else:
            width = 1
        if source[i + width : i + width + 1] in ("*", "?", "{"):
            break  # optional or repeated: not part of every match
        prefix += char
        i += width
    return prefix


def choose(page, label: str, option: str | re.Pattern) -> None:
    """Pick `option` in the selectbox labelled `label` (a string is matched as the whole literal text). The
    dropdown draws only the options in view, so first type into the box what narrows the list to it: the
    whole string, or a regex's literal prefix (nothing if it has none), then click the option. The caller
    then waits for what the pick's rerun shows: an idle moment right after the click proves nothing."""
    box = page.locator("[data-testid='stSelectbox']").filter(
        has=page.locator("[data-testid='stWidgetLabel']", has_text=re.compile(f"^{re.escape(label)}$"))
    )
    field = box.first.locator("input")
    field.click(timeout=SLOW)
    typed = option if isinstance(option, str) else literal_prefix(option)
    if typed:
        field.fill(typed)
    page.get_by_role("option", name=option, exact=isinstance(option, str)).click(timeout=SLOW)


def tables(page) -> list[list[list[str]]]:
    """Every st.table on the page as rows of cell texts (header row first)."""
    return page.evaluate("""() => [...document.querySelectorAll("[data-testid='stTable'] table")].map(
        t => [...t.querySelectorAll('tr')].map(r => [...r.querySelectorAll('th,td')].map(c => c.innerText.trim())))""")


def settled(page) -> None:
    """Wait until the run is drawn and every image on the page has loaded or failed: from then on a planted
    address that Markdown or HTML had turned into an <img> would already have been requested."""
    wait_idle_within(page)
    page.wait_for_function("() => [...document.images].every(image => image.complete)", polling=100)


# True once the layout (the main area's height and every canvas, chart and image's box) reads the same as at
# the previous poll: a page resized or just drawn has stopped moving.
LAYOUT_STILL = """() => { const boxes = [...document.querySelectorAll('canvas, svg, img')].map(e => {
        const r = e.getBoundingClientRect(); return `${r.width}x${r.height}`; });
    const main = document.querySelector("[data-testid='stMain']");
    const now = `${main ? main.scrollHeight : 0}|${boxes.join(',')}`;
    const still = window.__qrelkitLayout === now; window.__qrelkitLayout = now; return still; }"""


def painted(page) -> None:
    """Wait until a page (e.g. one just made taller for a screenshot) is drawn and painted: the run is over and
    every image loaded (settled), the fonts are ready, the layout holds still between two polls (the data grids
    and charts redraw once they see their new size), and the browser has painted two frames since."""
    settled(page)
    page.evaluate("() => document.fonts.ready.then(() => { window.__qrelkitLayout = undefined; })")
    page.wait_for_function(LAYOUT_STILL, polling=250)
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))")

"""text.literal in a real browser: a string from data, put in every kind of Markdown the pages use, shows as
typed, copies as typed (no invisible characters) and makes no link, image, icon or arrow. A tiny Streamlit
script of its own serves the strings, so the check does not depend on which page shows what."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM, ROOT, free_port, stop_server, wait_healthy, wait_idle
from tests.conftest import require

pytestmark = pytest.mark.browser

# What Streamlit 1.67 rewrites after parsing (escapes do not stop it), plus markup that escaping must stop.
SAMPLES = [
    "see http://127.0.0.1:9/x now",
    "visit www.example.com today",
    "write to ana@example.com please",
    "WWW.EXAMPLE.COM",
    "mailto:ana@x.org xmpp:bo@x.org ftp://127.0.0.1:9/f",
    "https://www.example.com/a?b=c&d=e#f",
    "a -> b <- c <-> d -- e >= f <= g ~= h",
    ":material/home: is an icon name",
    ":streamlit: is a logo",
    ":smile: :+1: are emoji codes",
    "q000: ¿plazo? ends with a colon:",
    "@start and end@",
    "**b** <b>x</b> [l](http://127.0.0.1:9/) ![i](http://127.0.0.1:9/i.png) $x^2$ :red[zz] :small[zz]",
    "<https://127.0.0.1:9/> <ana@x.org> <!-- c --> a:b::c ::: :---:",
]
CONTEXTS = ("markdown", "caption", "info", "radio", "table", "expander")
SCRIPT = """
import json, sys
import pandas as pd
import streamlit as st
from annotator.app.text import literal

for i, text in enumerate(json.loads(open(sys.argv[1], encoding="utf-8").read())):
    with st.container(key=f"s{i}_markdown"):
        st.markdown(literal(text))
    with st.container(key=f"s{i}_caption"):
        st.caption(f"**{literal(text)}**")
    with st.container(key=f"s{i}_info"):
        st.info(literal(text))
    with st.container(key=f"s{i}_radio"):
        st.radio("Pick", [i], format_func=lambda _, text=text: literal(text), key=f"radio{i}")
    with st.container(key=f"s{i}_table"):
        st.table(pd.DataFrame({"Text": [literal(text)]}))
    with st.container(key=f"s{i}_expander"), st.expander(literal(text)):
        st.write("inside")
"""
# The Markdown of each box that holds the sample (a radio's option, not its label; a table's cell, not its header).
READ = """([i, context]) => {
    const box = document.querySelector(`.st-key-s${i}_${context}`);
    const md = context === 'radio' ? box.querySelector("[role='radiogroup'] [data-testid='stMarkdownContainer']")
        : context === 'table' ? box.querySelector("tbody td [data-testid='stMarkdownContainer']")
        : box.querySelector("[data-testid='stMarkdownContainer'], [data-testid='stCaptionContainer']");
    const range = document.createRange();
    range.selectNodeContents(md);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return {shown: md.innerText, copied: selection.toString(),
            made: Array.from(md.querySelectorAll('*')).filter(e => !['P', 'SPAN', 'STRONG'].includes(e.tagName)
                || e.getAttribute('role') === 'img' || e.getAttribute('href') || e.getAttribute('src'))
                .map(e => e.tagName + ':' + e.textContent)};
}"""


@pytest.fixture(scope="module")
def literal_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The tiny script served by `streamlit run` on a free port; yields its URL."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    folder = tmp_path_factory.mktemp("browser-literal")
    (folder / "samples.json").write_text(json.dumps(SAMPLES), encoding="utf-8")
    (folder / "show.py").write_text(SCRIPT, encoding="utf-8")
    port = free_port()
    with (folder / "serve.log").open("w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                str(folder / "show.py"),
                "--server.headless=true",
                f"--server.port={port}",
                "--browser.gatherUsageStats=false",
                "--server.fileWatcherType=none",
                "--",
                str(folder / "samples.json"),
            ],
            cwd=folder,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc)


def read_all(page, url: str) -> dict[tuple[int, str], dict]:
    """What every box shows, copies and contains, keyed by (sample index, context)."""
    page.goto(url)
    wait_idle(page)
    page.locator(f".st-key-s{len(SAMPLES) - 1}_expander").wait_for()
    return {(i, c): page.evaluate(READ, [i, c]) for i in range(len(SAMPLES)) for c in CONTEXTS}


def test_literal_text_makes_no_link_image_or_icon(literal_page: str, page) -> None:
    made = {key: box["made"] for key, box in read_all(page, literal_page).items() if box["made"]}
    assert made == {}


def test_literal_text_shows_and_copies_exactly_as_typed(literal_page: str, page) -> None:
    boxes = read_all(page, literal_page)
    wrong = {
        (SAMPLES[i], context): (box["shown"], box["copied"])
        for (i, context), box in boxes.items()
        if box["shown"].strip() != SAMPLES[i] or box["copied"].strip() != SAMPLES[i]
    }
    assert wrong == {}

"""The Evaluate page of a 1–3 project in a real browser: its lowest grade ("off topic") is not relevant and
gains nothing, and every cell equals `qrelkit eval --scale 1-3` on the exported release and the stored run —
the command the page itself prints."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM, Server, serving
from tests.browser.pages import KS, PAGE_METRICS, SLOW, choose, open_lead_page, tables
from tests.browser.pages import wait_drawn as wait_idle
from tests.conftest import ROOT, require
from tests.helpers import SCALE_PROJECT as PROJECT
from tests.helpers import build_scale_project as build_project

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def scale_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app over the 1–3 project above."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    folder = tmp_path_factory.mktemp("browser-scale")
    db_url = f"sqlite:///{folder / 'scale.db'}"
    build_project(db_url, folder)
    with serving(db_url, folder) as server:  # the only project: the app opens it
        yield server


def cli_means(server: Server, folder: Path, grades: str, *options: str) -> dict[str, float]:
    """`qrelkit eval OPTIONS` on the release from `qrelkit export --grades GRADES` and the stored run."""
    from db.evaluations import stored_run_frame
    from db.store.engine import get_engine

    qrels = folder / f"release.{grades}.qrels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "annotator",
            "export",
            "--project",
            PROJECT,
            "--release",
            "1",
            "--format",
            "trec",
            "--grades",
            grades,
            "-o",
            str(qrels),
            "--db",
            server.db_url,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    run = stored_run_frame(get_engine(server.db_url), PROJECT, "bm25")
    path = folder / "stored.run"
    path.write_text("".join(f"{q} Q0 {d} 0 {float(s)!r} stored\n" for q, d, s in run.itertuples(index=False)))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "annotator",
            "eval",
            str(qrels),
            str(path),
            *options,
            "--k",
            KS,
            "--metrics",
            PAGE_METRICS,
            "--format",
            "json",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)["runs"][0]["mean"]


def test_every_evaluate_cell_of_a_1_to_3_project_equals_qrelkit_eval_on_its_scale(
    scale_server: Server, page, tmp_path
) -> None:
    # The TREC export holds gains (grade − 1): plain `qrelkit eval`, relevant from gain 1 (grade 2), is what the
    # page shows, and so is `--scale 1-3 --rel-level 2` on the grades as judged.
    expected = cli_means(scale_server, tmp_path, "gains", "--rel-level", "1")
    assert cli_means(scale_server, tmp_path, "as-judged", "--scale", "1-3", "--rel-level", "2") == expected
    as_written = cli_means(scale_server, tmp_path, "as-judged", "--rel-level", "2")  # an "off topic" 1 gains 1
    assert expected["ndcg@10"] < as_written["ndcg@10"]  # the data can tell the two apart
    open_lead_page(page, scale_server, "Evaluate")
    choose(page, "Stored run", "bm25")
    caption = page.get_by_text("prints them on the release's TREC export").first  # the commands the page matches
    caption.wait_for(timeout=SLOW)
    assert "--rel-level 1 prints them" in caption.inner_text()
    assert "--scale 1-3 --k 1,3,5,10,20,100 --rel-level 2 on its as-judged export" in caption.inner_text()
    page.get_by_text("Over the whole ranking").wait_for(timeout=SLOW)
    wait_idle(page)
    shown = tables(page)
    by_k = next(t for t in shown if t[0][:2] == ["Metric", "@1"] and not t[1][1].startswith("["))
    whole = next(t for t in shown if t[0][:3] == ["Metric", "Mean", "95% CI"])
    checked = 0
    for row in by_k[1:]:
        for header, cell in zip(by_k[0][1:], row[1:], strict=True):
            assert cell == f"{expected[row[0] + header]:.4f}", (row[0], header)
            checked += 1
    for row in whole[1:]:
        assert row[1] == f"{expected[row[0]]:.4f}", row[0]
        checked += 1
    assert checked == 5 * 6 + 6

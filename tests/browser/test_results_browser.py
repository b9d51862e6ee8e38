"""Evaluate and Releases in a real browser, read as the lead reads them: every metric cell equals `qrelkit eval`
on the exported release and the stored run; a run covering 1 of 6 queries is told its queries are missing;
Markdown planted in a run name and a lead's name shows literally and loads nothing; a CSV download whose cell
starts with `=` arrives escaped."""

from __future__ import annotations

import csv
import io
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM, Server, serving
from tests.browser.pages import KS, PAGE_METRICS, SLOW, choose, open_lead_page, settled, tables
from tests.browser.pages import RESULTS_LEAD as LEAD
from tests.browser.pages import wait_drawn as wait_idle
from tests.conftest import ROOT, require
from tests.helpers import write_jsonl

pytestmark = pytest.mark.browser

TRAP = "http://127.0.0.1:9"  # nothing listens there: a request to it means Markdown was rendered
PLANTED_RUN = f"![run]({TRAP}/run.png) *run* [link]({TRAP}/run)"
PLANTED_LEAD = f"**boss** ![lead]({TRAP}/lead.png)"
FORMULA_FRAGMENT = '=HYPERLINK("http://127.0.0.1:9/csv","x")'
QUERIES = [f"q{i}" for i in range(1, 7)]


def build_project(db_url: str, folder: Path) -> None:
    """Six queries in two categories, eight fragments each (one id starting with `=`), graded by two
    annotators from a seeded generator; runs `good` (all queries, shuffled), `partial` (q1 only) and one
    whose name is Markdown; release 1 cut by a lead whose name is Markdown."""
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.imports import import_fragments, import_judgments, import_queries, import_run
    from db.projects import create_project
    from db.releases import create_release
    from db.store.schema import init_db

    rng = random.Random(20261130)
    engine = init_db(db_url)
    create_user(engine, LEAD[0], "lead", password=LEAD[1], actor=OPERATOR)
    create_user(engine, PLANTED_LEAD, "lead", actor=OPERATOR)
    create_project(engine, "demo", actor=OPERATOR)
    import_queries(
        engine,
        "demo",
        write_jsonl(
            folder / "queries.jsonl",
            [
                {"id": q, "text": f"question {q}", "category": "shipping" if i % 2 else "returns"}
                for i, q in enumerate(QUERIES)
            ],
        ),
        actor=OPERATOR,
    )
    docs = {q: [f"{q}-d{j}" for j in range(8)] for q in QUERIES}
    docs["q1"][7] = FORMULA_FRAGMENT
    import_fragments(
        engine,
        "demo",
        write_jsonl(
            folder / "fragments.jsonl", [{"id": d, "text": f"text of {d}"} for ds in docs.values() for d in ds]
        ),
        actor=OPERATOR,
    )
    judgments = []
    for q, ds in docs.items():
        for d in ds[:7] if q != "q1" else ds:  # each query but q1 leaves one fragment unjudged
            truth = rng.randint(0, 3)
            for annotator in ("ann", "bob"):
                judgments.append(
                    {
                        "query_id": q,
                        "fragment_id": d,
                        "annotator": annotator,
                        "grade": max(0, min(3, truth + rng.choice((-1, 0, 0, 1)))),
                    }
                )
    import_judgments(engine, "demo", write_jsonl(folder / "judgments.jsonl", judgments), actor=OPERATOR)
    for name, queries in (("good", QUERIES), ("partial", ["q1"]), (PLANTED_RUN, QUERIES)):
        lines = []
        for q in queries:
            ranking = docs[q][:]
            rng.shuffle(ranking)
            lines += [f"{q} Q0 {d} {r} {20 - r}.5 {name.split()[0]}\n" for r, d in enumerate(ranking, start=1)]
        path = folder / f"run{len(lines)}-{rng.randint(0, 10**6)}.trec"
        path.write_text("".join(lines))
        import_run(engine, "demo", path, name=name, actor=OPERATOR)
    create_release(engine, "demo", actor=PLANTED_LEAD)
    engine.dispose()


@pytest.fixture(scope="module")
def results_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app over the project above (its own database and server, so the numbers are this module's)."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    folder = tmp_path_factory.mktemp("browser-results")
    db_url = f"sqlite:///{folder / 'results.db'}"
    build_project(db_url, folder)
    with serving(db_url, folder) as server:
        yield server


def cli_means(server: Server, run_name: str, folder: Path, rel_level: int) -> dict[str, float]:
    """`qrelkit eval` on the release exported by `qrelkit export` and the stored run written out as TREC."""
    from db.evaluations import stored_run_frame
    from db.store.engine import get_engine

    qrels = folder / "release.qrels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "annotator",
            "export",
            "--project",
            "demo",
            "--release",
            "1",
            "--format",
            "trec",
            "-o",
            str(qrels),
            "--db",
            server.db_url,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    run = stored_run_frame(get_engine(server.db_url), "demo", run_name)
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
            "--k",
            KS,
            "--rel-level",
            str(rel_level),
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


@pytest.mark.parametrize("rel_level", [1, 2])
def test_every_evaluate_cell_equals_qrelkit_eval(results_server: Server, page, tmp_path, rel_level) -> None:
    open_lead_page(page, results_server, "Evaluate")
    choose(page, "Stored run", "good")
    page.get_by_role("heading", name="Metrics of good on release 1").wait_for(timeout=SLOW)  # the pick's rerun
    wait_idle(page)
    if rel_level != 1:
        choose(page, "Relevant from grade", re.compile(rf"^{rel_level} · "))
    page.get_by_text(f"--rel-level {rel_level}").first.wait_for(timeout=SLOW)  # shown by that pick's rerun
    page.get_by_text("Over the whole ranking").wait_for(timeout=SLOW)
    wait_idle(page)  # every table of that run drawn
    expected = cli_means(results_server, "good", tmp_path, rel_level)
    shown = tables(page)
    by_k = next(t for t in shown if t[0][:2] == ["Metric", "@1"] and not t[1][1].startswith("["))
    whole = next(t for t in shown if t[0][:3] == ["Metric", "Mean", "95% CI"])
    assert by_k[0] == ["Metric", "@1", "@3", "@5", "@10", "@20", "@100"]
    checked = 0
    for row in by_k[1:]:
        for header, cell in zip(by_k[0][1:], row[1:], strict=True):
            assert cell == f"{expected[row[0] + header]:.4f}", (row[0], header)
            checked += 1
    assert [row[0] for row in whole[1:]] == ["mrr", "map", "rprec", "bpref", "ndcg", "recall"]
    for row in whole[1:]:
        assert row[1] == f"{expected[row[0]]:.4f}", row[0]
        checked += 1
    assert checked == 5 * 6 + 6
    last = page.locator("[data-testid='stTable'] th", has_text=re.compile(r"^@100$")).first.bounding_box()
    assert last is not None and last["x"] + last["width"] <= 1280  # the @100 column is inside the window


def test_a_run_missing_queries_is_told_so_not_to_judge_nothing(results_server: Server, page) -> None:
    open_lead_page(page, results_server, "Evaluate")
    choose(page, "Stored run", "partial")
    finding = page.get_by_text(re.compile(r"Missing queries: partial returns nothing for 5 of 6 qrels queries"))
    finding.first.wait_for(timeout=SLOW)
    wait_idle(page)  # the whole page of that run, so the checks below see everything it shows
    main = page.locator("[data-testid='stMain']").inner_text()
    assert "Judge the 0" not in main and "0 unjudged" not in main
    assert page.get_by_role("button", name=re.compile(r"^Send the 0 ")).count() == 0


def planted_requests(page) -> list[str]:
    """Start recording every request the page makes to the trap host."""
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url) if request.url.startswith(TRAP) else None)
    return seen


def test_a_markdown_run_name_shows_literally_on_evaluate(results_server: Server, page) -> None:
    seen = planted_requests(page)
    open_lead_page(page, results_server, "Evaluate")
    choose(page, "Stored run", PLANTED_RUN)
    page.get_by_role("heading", name=re.compile(r"^Metrics of .*run.* on release 1")).first.wait_for(timeout=SLOW)
    wait_idle(page)
    settled(page)
    main = page.locator("[data-testid='stMain']")
    assert f"Metrics of {PLANTED_RUN} on release 1" in main.inner_text()
    assert main.locator(f"img[src^='{TRAP}'], a[href^='{TRAP}']").count() == 0
    assert main.locator("em", has_text="run").count() == 0
    assert seen == []


def test_a_markdown_lead_name_shows_literally_on_releases(results_server: Server, page) -> None:
    seen = planted_requests(page)
    open_lead_page(page, results_server, "Releases")
    page.get_by_text(re.compile(r"created by .*boss")).first.wait_for(timeout=SLOW)
    wait_idle(page)
    settled(page)
    main = page.locator("[data-testid='stMain']")
    assert f"created by {PLANTED_LEAD} on " in main.inner_text()
    assert main.locator(f"img[src^='{TRAP}']").count() == 0
    assert main.locator("strong", has_text="boss").count() == 0
    assert seen == []


def test_release_csv_download_escapes_a_formula(results_server: Server, page) -> None:
    open_lead_page(page, results_server, "Releases")
    with page.expect_download() as download:
        page.get_by_role("button", name="CSV", exact=True).click(timeout=SLOW)
    rows = list(csv.DictReader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
    fragments = {r["fragment_id"] for r in rows}
    assert "'" + FORMULA_FRAGMENT in fragments and FORMULA_FRAGMENT not in fragments
    assert not any(cell.startswith(("=", "+", "@")) for r in rows for cell in r.values())
    assert download.value.suggested_filename == "demo-v1-qrels.csv"

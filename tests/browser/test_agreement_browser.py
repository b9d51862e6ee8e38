"""The Agreement page in a real browser: its κ and α (with CIs) are the CLI's on the same judgments, for two and
for four annotators, and planted Markdown/HTML in annotator names and query ids shows literally, fetching nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Server, login, serving
from tests.browser.pages import AGREEMENT_LEAD as LEAD
from tests.browser.pages import HTML_QUERY, MARKDOWN_NAME, SLOW, judgments, settled, tiles
from tests.browser.pages import wait_drawn as wait_idle
from tests.conftest import ROOT
from tests.helpers import write_jsonl

pytestmark = pytest.mark.browser

PLANTED_HOST = "127.0.0.1:9"
BOOTSTRAP = 200  # the app's replicates (components.agreement.APP_BOOTSTRAP); the CLI gets the same and the same seed


@dataclass
class Agreement:
    """A live server on a seeded project and the CLI's report on the judgments exported from its store."""

    server: Server
    annotators: list[str]
    json: dict
    table: str


def build_store(folder: Path, annotators: list[str]) -> str:
    """A project `demo` whose judgments are imported through the store, plus a lead who can log in."""
    from db import imports, projects
    from db.accounts import users
    from db.accounts.permissions import OPERATOR
    from db.store.schema import init_db

    db_url = f"sqlite:///{folder / 'agreement.db'}"
    engine = init_db(db_url)
    users.create_user(engine, LEAD[0], "lead", password=LEAD[1], actor=OPERATOR)
    projects.create_project(engine, "demo", actor=OPERATOR)
    rows = judgments(annotators, seed=len(annotators))
    queries = sorted({r["query_id"] for r in rows})
    imports.import_queries(
        engine,
        "demo",
        write_jsonl(folder / "queries.jsonl", [{"id": q, "text": f"Question {i}"} for i, q in enumerate(queries)]),
        actor=OPERATOR,
    )
    fragments = sorted({r["fragment_id"] for r in rows})
    imports.import_fragments(
        engine,
        "demo",
        write_jsonl(folder / "fragments.jsonl", [{"id": f, "text": f"Fragment {f}"} for f in fragments]),
        actor=OPERATOR,
    )
    imports.import_judgments(engine, "demo", write_jsonl(folder / "judgments.jsonl", rows), actor=OPERATOR)
    engine.dispose()
    return db_url


def cli_report(db_url: str, folder: Path) -> tuple[dict, str]:
    """`qrelkit agreement` (JSON and table) on the judgments exported from the store the app reads."""
    from db.store.engine import get_engine
    from db.store.frames import judgments_frame

    frame = judgments_frame(get_engine(db_url), "demo")
    exported = write_jsonl(
        folder / "exported.jsonl",
        [
            {
                "query_id": r.query_id,
                "fragment_id": r.fragment_id,
                "annotator": r.annotator,
                "grade": None if r.grade is None or r.grade != r.grade else int(r.grade),
            }
            for r in frame.itertuples(index=False)
        ],
    )
    command = [
        sys.executable,
        "-m",
        "annotator",
        "agreement",
        str(exported),
        "--bootstrap",
        str(BOOTSTRAP),
        "--seed",
        "0",
    ]
    as_json = subprocess.run([*command, "--format", "json"], cwd=ROOT, capture_output=True, text=True, check=True)
    as_table = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(as_json.stdout), as_table.stdout


@pytest.fixture(scope="module", params=[2, 4], ids=["2-annotators", "4-annotators"])
def agreement(request, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agreement]:
    """A server per annotator count (the planted name is always one of them)."""
    annotators = ["ana", "bob", "cy", MARKDOWN_NAME] if request.param == 4 else ["ana", MARKDOWN_NAME]
    folder = tmp_path_factory.mktemp(f"agreement-{request.param}")
    db_url = build_store(folder, annotators)
    data, table = cli_report(db_url, folder)
    with serving(db_url, folder) as server:
        yield Agreement(server, annotators, data, table)


def open_agreement(page, server: Server, requests: list[str]) -> None:
    """Log in as the lead, recording every request the page makes, and follow the sidebar link to Agreement."""
    page.on("request", lambda request: requests.append(request.url))
    login(page, server.url, *LEAD)
    page.get_by_test_id("stSidebar").get_by_role("link", name="Agreement").click()
    page.get_by_role("heading", name="Agreement").wait_for(timeout=SLOW)
    page.get_by_text("Most disputed pairs").wait_for(timeout=SLOW)
    wait_idle(page)


def ci_text(ci: list[float]) -> str:
    """A CI as the page prints it."""
    return f"95% CI {ci[0]:.2f} – {ci[1]:.2f}"


def light_kappa_ci(table: str, weight: str) -> list[float]:
    """The mean pairwise κ CI from the CLI's table (`Cohen's κ (quadratic) mean of pairs  0.612  [0.501, 0.702]`)."""
    match = re.search(rf"Cohen's κ \({weight}\)(?: mean of pairs)?\s+(-?[\d.]+)\s+\[(-?[\d.]+), (-?[\d.]+)\]", table)
    assert match, table
    return [float(match.group(2)), float(match.group(3))]


def test_agreement_page_kappa_and_alpha_equal_the_cli(agreement: Agreement, page) -> None:
    """The first numbers on the page — Cohen's κ weighted and unweighted, Krippendorff's α — with their 95% CIs
    are the CLI's; with two annotators κ is the pair's κ, with four the mean over the six pairs."""
    requests: list[str] = []
    open_agreement(page, agreement.server, requests)
    shown = tiles(page)
    assert list(shown)[:3] == ["Cohen's κ, quadratic-weighted", "Cohen's κ, unweighted", "Krippendorff's α"]
    data = agreement.json
    alpha = data["alpha"]["ordinal"]
    assert shown["Krippendorff's α"][0] == f"{alpha['value']:.2f}"
    assert shown["Krippendorff's α"][1].startswith(ci_text(alpha["ci"]))
    n_pairs = len(agreement.annotators) * (len(agreement.annotators) - 1) // 2
    assert len(data["kappa"]) == n_pairs
    for label, weight in (("Cohen's κ, quadratic-weighted", "quadratic"), ("Cohen's κ, unweighted", "unweighted")):
        value = np.mean([pair[weight]["value"] for pair in data["kappa"]])
        ci = data["kappa"][0][weight]["ci"] if n_pairs == 1 else light_kappa_ci(agreement.table, weight)
        assert shown[label][0] == f"{value:.2f}"
        assert shown[label][1].startswith(ci_text(ci))
        if n_pairs > 1:
            assert f"mean of {n_pairs} annotator pairs" in shown[label][1]
    # the heatmap (with its weighting choice) only when there is more than one pair to compare; `expect`
    # retries, since under load the lower sections can still be drawing after the first idle moment
    expect(page.get_by_role("radio", name="quadratic")).to_have_count(1 if n_pairs > 1 else 0, timeout=SLOW)


def test_planted_markdown_and_html_render_literally(agreement: Agreement, page) -> None:
    """An annotator named like a Markdown image and a query id holding <b> show as typed; nothing is fetched."""
    requests: list[str] = []
    open_agreement(page, agreement.server, requests)
    disputed = page.get_by_test_id("stText").filter(has_text=f"{HTML_QUERY} · f5_0")
    disputed.first.wait_for()
    line = disputed.first.inner_text()
    assert f"{MARKDOWN_NAME}: 3" in line and "spread 3" in line
    assert page.locator("[data-testid='stMain'] b", has_text=re.compile("^x$")).count() == 0
    assert page.locator("[data-testid='stMain'] img").count() == 0
    assert page.get_by_role("combobox", name="Annotator A").input_value() == MARKDOWN_NAME
    settled(page)
    assert not [url for url in requests if PLANTED_HOST in url]

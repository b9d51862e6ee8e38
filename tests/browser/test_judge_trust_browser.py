"""The Judges page's judge-trust report in a real browser: the verdict, τ and τ_ap a lead reads are what `qrelkit
judge-trust --project P --model NAME` prints for the same store, and a run name written in Markdown (the
circularity warning names it) shows literally and loads nothing; the Releases page shows the same verdict on the
card of a release whose model filled gaps."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM, Server, login, serving
from tests.browser.pages import open_page, wait_for_texts
from tests.conftest import ROOT, require
from tests.helpers import swapping, trust_collection, write_jsonl, write_trec_run

pytestmark = pytest.mark.browser

LEAD = ("lea", "lea-trust-pass")
TRAP = "http://127.0.0.1:9"
PLANTED = f"*r3* ![c]({TRAP}/c.png)"
SLOW = 90_000


def build_project(db_url: str, folder: Path) -> None:
    """People's grades, a model judge (gpt-4o) that swaps runs r1 and r2, four runs; the worst one, named in
    Markdown, produced with gpt-4o-mini; release 1 by the policy model-fills-gaps
    (its κ gate lowered to 0.3: the swapping judge does not clear 0.6)."""
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.imports import Judges, import_fragments, import_judgments, import_queries, import_run
    from db.projects import create_project
    from db.releases import create_release
    from db.store.schema import init_db

    qrels, runs = trust_collection(queries=10, runs=4)
    engine = init_db(db_url)
    create_user(engine, LEAD[0], "lead", password=LEAD[1], actor=OPERATOR)
    create_project(engine, "demo", actor=OPERATOR)
    import_queries(
        engine, "demo", write_jsonl(folder / "q.jsonl", [{"id": q, "text": q} for q in qrels]), actor=OPERATOR
    )
    fragments = [{"id": d, "text": f"text {d}"} for docs in qrels.values() for d in docs]
    import_fragments(engine, "demo", write_jsonl(folder / "f.jsonl", fragments), actor=OPERATOR)
    people = [
        {"query_id": q, "fragment_id": d, "annotator": "ann", "grade": g}
        for q, ds in qrels.items()
        for d, g in ds.items()
    ]
    import_judgments(engine, "demo", write_jsonl(folder / "p.jsonl", people), actor=OPERATOR)
    machine = [
        {"query_id": q, "fragment_id": d, "annotator": "umbrela", "grade": g}
        for q, ds in swapping(qrels, "r1", "r2").items()
        for d, g in ds.items()
    ]
    import_judgments(
        engine,
        "demo",
        write_jsonl(folder / "m.jsonl", machine),
        actor=OPERATOR,
        judges=Judges("model", "gpt-4o"),
    )
    for name, run in runs.items():
        stored = PLANTED if name == "r3" else name
        produced = "gpt-4o-mini" if name == "r3" else None
        import_run(
            engine,
            "demo",
            write_trec_run(folder / f"{name}.run", run),
            name=stored,
            actor=OPERATOR,
            produced_by=produced,
        )
    create_release(engine, "demo", actor=OPERATOR, policy="model-fills-gaps", model_threshold=0.3)
    engine.dispose()


@pytest.fixture(scope="module")
def trust_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    folder = tmp_path_factory.mktemp("browser-trust")
    db_url = f"sqlite:///{folder / 'trust.db'}"
    build_project(db_url, folder)
    with serving(db_url, folder) as server:
        yield server


def cli_report(server: Server) -> dict:
    """What `qrelkit judge-trust --project demo --model umbrela --format json` prints for the served store."""
    command = ["judge-trust", "--project", "demo", "--model", "umbrela", "--db", server.db_url, "--format", "json"]
    out = subprocess.run(
        [sys.executable, "-m", "annotator", *command], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def test_the_report_is_the_clis_and_literal(trust_server: Server, page) -> None:
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url) if request.url.startswith(TRAP) else None)
    login(page, trust_server.url, *LEAD)
    open_page(page, "Judges")
    page.get_by_role("button", name="Measure against people").click(timeout=SLOW)
    wait_for_texts(page, "Can this judge stand in for people?", "Kendall τ", "Leniency")
    report = cli_report(trust_server)
    shown = page.get_by_test_id("stMain").inner_text()
    assert report["verdict"] in shown
    assert PLANTED in report["verdict"]  # the warning names the run, written as stored
    metrics = {
        m.get_by_test_id("stMetricLabel").inner_text().strip(): m.get_by_test_id("stMetricValue").inner_text().strip()
        for m in page.get_by_test_id("stMetric").all()
    }
    assert metrics["Kendall τ"] == f"{report['ranking']['tau']:.3f}"
    assert metrics["τ_ap"] == f"{report['ranking']['tau_ap']:.3f}"
    bias = report["leniency"]["bias"]
    assert f"bias {bias:+.4f}" in shown
    assert page.get_by_test_id("stVegaLiteChart").count() >= 1  # the Bland–Altman plot
    assert not seen, f"Markdown in a run name was rendered: requests to {seen}"


def test_the_release_card_says_the_clis_verdict(trust_server: Server, page) -> None:
    login(page, trust_server.url, *LEAD)
    open_page(page, "Releases")
    verdict = cli_report(trust_server)["verdict"]
    wait_for_texts(page, "Judge trust (umbrela): ")
    assert f"Judge trust (umbrela): {verdict}" in page.get_by_test_id("stMain").inner_text()

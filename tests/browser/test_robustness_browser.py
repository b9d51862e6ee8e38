"""The Evaluate page's "Robustness under disagreement" in a real browser: the verdict a lead reads is the sentence
`qrelkit robustness --project` prints for the same store, and an annotator name written in Markdown shows
literally and loads nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM, Server, login, serving
from tests.conftest import ROOT, require

pytestmark = pytest.mark.browser

LEAD = ("lea", "lea-robust-pass")
TRAP = "http://127.0.0.1:9"  # nothing listens there: a request to it means Markdown was rendered
PLANTED = f"*carol* ![c]({TRAP}/c.png)"
SLOW = 90_000
TOGGLE = "Check whether the run order holds under disagreement"
# Two humans find d1 highly relevant and d2 not; the planted annotator sees it the other way round.
GRADES = {"alice": {"d1": 3, "d2": 0}, "bob": {"d1": 3, "d2": 0}, PLANTED: {"d1": 1, "d2": 2}}
RUNS = {"first": ["d1", "d2"], "second": ["d2", "d1"]}


def build_project(db_url: str, folder: Path) -> None:
    """Queries q1, q2 with fragments d1, d2 graded alike, two runs in opposite orders, release 1."""
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.imports import import_fragments, import_judgments, import_queries, import_run
    from db.projects import create_project
    from db.releases import create_release
    from db.store.schema import init_db

    engine = init_db(db_url)
    create_user(engine, LEAD[0], "lead", password=LEAD[1], actor=OPERATOR)
    create_project(engine, "demo", actor=OPERATOR)
    queries, docs = ("q1", "q2"), ("d1", "d2")
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"id": q, "text": f"question {q}"}) + "\n" for q in queries)
    )
    import_queries(engine, "demo", folder / "queries.jsonl", actor=OPERATOR)
    (folder / "fragments.jsonl").write_text("".join(json.dumps({"id": d, "text": f"text of {d}"}) + "\n" for d in docs))
    import_fragments(engine, "demo", folder / "fragments.jsonl", actor=OPERATOR)
    (folder / "judgments.jsonl").write_text(
        "".join(
            json.dumps({"query_id": q, "fragment_id": d, "annotator": a, "grade": g}) + "\n"
            for q in queries
            for a, by in GRADES.items()
            for d, g in by.items()
        )
    )
    import_judgments(engine, "demo", folder / "judgments.jsonl", actor=OPERATOR)
    for name, ranking in RUNS.items():
        path = folder / f"{name}.trec"
        path.write_text(
            "".join(f"{q} Q0 {d} {r} {10 - r} {name}\n" for q in queries for r, d in enumerate(ranking, start=1))
        )
        import_run(engine, "demo", path, name=name, actor=OPERATOR)
    create_release(engine, "demo", actor=OPERATOR)
    engine.dispose()


@pytest.fixture(scope="module")
def robust_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app over the project above (its own database and server)."""
    require(Path(CHROMIUM).exists(), f"Debian's Chromium not found at {CHROMIUM}")
    folder = tmp_path_factory.mktemp("browser-robustness")
    db_url = f"sqlite:///{folder / 'robust.db'}"
    build_project(db_url, folder)
    with serving(db_url, folder) as server:
        yield server


def test_the_flip_sentence_is_the_clis_and_literal(robust_server: Server, page) -> None:
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url) if request.url.startswith(TRAP) else None)
    login(page, robust_server.url, *LEAD)
    page.locator("[data-testid='stSidebarNavLink']", has_text="Evaluate").first.click(timeout=SLOW)
    page.get_by_text(TOGGLE).click(timeout=SLOW)
    alert = page.locator("[data-testid='stAlert']", has_text="the order flips")
    alert.first.wait_for(timeout=SLOW)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "annotator",
            "robustness",
            "--project",
            "demo",
            "--db",
            robust_server.db_url,
            "--format",
            "json",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (pair,) = json.loads(out)["pairs"]
    assert pair["sentence"].startswith(
        f"first beats second on ndcg@10 under all 7 rules and 2 of 3 annotators; "
        f"under {PLANTED}'s labels the order flips"
    )
    text = alert.first.locator("[data-testid='stMarkdownContainer']").inner_text()  # the words, not the icon
    assert text.strip() == pair["sentence"]
    assert not seen, f"Markdown in an annotator name was rendered: requests to {seen}"

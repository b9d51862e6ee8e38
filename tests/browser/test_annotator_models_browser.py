"""The Agreement page's annotator models in a real browser: each person's MACE competence, its CI, the spammer
flag and the Dawid–Skene confusion matrix the user reads are `qrelkit annotators`' numbers for the same store."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eval_core.consensus.simulate import simulate_crowd
from tests.browser.conftest import Server, login, serving, until
from tests.browser.pages import AGREEMENT_LEAD as LEAD
from tests.browser.pages import SLOW, choose, tables, wait_drawn
from tests.conftest import ROOT
from tests.helpers import write_jsonl

pytestmark = pytest.mark.browser

KINDS = ["good", "good", "lenient", "spammer"]
SPAMMER = "spammer-003"
SUMMARY = [
    "Annotator",
    "Grades",
    "Queries",
    "MACE competence",
    "95% CI",
    "Spammer score",
    "Control accuracy",
    "Spammer",
]


def build_store(folder: Path) -> str:
    """Project `demo` with a generated crowd (one spammer) imported through the store, and a lead."""
    from db import imports, projects
    from db.accounts import users
    from db.accounts.permissions import OPERATOR
    from db.store.schema import init_db

    judgments, _ = simulate_crowd(300, KINDS, per_pair=3, seed=3)
    db_url = f"sqlite:///{folder / 'models.db'}"
    engine = init_db(db_url)
    users.create_user(engine, LEAD[0], "lead", password=LEAD[1], actor=OPERATOR)
    projects.create_project(engine, "demo", actor=OPERATOR)
    queries = [{"id": q, "text": f"Question {q}"} for q in sorted(judgments["query_id"].unique())]
    imports.import_queries(engine, "demo", write_jsonl(folder / "queries.jsonl", queries), actor=OPERATOR)
    fragments = [{"id": f, "text": f"Fragment {f}"} for f in sorted(judgments["fragment_id"].unique())]
    imports.import_fragments(engine, "demo", write_jsonl(folder / "fragments.jsonl", fragments), actor=OPERATOR)
    rows = [
        {"query_id": q, "fragment_id": f, "annotator": a, "grade": int(g)}
        for q, f, a, g in judgments.itertuples(index=False)
    ]
    imports.import_judgments(engine, "demo", write_jsonl(folder / "judgments.jsonl", rows), actor=OPERATOR)
    engine.dispose()
    return db_url


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict]]:
    folder = tmp_path_factory.mktemp("annotator-models")
    db_url = build_store(folder)
    done = subprocess.run(
        [sys.executable, "-m", "annotator", "annotators", "--project", "demo", "--format", "json", "--db", db_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    with serving(db_url, folder) as server:
        yield server, json.loads(done.stdout)


def _three(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _table(page, first_header: list[str]) -> list[list[str]]:
    """The st.table whose header row starts with `first_header`."""
    found = [t for t in tables(page) if t and t[0][: len(first_header)] == first_header]
    assert len(found) == 1, tables(page)
    return found[0]


def test_the_confusion_matrix_and_competence_the_user_reads_are_the_clis(served, page) -> None:
    server, cli = served
    login(page, server.url, *LEAD)
    page.get_by_test_id("stSidebar").get_by_role("link", name="Agreement").click()
    page.get_by_role("heading", name="Annotators as the models see them").wait_for(timeout=SLOW)
    wait_drawn(page)
    until(page, lambda: any(t and t[0] == SUMMARY for t in tables(page)), timeout=SLOW)
    summary = _table(page, SUMMARY)
    by_name = {row[0]: row for row in summary[1:]}
    assert sorted(by_name) == sorted(a["annotator"] for a in cli["annotators"])
    for a in cli["annotators"]:
        row = by_name[a["annotator"]]
        ci = a["competence_ci"]
        assert row[3] == _three(a["competence"])
        assert row[4] == f"{ci[0]:.3f} – {ci[1]:.3f}"
        assert row[5] == _three(a["information"])
        assert row[7] == ("yes" if a["spammer"] else "no")
    assert [a["annotator"] for a in cli["annotators"] if a["spammer"]] == [SPAMMER]
    assert "Spammer flagged" in page.get_by_test_id("stMain").inner_text()
    header = ["", *(f"given {g}" for g in cli["grades"])]
    for name in (cli["annotators"][0]["annotator"], SPAMMER):
        if name != cli["annotators"][0]["annotator"]:  # the first is preselected
            choose(page, "Annotator (confusion matrix)", name)
        wait_drawn(page)
        until(page, lambda n=name: f"Estimated confusion of {n}" in page.content(), timeout=SLOW)
        entry = next(a for a in cli["annotators"] if a["annotator"] == name)
        shown = _table(page, header)
        assert shown[1:] == [
            [f"true {t}", *(_three(v) for v in row)] for t, row in zip(cli["grades"], entry["confusion"], strict=True)
        ]

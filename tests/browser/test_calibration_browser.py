"""The Agreement page with a model judge, in a real browser: the human–human tiles and the model's line in
"Model judges vs humans" are what `qrelkit agreement --by kind` prints for the same judgments; the model's
Markdown-like name shows literally and fetches nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.browser.conftest import Server, login, screenshot, serving
from tests.browser.pages import AGREEMENT_LEAD as LEAD
from tests.browser.pages import SLOW, judgments, settled, tiles
from tests.browser.pages import wait_drawn as wait_idle
from tests.conftest import ROOT
from tests.helpers import write_jsonl

pytestmark = pytest.mark.browser

HUMANS = ["ana", "bob", "cy"]
MODEL = "![m](http://127.0.0.1:9/m.png)"
PLANTED_HOST = "127.0.0.1:9"


def model_grades(rows: list[dict]) -> list[dict]:
    """A model judge that grades one above the first human on every third pair of theirs, else the same."""
    first = [r for r in rows if r["annotator"] == "ana"]
    return [{**r, "annotator": MODEL, "grade": min(3, r["grade"] + (i % 3 == 0))} for i, r in enumerate(first)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict]]:
    """A project with three people and a model judge imported as one; the CLI's --by kind JSON on its export."""
    from db import imports, projects
    from db.accounts import users
    from db.accounts.permissions import OPERATOR
    from db.imports import Judges
    from db.store.engine import get_engine
    from db.store.frames import judgments_frame
    from db.store.schema import init_db

    folder = tmp_path_factory.mktemp("calibration")
    db_url = f"sqlite:///{folder / 'calibration.db'}"
    engine = init_db(db_url)
    users.create_user(engine, LEAD[0], "lead", password=LEAD[1], actor=OPERATOR)
    projects.create_project(engine, "demo", actor=OPERATOR)
    rows = judgments(HUMANS, seed=5)
    imports.import_queries(
        engine,
        "demo",
        write_jsonl(
            folder / "q.jsonl",
            [{"id": q, "text": f"Question {i}"} for i, q in enumerate(sorted({r["query_id"] for r in rows}))],
        ),
        actor=OPERATOR,
    )
    imports.import_fragments(
        engine,
        "demo",
        write_jsonl(
            folder / "f.jsonl", [{"id": f, "text": f"Fragment {f}"} for f in sorted({r["fragment_id"] for r in rows})]
        ),
        actor=OPERATOR,
    )
    imports.import_judgments(engine, "demo", write_jsonl(folder / "h.jsonl", rows), actor=OPERATOR)
    imports.import_judgments(
        engine,
        "demo",
        write_jsonl(folder / "m.jsonl", model_grades(rows)),
        actor=OPERATOR,
        judges=Judges("model", "test-model"),
    )
    engine.dispose()
    frame = judgments_frame(get_engine(db_url), "demo")
    exported = write_jsonl(
        folder / "exported.jsonl",
        [
            {
                "query_id": r.query_id,
                "fragment_id": r.fragment_id,
                "annotator": r.annotator,
                "grade": int(r.grade),
                "annotator_kind": r.annotator_kind,
            }
            for r in frame.itertuples(index=False)
        ],
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "annotator",
            "agreement",
            str(exported),
            "--by",
            "kind",
            "--bootstrap",
            "200",
            "--seed",
            "0",
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    with serving(db_url, folder) as server:
        yield server, json.loads(done.stdout)


def test_model_section_shows_the_clis_numbers_and_the_name_literally(served, page) -> None:
    server, cli = served
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    login(page, server.url, *LEAD)
    page.get_by_test_id("stSidebar").get_by_role("link", name="Agreement").click()
    page.get_by_role("heading", name="Model judges vs humans").wait_for(timeout=SLOW)
    wait_idle(page)
    human = cli["human_human"]
    assert human["n_annotators"] == 3
    assert tiles(page)["Krippendorff's α"][0] == f"{human['alpha']['ordinal']['value']:.2f}"
    model = cli["calibration"]["models"][0]
    assert model["model"] == MODEL
    diff = model["vs_consensus"]["bias"]["mean_difference"]
    line = page.get_by_test_id("stText").filter(has_text="Model judge ").first.inner_text()
    assert line.startswith(
        f"Model judge {MODEL}: {model['n_grades']} grades. Against the human consensus it "
        f"grades {abs(diff):.2f} higher on average"
    )
    assert page.locator("[data-testid='stMain'] img").count() == 0
    page.get_by_role("heading", name="Model judges vs humans").scroll_into_view_if_needed()
    screenshot(page, "agreement_model_judges")
    settled(page)
    assert not [url for url in requests if PLANTED_HOST in url]

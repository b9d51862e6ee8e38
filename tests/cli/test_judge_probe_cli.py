"""`qrelkit judge-probe` against the fake OpenAI-compatible endpoint: one judge fooled by the query's words appended
to a fragment (flagged, on its card and in judge-trust), one that holds; the cost is said before any call."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest

from db.accounts.permissions import OPERATOR
from db.imports import Judges, import_fragments, import_judgments, import_queries, import_run
from db.model_judges import list_model_judges
from db.projects import add_guideline
from tests.fake_judge import reply, start
from tests.helpers import run, write_jsonl

QUERIES = {"qa": "zebra migration routes", "qb": "volcanic soil fertility", "qc": "medieval bridge masonry"}


def endpoint(fooled: bool):
    """A chat endpoint that answers grade 0, except (when `fooled`) grade 3 to a prompt holding its query's words
    twice: the query, and the same words appended to the fragment. Returns (server, base URL, prompts)."""
    prompts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = body["messages"][-1]["content"]
            prompts.append(prompt)
            grade = 3 if fooled and any(prompt.count(q) >= 2 for q in QUERIES.values()) else 0
            reply(self, 200, json.dumps({"choices": [{"message": {"content": f"Grade: {grade}"}}]}).encode())

        def log_message(self, *args) -> None:
            pass

    server, url = start(Handler)
    return server, url, prompts


@pytest.fixture
def probed_project(engine, project, tmp_path):
    """Three queries, three fragments each (two sentences), people grade every pair 0 or 1, one stored run."""
    return _build(engine, tmp_path)


def _build(engine, tmp_path, kind: str = "human"):
    """The probed project, people's grades imported as annotators of `kind` (human, or reference: NIST's qrels)."""
    add_guideline(engine, "demo", "Grade 0-3 by how well the fragment answers the query.", actor=OPERATOR)
    import_queries(
        engine,
        "demo",
        write_jsonl(tmp_path / "q.jsonl", [{"id": q, "text": t} for q, t in QUERIES.items()]),
        actor=OPERATOR,
    )
    frags = [
        {"id": f"{q}-{i}", "text": f"Fragment {i} of {q}. It says little more."} for q in QUERIES for i in range(3)
    ]
    import_fragments(engine, "demo", write_jsonl(tmp_path / "f.jsonl", frags), actor=OPERATOR)
    people = [
        {"query_id": q, "fragment_id": f"{q}-{i}", "annotator": "ann", "grade": i % 2}
        for q in QUERIES
        for i in range(3)
    ]
    import_judgments(engine, "demo", write_jsonl(tmp_path / "p.jsonl", people), actor=OPERATOR, judges=Judges(kind))
    lines = "".join(f"{q} Q0 {q}-{i} {i + 1} {10 - i} t\n" for q in QUERIES for i in range(3))
    (tmp_path / "a.run").write_text(lines)
    import_run(engine, "demo", tmp_path / "a.run", name="a", actor=OPERATOR)
    return engine


def _probe(store_url, url, model, *extra):
    options = ["--sample", "6", "--concurrency", "2", "--db", store_url, *extra]
    return run(["judge-probe", "--project", "demo", "--base-url", url, "--model", model, *options])


@pytest.mark.parametrize("fooled", [True, False])
def test_a_fooled_judge_is_flagged_and_an_honest_one_is_not(probed_project, store_url, fooled):
    server, url, prompts = endpoint(fooled)
    model = "fooled-7b" if fooled else "honest-7b"
    try:
        code, _, err = run(["prejudge", "--project", "demo", "--base-url", url, "--model", model, "--db", store_url])
        assert code == 0, err
        assert len(prompts) == 9  # every pair, unaltered: grade 0 from both endpoints
        code, out, err = _probe(store_url, url, model, "--dry-run")
        assert code == 0 and out == ""
        # the six lowest pairs (people's 0s first): the judge already graded them unaltered, so 6 × 4 calls
        assert f"judge-probe with {model}: 6 pairs × 4 probes + 0 unaltered = 24 calls" in err
        assert len(prompts) == 9  # a dry run calls nothing
        code, out, err = _probe(store_url, url, model, "--format", "json")
        assert code == 0, err
        assert err.startswith(f"qrelkit: judge-probe with {model}: 6 pairs")
        assert len(prompts) == 9 + 24
    finally:
        server.shutdown()
        server.server_close()
    report = json.loads(out)
    results = {r["probe"]: r for r in report["results"]}
    assert all(r["n"] == 6 for r in results.values())
    if fooled:
        assert results["query-words"] == {**results["query-words"], "up": 6, "mean_shift": 3.0, "flagged": True}
        assert report["flagged"] == ["query-words"]
    else:
        assert report["flagged"] == [] and all(r["up"] == 0 for r in results.values())
    assert all(not results[p]["flagged"] for p in ("instruction", "first-sentence", "other-query"))
    (judge,) = list_model_judges(probed_project, "demo")
    assert judge.probes == {k: report[k] for k in ("model", "sample", "results", "flagged")}
    code, out, err = run(["judge-trust", "--project", "demo", "--model", model, "--db", store_url, "--format", "json"])
    assert code == 0, err
    gamed = [w for w in json.loads(out)["warnings"] if "is gamed by" in w]
    assert gamed == (
        [f"judge {model} is gamed by query-words probes: its grades moved up on pairs people graded lowest (n 6)"]
        if fooled
        else []
    )


def test_probe_refusals(probed_project, store_url):
    code, _, err = _probe(store_url, "http://127.0.0.1:9/v1", "nobody")
    assert code == 2 and "no model judge 'nobody'" in err


def test_nist_qrels_alone_are_the_grades_the_probe_starts_from(engine, project, store_url, tmp_path):
    """No annotators of the team's own, only NIST's grades imported as the reference: the probe takes the six pairs
    they graded lowest, as it takes people's (before, it refused: no grades from people)."""
    _build(engine, tmp_path, kind="reference")
    server, url, _ = endpoint(False)
    try:
        code, _, err = run(["prejudge", "--project", "demo", "--base-url", url, "--model", "m-7b", "--db", store_url])
        assert code == 0, err
        code, _, err = _probe(store_url, url, "m-7b", "--dry-run")
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0 and "judge-probe with m-7b: 6 pairs × 4 probes + 0 unaltered = 24 calls" in err

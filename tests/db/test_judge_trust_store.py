"""judge-trust from the store: a run's produced_by survives import, and a release whose model filled gaps carries
judge-trust's verdict (with the circularity warning) on its card; a humans-only release carries none."""

from __future__ import annotations

import pytest

from db.accounts.permissions import OPERATOR
from db.imports import Judges, import_fragments, import_judgments, import_queries, import_run
from db.model_judges import project_judge_trust, run_models
from db.releases import create_release
from tests.helpers import trust_collection, write_jsonl, write_trec_run


@pytest.fixture
def judged(engine, project, tmp_path):
    """People grade q0–q8; model judge umbrela (gpt-4o) grades every query as people would; four runs, r3
    produced with gpt-4o-mini."""
    qrels, runs = trust_collection(queries=10, runs=4)
    import_queries(
        engine, "demo", write_jsonl(tmp_path / "q.jsonl", [{"id": q, "text": q} for q in qrels]), actor=OPERATOR
    )
    frags = [{"id": d, "text": f"text {d}"} for docs in qrels.values() for d in docs]
    import_fragments(engine, "demo", write_jsonl(tmp_path / "f.jsonl", frags), actor=OPERATOR)
    rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    people = [{"query_id": q, "fragment_id": d, "annotator": "ann", "grade": g} for q, d, g in rows if q != "q9"]
    import_judgments(engine, "demo", write_jsonl(tmp_path / "p.jsonl", people), actor=OPERATOR)
    machine = [{"query_id": q, "fragment_id": d, "annotator": "umbrela", "grade": g} for q, d, g in rows]
    import_judgments(
        engine,
        "demo",
        write_jsonl(tmp_path / "m.jsonl", machine),
        actor=OPERATOR,
        judges=Judges("model", "gpt-4o"),
    )
    for name, run in runs.items():
        produced = "gpt-4o-mini" if name == "r3" else None
        import_run(
            engine,
            "demo",
            write_trec_run(tmp_path / f"{name}.run", run),
            name=name,
            actor=OPERATOR,
            produced_by=produced,
        )
    return engine


def test_produced_by_is_stored_and_replaced_on_reimport(judged, tmp_path):
    assert run_models(judged, "demo") == {"r0": None, "r1": None, "r2": None, "r3": "gpt-4o-mini"}
    _, runs = trust_collection(queries=10, runs=4)
    runs["r0"]["q0"]["q0-r0-0"] = 99.0  # changed content: re-imported with its model
    import_run(
        judged,
        "demo",
        write_trec_run(tmp_path / "r0b.run", runs["r0"]),
        name="r0",
        actor=OPERATOR,
        produced_by="llama-3",
    )
    assert run_models(judged, "demo")["r0"] == "llama-3"


def test_release_card_carries_the_verdict_of_the_model_that_filled_gaps(judged):
    report = project_judge_trust(judged, "demo", "umbrela")
    assert report.ranking.tau == 1.0 and report.ranking.flips == []  # the judge grades as people do
    assert [h.n_judge_only for h in report.hybrid] == [1] * 4  # q9: the judge alone
    (warning,) = report.warnings
    assert warning.startswith("run r3 was produced with gpt-4o-mini, of the judge's model family (gpt)")
    card = create_release(judged, "demo", actor=OPERATOR, policy="model-fills-gaps").card
    trust = card["judge_trust"]
    assert trust["model"] == "umbrela" and trust["verdict"] == report.verdict
    assert trust["warnings"] == [warning] and trust["tau"] == 1.0 and trust["runs"] == 4
    assert "judge_trust" not in create_release(judged, "demo", actor=OPERATOR).card

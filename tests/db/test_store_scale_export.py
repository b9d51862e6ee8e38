"""A 1–5 project's release read by the field's tools: TREC and BEIR qrels hold gains (grade − 1), so pytrec_eval,
ranx and ir-measures with default options compute the evaluation qrelkit stored; JSONL and CSV keep the grades
as judged and name the scale; the card states the mapping; `--grades as-judged` writes the grades as judged."""

from __future__ import annotations

import csv
import io
import json
import os
import stat

import pytest
import pytrec_eval
import sqlalchemy as sa

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.assignment import assign
from db.grading import record_judgment
from db.pooling import pool
from db.projects import create_project
from db.releases import create_release
from db.store.models import Evaluation, Fragment, Judgment, Pair, Project, Query, Run

QUERIES = [{"id": f"q{i}", "text": f"query number {i}"} for i in range(1, 4)]
FRAGMENTS = [{"id": f"f{i}", "text": f"fragment {i} text"} for i in range(1, 7)]
# Both annotators agree, so the consensus is these grades on the scale 1–5 (1 = irrelevant).
GRADES = {"q1": [5, 1, 3, 1, 2, 1], "q2": [1, 1, 4, 2, 1, 5], "q3": [2, 1, 1, 1, 3, 1]}
# Two runs, distinct scores; "flat" ranks the fragments in file order, "rev" in reverse.
RUNS = {"flat": list(range(1, 7)), "rev": list(range(6, 0, -1))}
# Stored metric → pytrec_eval measure.
MEASURES = {"ndcg@10": "ndcg_cut_10", "P@5": "P_5", "map": "map", "recall@10": "recall_10", "mrr": "recip_rank"}


def _write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def _cli(url, *args) -> int:
    return main([*args, "--db", url])


@pytest.fixture
def released(engine, store_url, tmp_path, capsys):
    """Project p on the scale 1–5, two runs, every pooled pair graded GRADES by two annotators, release 1."""
    create_project(engine, "p", scale=(1, 5), actor=OPERATOR)
    lines = "".join(json.dumps(r) + "\n" for r in QUERIES)
    assert _cli(store_url, "import", "queries", str(_write(tmp_path / "q.jsonl", lines)), "--project", "p") == 0
    lines = "".join(json.dumps(r) + "\n" for r in FRAGMENTS)
    assert _cli(store_url, "import", "fragments", str(_write(tmp_path / "f.jsonl", lines)), "--project", "p") == 0
    for name, order in RUNS.items():
        text = "".join(
            f"{q['id']} Q0 f{d} {r} {10 - r}.5 {name}\n" for q in QUERIES for r, d in enumerate(order, start=1)
        )
        assert (
            _cli(
                store_url,
                "import",
                "run",
                str(_write(tmp_path / f"{name}.trec", text)),
                "--project",
                "p",
                "--name",
                name,
            )
            == 0
        )
    for name in ("ann1", "ann2"):
        create_user(engine, name, "annotator", password="a long password 1", actor=OPERATOR)
    pool(engine, "p", 6, bm25=0, actor=OPERATOR)
    assign(engine, "p", overlap=2, annotators=["ann1", "ann2"], actor=OPERATOR)
    with engine.connect() as conn:
        pairs = conn.execute(
            sa.select(Query.external_id, Fragment.external_id, Pair.id)
            .select_from(Pair)
            .join(Query, Query.id == Pair.query_id)
            .join(Fragment, Fragment.id == Pair.fragment_id)
        ).all()
    for q, f, pid in pairs:
        for who in ("ann1", "ann2"):
            record_judgment(engine, pid, who, GRADES[q][int(f[1:]) - 1])
    create_release(engine, "p", actor=OPERATOR)
    capsys.readouterr()
    return tmp_path


def _stored_means(engine) -> dict[str, dict[str, float]]:
    with engine.connect() as conn:
        return dict(conn.execute(sa.select(Run.name, Evaluation.means).join(Run, Run.id == Evaluation.run_id)).all())


def _run_dict(name: str) -> dict[str, dict[str, float]]:
    return {q["id"]: {f"f{d}": 10 - r + 0.5 for r, d in enumerate(RUNS[name], start=1)} for q in QUERIES}


def _trec_qrels(text: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        q, _, d, g = line.split()
        out.setdefault(q, {})[d] = int(g)
    return out


def _export(store_url, tmp_path, fmt: str, *extra: str):
    out = tmp_path / f"release{'-'.join(('', *extra))}.{fmt}"
    assert _cli(store_url, "export", "--project", "p", "--format", fmt, "-o", str(out), *extra) == 0
    return out


def test_trec_export_holds_gains_read_right_by_pytrec_eval_defaults(engine, store_url, released):
    text = _export(store_url, released, "trec").read_text()
    qrels = _trec_qrels(text)
    assert qrels["q1"] == {f"f{i}": g - 1 for i, g in enumerate(GRADES["q1"], start=1)}  # grade − low
    stored = _stored_means(engine)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()))  # no options: relevance_level 1
    for name in RUNS:
        per_query = evaluator.evaluate(_run_dict(name))
        for metric, measure in MEASURES.items():
            expected = sum(v[measure] for v in per_query.values()) / len(per_query)
            assert stored[name][metric] == pytest.approx(expected, abs=1e-12), (name, metric)
    # Hand check for "flat" on q3 (grades 2 1 1 1 3 1, gains 1 0 0 0 2 0): relevant f1 and f5, P@5 = 2/5.
    assert evaluator.evaluate(_run_dict("flat"))["q3"]["P_5"] == pytest.approx(0.4)


@pytest.mark.slow
def test_beir_export_read_right_by_ranx_and_ir_measures(engine, store_url, released):
    import ir_measures
    from ranx import Qrels
    from ranx import Run as RanxRun
    from ranx import evaluate as ranx_evaluate

    lines = _export(store_url, released, "beir").read_text().splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore"
    qrels = {}
    for line in lines[1:]:
        q, d, g = line.split("\t")
        qrels.setdefault(q, {})[d] = int(g)
    assert min(g for docs in qrels.values() for g in docs.values()) == 0
    stored = _stored_means(engine)
    for name in RUNS:
        assert ranx_evaluate(Qrels(qrels), RanxRun(_run_dict(name)), "precision@5") == pytest.approx(
            stored[name]["P@5"], abs=1e-12
        )
        [agg] = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], qrels, _run_dict(name)).values()
        assert agg == pytest.approx(stored[name]["ndcg@10"], abs=1e-12)


def test_as_judged_export_keeps_the_grades_and_eval_needs_the_scale(engine, store_url, released, capsys):
    out = _export(store_url, released, "trec", "--grades", "as-judged")
    assert _trec_qrels(out.read_text())["q2"] == {f"f{i}": g for i, g in enumerate(GRADES["q2"], start=1)}
    gains = _export(store_url, released, "trec")
    run = released / "flat.trec"
    capsys.readouterr()
    assert main(["eval", str(out), str(run), "--scale", "1-5", "--metrics", "P@5", "--format", "json"]) == 0
    as_judged = json.loads(capsys.readouterr().out)["runs"][0]["mean"]["P@5"]
    assert main(["eval", str(gains), str(run), "--metrics", "P@5", "--format", "json"]) == 0
    assert (
        json.loads(capsys.readouterr().out)["runs"][0]["mean"]["P@5"]
        == as_judged
        == pytest.approx(_stored_means(engine)["flat"]["P@5"])
    )
    # Gains under a declared --scale 1-5 would shift twice: refused, saying why.
    assert main(["eval", str(gains), str(run), "--scale", "1-5"]) == 2
    err = capsys.readouterr().err
    assert "contradicts --scale 1-5" in err and "without --scale" in err


def test_jsonl_and_csv_keep_grades_and_name_the_scale(store_url, released):
    jsonl = [json.loads(line) for line in _export(store_url, released, "jsonl").read_text().splitlines()]
    assert {r["scale"] for r in jsonl} == {"1-5"}
    assert {(r["query_id"], r["fragment_id"]): r["grade"] for r in jsonl}[("q1", "f1")] == 5
    rows = list(csv.DictReader(io.StringIO(_export(store_url, released, "csv").read_text())))
    assert {r["scale"] for r in rows} == {"1-5"}
    assert {(r["query_id"], r["fragment_id"]): int(r["grade"]) for r in rows}[("q2", "f6")] == 5


def test_card_export_states_the_mapping(store_url, released):
    card = json.loads(_export(store_url, released, "card").read_text())
    assert card["qrels_grades"]["gains"] == {"1": 0, "2": 1, "3": 2, "4": 3, "5": 4}
    assert card["qrels_grades"]["scale"] == "1-5"
    assert "as judged" in card["qrels_grades"]["jsonl_csv"]


def test_exported_files_follow_the_umask(store_url, released):
    out = _export(store_url, released, "trec")
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


def _disputed(engine) -> None:
    """On top of `released`: ann2 now grades q1/f2 3 (humans 1, 3: lower median 1), a model judge grades every
    pair 5 (with it q1/f2 would be 3), ann1 cannot judge q3/f6 (ann2's 1 stands), and lead boss adjudicates
    q2/f1 as 4."""
    from db.adjudication import adjudicate
    from db.model_judges import model_annotator

    with engine.connect() as conn:
        pid = {
            (q, f): i
            for q, f, i in conn.execute(
                sa.select(Query.external_id, Fragment.external_id, Pair.id)
                .select_from(Pair)
                .join(Query, Query.id == Pair.query_id)
                .join(Fragment, Fragment.id == Pair.fragment_id)
            ).all()
        }
    record_judgment(engine, pid[("q1", "f2")], "ann2", 3)
    record_judgment(engine, pid[("q3", "f6")], "ann1", None, cant_judge_reason="unreadable")
    model, _ = model_annotator(engine, "llm", "some-model", actor=OPERATOR)
    with engine.begin() as conn:
        project_id = conn.execute(sa.select(Pair.project_id).limit(1)).scalar_one()
        conn.execute(
            sa.insert(Judgment.__table__),
            [{"project_id": project_id, "pair_id": i, "user_id": model, "grade": 5} for i in pid.values()],
        )
    create_user(engine, "boss", "lead", actor=OPERATOR)
    adjudicate(engine, pid[("q2", "f1")], 4, "the lead read it", actor="boss")


def test_consensus_on_the_exports_gives_the_release_byte_for_byte(engine, store_url, released, capsys):
    _disputed(engine)
    create_release(engine, "p", actor=OPERATOR)
    judgments = released / "judgments.jsonl"
    assert _cli(store_url, "export", "--project", "p", "--judgments", "--format", "jsonl", "-o", str(judgments)) == 0
    adjudications = released / "adjudications.jsonl"
    assert _cli(store_url, "export", "--project", "p", "--adjudications", "-o", str(adjudications)) == 0
    assert json.loads(adjudications.read_text())["grade"] == 4
    for fmt in ("trec", "beir"):
        release = _export(store_url, released, fmt).read_bytes()
        out = released / f"consensus.{fmt}"
        # No --scale: the judgments export names the project's scale 1-5 on every line.
        assert (
            main(["consensus", str(judgments), "--adjudications", str(adjudications), "--format", fmt, "-o", str(out)])
            == 0
        )
        assert out.read_bytes() == release
    q1f2 = {line.split()[2]: line.split()[3] for line in release_text(released) if line.startswith("q1 ")}["f2"]
    assert q1f2 == "0"  # gain of grade 1: the humans' lower median, the model left out
    voted = released / "with-models.trec"
    assert (
        main(
            [
                "consensus",
                str(judgments),
                "--scale",
                "1-5",
                "--adjudications",
                str(adjudications),
                "--with-models",
                "-o",
                str(voted),
            ]
        )
        == 0
    )
    assert "q1 0 f2 2\n" in voted.read_text()  # median of 1, 3, 5 = 3, gain 2


def test_consensus_on_the_exports_takes_the_reference_where_no_person_graded(engine, store_url, released, capsys):
    """NIST-style reference qrels (annotator nist, --reference) on q1/f1, which people graded 5, and on q1/f7, a new
    fragment nobody else graded: the release keeps people's 5 on q1/f1 and takes nist's 4 on q1/f7 (gains 4 and
    3); `qrelkit consensus` on the judgments export, where nist's lines say annotator_kind reference, gives the
    same TREC and BEIR files byte for byte (before, it left q1/f7 out), and says one pair came from nist alone."""
    fragment = _write(released / "f7.jsonl", json.dumps({"id": "f7", "text": "fragment 7 text"}) + "\n")
    assert _cli(store_url, "import", "fragments", str(fragment), "--project", "p") == 0
    nist = _write(released / "nist.qrels", "q1 0 f1 2\nq1 0 f7 4\n")
    args = ("import", "judgments", str(nist), "--project", "p", "--annotator", "nist", "--reference")
    assert _cli(store_url, *args) == 0
    create_release(engine, "p", actor=OPERATOR)
    judgments = released / "judgments.jsonl"
    assert _cli(store_url, "export", "--project", "p", "--judgments", "--format", "jsonl", "-o", str(judgments)) == 0
    capsys.readouterr()
    for fmt in ("trec", "beir"):
        release = _export(store_url, released, fmt).read_bytes()
        out = released / f"consensus.{fmt}"
        assert main(["consensus", str(judgments), "--format", fmt, "-o", str(out)]) == 0
        assert out.read_bytes() == release
        assert "1 graded by the reference nist alone" in capsys.readouterr().err
    q1 = {line.split()[2]: line.split()[3] for line in release_text(released) if line.startswith("q1 ")}
    assert (q1["f1"], q1["f7"]) == ("4", "3")  # people's 5 wins over nist's 2; nist's 4 where nobody else graded
    out = released / "consensus.jsonl"
    assert main(["consensus", str(judgments), "--format", "jsonl", "-o", str(out)]) == 0
    rows = {r["fragment_id"]: r for r in map(json.loads, out.read_text().splitlines()) if r["query_id"] == "q1"}
    assert (rows["f7"]["grade"], rows["f7"]["n_grades"], rows["f7"]["reference"]) == (4, 0, "nist")
    assert "reference" not in rows["f1"]


def release_text(tmp_path) -> list[str]:
    return (tmp_path / "release.trec").read_text().splitlines()


def test_a_judgments_export_names_its_scale_for_agreement_and_imports(engine, store_url, released, capsys):
    """The judgments export of a 1-5 project says `"scale": "1-5"` on every line: `qrelkit agreement` reads it on
    1-5 with no --scale (both annotators gave the same grades, so every pair agrees: κ = 1 between them, and the
    report names the scale); a --scale that contradicts the file, and an import into a 0-3 project, are refused
    on line 1 naming both scales; nothing is written."""
    judgments = released / "judgments.jsonl"
    assert _cli(store_url, "export", "--project", "p", "--judgments", "--format", "jsonl", "-o", str(judgments)) == 0
    assert {json.loads(line)["scale"] for line in judgments.read_text().splitlines()} == {"1-5"}
    capsys.readouterr()
    assert main(["agreement", str(judgments), "--format", "json", "--bootstrap", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["scale"] == [1, 5]
    assert main(["agreement", str(judgments), "--scale", "0-3", "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{judgments}:1: the line's grades are on the scale 1-5 (its scale field), not on the scale 0-3" in err
    assert _cli(store_url, "project", "create", "other") == 0
    lines = "".join(json.dumps(r) + "\n" for r in QUERIES)
    assert _cli(store_url, "import", "queries", str(_write(released / "q2.jsonl", lines)), "--project", "other") == 0
    lines = "".join(json.dumps(r) + "\n" for r in FRAGMENTS)
    assert _cli(store_url, "import", "fragments", str(_write(released / "f2.jsonl", lines)), "--project", "other") == 0
    capsys.readouterr()
    assert _cli(store_url, "import", "judgments", str(judgments), "--project", "other") == 2
    assert "scale 1-5 (its scale field), not on the scale 0-3" in capsys.readouterr().err
    with engine.connect() as conn:
        other = conn.execute(sa.select(Project.id).where(Project.name == "other")).scalar_one()
        assert (
            conn.execute(
                sa.select(sa.func.count()).select_from(Judgment).where(Judgment.project_id == other)
            ).scalar_one()
            == 0
        )

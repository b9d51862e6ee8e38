"""`qrelkit judge-trust` on files (qrels or judgments) and on a project (people vs one model judge, stored runs,
a run produced with the judge's model family)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run, swapping, trust_collection, write_jsonl, write_trec_qrels, write_trec_run


def _files(tmp_path, queries=30, runs=6, a="r2", b="r3"):
    qrels, run_dicts = trust_collection(queries=queries, runs=runs)
    human = write_trec_qrels(tmp_path / "human.qrels", qrels)
    judge = write_trec_qrels(tmp_path / "judge.qrels", swapping(qrels, a, b))
    paths = [str(write_trec_run(tmp_path / f"{name}.run", r)) for name, r in run_dicts.items()]
    return qrels, run_dicts, human, judge, paths


def test_files_json_and_table(tmp_path):
    _, _, human, judge, paths = _files(tmp_path)
    code, out, err = run(["judge-trust", str(human), str(judge), *paths, "--format", "json"])
    assert code == 0, err
    report = json.loads(out)
    assert report["ranking"]["tau"] == pytest.approx(13 / 15)  # one discordant pair of 15 (hand)
    assert report["ranking"]["tau_ap"] == pytest.approx(13 / 15)
    (flip,) = report["ranking"]["flips"]
    assert (flip["better"], flip["worse"]) == ("r2.run", "r3.run")
    assert report["leniency"]["bias"] == pytest.approx(0.0, abs=1e-12)  # swapped grades: the values only trade places
    assert report["hybrid"] == []
    code, out, err = run(["judge-trust", str(human), str(judge), *paths])
    assert code == 0, err
    assert out.startswith("verdict: The judge ranks 6 runs")
    assert "τ_ap 0.867" in out and "r2.run > r3.run for people" in out


def test_judgments_file_as_human_gives_the_same_report(tmp_path):
    qrels, _, human, judge, paths = _files(tmp_path)
    records = [
        {"query_id": q, "fragment_id": d, "annotator": who, "grade": g}
        for q, docs in qrels.items()
        for d, g in docs.items()
        for who in ("ann1", "ann2")
    ]
    people = write_jsonl(tmp_path / "people.jsonl", records)
    _, a, _ = run(["judge-trust", str(human), str(judge), *paths, "--format", "json"])
    _, b, _ = run(["judge-trust", str(people), str(judge), *paths, "--format", "json"])
    a, b = json.loads(a), json.loads(b)
    assert a["ranking"]["tau"] == b["ranking"]["tau"] and len(b["ranking"]["flips"]) == 1
    assert [s["human"] for s in a["ranking"]["runs"]] == pytest.approx([s["human"] for s in b["ranking"]["runs"]])
    assert a["leniency"]["confusion"] == b["leniency"]["confusion"]


@pytest.mark.parametrize("people", [("ann1", "human"), ("nist", "reference")])
def test_one_export_with_annotator_kinds_is_both_human_and_judge(tmp_path, people):
    """People's grades and a model judge's in one export: HUMAN reads people's rows, JUDGE the model's, and the
    report equals the two qrels files'. People may be NIST's grades alone, as annotator_kind reference: HUMAN reads
    them as people's labels, as a release and judge-trust --project do (before: "no grades by an annotator of kind
    human")."""
    qrels, _, human, judge, paths = _files(tmp_path)
    records = [
        {"query_id": q, "fragment_id": d, "annotator": who, "annotator_kind": kind, "grade": g}
        for who, kind, grades in ((*people, qrels), ("umbrela", "model", swapping(qrels, "r2", "r3")))
        for q, docs in grades.items()
        for d, g in docs.items()
    ]
    export = str(write_jsonl(tmp_path / "export.jsonl", records))
    _, a, _ = run(["judge-trust", str(human), str(judge), *paths, "--format", "json"])
    code, b, err = run(["judge-trust", export, export, *paths, "--format", "json"])
    assert code == 0, err
    a, b = json.loads(a), json.loads(b)
    assert [r["human"] for r in b["ranking"]["runs"]] == pytest.approx([r["human"] for r in a["ranking"]["runs"]])
    assert b["ranking"]["tau"] == a["ranking"]["tau"] == pytest.approx(13 / 15)
    assert b["leniency"]["confusion"] == a["leniency"]["confusion"]
    people_only = str(write_jsonl(tmp_path / "people.jsonl", records[: len(records) // 2]))
    code, _, err = run(["judge-trust", people_only, people_only, *paths])
    assert code == 2 and "no grades by an annotator of kind model" in err


def test_a_1_5_export_and_a_releases_trec_qrels_need_no_scale(tmp_path):
    """A 1–5 project's judgments export names its scale on every line, and its release's TREC qrels hold gains
    (grade − 1): judge-trust reads both without --scale. Grades g + 1 on 1–5 have the gains g of the 0–3 files, so
    every run's mean, τ and the confusion equal the 0–3 report's; --scale 1-5 changes nothing for the export."""
    qrels, _, human, judge, paths = _files(tmp_path)
    swapped = swapping(qrels, "r2", "r3")
    records = [
        {"query_id": q, "fragment_id": d, "annotator": who, "annotator_kind": kind, "grade": g + 1, "scale": "1-5"}
        for who, kind, grades in (("ann1", "human", qrels), ("umbrela", "model", swapped))
        for q, docs in grades.items()
        for d, g in docs.items()
    ]
    export = str(write_jsonl(tmp_path / "export.jsonl", records))
    _, zero_three, _ = run(["judge-trust", str(human), str(judge), *paths, "--format", "json"])
    reports = {}
    for name, files in {"export": [export, export], "trec human": [str(human), export]}.items():
        code, out, err = run(["judge-trust", *files, *paths, "--format", "json"])
        assert code == 0, (name, err)
        reports[name] = json.loads(out)
    code, out, err = run(["judge-trust", export, export, *paths, "--format", "json", "--scale", "1-5"])
    assert code == 0 and json.loads(out) == reports["export"], err
    base = json.loads(zero_three)
    for name, report in reports.items():
        assert report["ranking"]["tau"] == base["ranking"]["tau"] == pytest.approx(13 / 15), name
        assert [r["human"] for r in report["ranking"]["runs"]] == pytest.approx(
            [r["human"] for r in base["ranking"]["runs"]]
        ), name
        assert [r["judge"] for r in report["ranking"]["runs"]] == pytest.approx(
            [r["judge"] for r in base["ranking"]["runs"]]
        ), name
    assert len(reports["export"]["leniency"]["confusion"]) == 5  # grades 1–5, where the 0–3 files have 4
    other = str(
        write_jsonl(tmp_path / "other.jsonl", [{**r, "scale": "0-4", "grade": r["grade"] - 1} for r in records])
    )
    code, _, err = run(["judge-trust", export, other, *paths])
    assert code == 2 and "on the scale 1-5 and" in err and "on 0-4: the two labels must share a scale" in err
    high = write_trec_qrels(tmp_path / "high.qrels", {"q0": {"d0": 5}})
    code, _, err = run(["judge-trust", str(high), export, *paths])
    assert code == 2 and "high.qrels:1: grade 5 of query q0, fragment d0 is outside the scale 0-4" in err
    assert "TREC and BEIR qrels hold gains (grade − 1)" in err and "give --scale 1-5" in err


def test_hybrid_and_target_width_in_the_table(tmp_path):
    qrels, run_dicts = trust_collection(queries=40, runs=3)
    people = write_trec_qrels(tmp_path / "people.qrels", {q: d for q, d in qrels.items() if int(q[1:]) < 15})
    judge = write_trec_qrels(tmp_path / "judge.qrels", qrels)
    paths = [str(write_trec_run(tmp_path / f"{n}.run", r)) for n, r in run_dicts.items()]
    code, out, err = run(["judge-trust", str(people), str(judge), *paths, "--target-width", "0.2"])
    assert code == 0, err
    assert "hybrid estimate: people on 15 queries, the judge alone on 25 more" in out
    assert "intervals 0.2 wide for every run need" in out


def test_refusals(tmp_path):
    _, _, human, judge, paths = _files(tmp_path, queries=3, runs=2, a="r0", b="r1")
    code, _, err = run(["judge-trust", str(human), str(judge)])
    assert code == 2 and "at least one RUN" in err
    code, _, err = run(["judge-trust", str(human), str(judge), *paths, "--model", "x"])
    assert code == 2 and "--model goes with --project" in err
    code, _, err = run(["judge-trust", "--project", "p"])
    assert code == 2 and "--model" in err


def _texts(store_url, tmp_path, qrels) -> list[str]:
    """The qrels' queries and fragments imported into project demo; the --db option for the CLI."""
    queries = write_jsonl(tmp_path / "q.jsonl", [{"id": q, "text": f"query {q}"} for q in qrels])
    frags = write_jsonl(tmp_path / "f.jsonl", [{"id": d, "text": f"text {d}"} for docs in qrels.values() for d in docs])
    db = ["--db", store_url]
    assert run(["import", "queries", str(queries), "--project", "demo", *db])[0] == 0
    assert run(["import", "fragments", str(frags), "--project", "demo", *db])[0] == 0
    return db


def _stored_as_files(db, human, judge, paths) -> dict:
    """judge-trust on the project's gpt-4o judge equals judge-trust on the HUMAN and JUDGE files (means, τ 2/3);
    the stored report."""
    code, out, err = run(["judge-trust", "--project", "demo", "--model", "gpt-4o", "--format", "json", *db])
    assert code == 0, err
    stored = json.loads(out)
    _, out, _ = run(["judge-trust", str(human), str(judge), *paths, "--format", "json"])
    files = json.loads(out)
    for key in ("human", "judge"):
        assert [s[key] for s in stored["ranking"]["runs"]] == pytest.approx([s[key] for s in files["ranking"]["runs"]])
    assert stored["ranking"]["tau"] == pytest.approx(files["ranking"]["tau"]) == pytest.approx(2 / 3)
    assert stored["leniency"]["confusion"] == files["leniency"]["confusion"]
    return stored


def test_project_people_vs_model_judge_warns_on_its_family(store_url, engine, project, tmp_path):
    qrels, run_dicts, human, judge, paths = _files(tmp_path, queries=10, runs=4, a="r1", b="r2")
    db = _texts(store_url, tmp_path, qrels)
    people = [
        {"query_id": q, "fragment_id": d, "annotator": "ann1", "grade": g}
        for q, docs in qrels.items()
        for d, g in docs.items()
    ]
    machine = [
        {"query_id": q, "fragment_id": d, "annotator": "umbrela", "grade": g}
        for q, docs in swapping(qrels, "r1", "r2").items()
        for d, g in docs.items()
    ]
    code, _, err = run(
        ["import", "judgments", str(write_jsonl(tmp_path / "p.jsonl", people)), "--project", "demo", *db]
    )
    assert code == 0, err
    code, _, err = run(
        [
            "import",
            "judgments",
            str(write_jsonl(tmp_path / "m.jsonl", machine)),
            "--project",
            "demo",
            "--annotator-kind",
            "model",
            "--model",
            "gpt-4o",
            *db,
        ]
    )
    assert code == 0, err
    for name, path in zip(run_dicts, paths, strict=True):
        extra = ["--produced-by", "gpt-4o-mini"] if name == "r3" else []
        code, _, err = run(["import", "run", path, "--name", name, "--project", "demo", *extra, *db])
        assert code == 0, err
    stored = _stored_as_files(db, human, judge, paths)
    (warning,) = stored["warnings"]
    assert "run r3 was produced with gpt-4o-mini" in warning
    assert "Warnings: run r3" in stored["verdict"]
    code, _, err = run(["judge-trust", "--project", "demo", "--model", "nobody", *db])
    assert code == 2 and "no model judge 'nobody'" in err


def test_project_with_nist_qrels_as_its_only_people(store_url, engine, project, tmp_path):
    """A team that has NIST's qrels and a model judge, and no annotators of its own yet: the qrels imported as
    the reference (`--reference`) are people's labels, as a release would hold them, so the stored report equals
    the files' report of the same qrels against the same judge (before, it refused: no grades from people)."""
    qrels, run_dicts, human, judge, paths = _files(tmp_path, queries=10, runs=4, a="r1", b="r2")
    db = _texts(store_url, tmp_path, qrels)
    code, _, err = run(
        ["import", "judgments", str(human), "--project", "demo", "--annotator", "nist", "--reference", *db]
    )
    assert code == 0, err
    model = ["--annotator", "umbrela", "--annotator-kind", "model", "--model", "gpt-4o"]
    code, _, err = run(["import", "judgments", str(judge), "--project", "demo", *model, *db])
    assert code == 0, err
    for name, path in zip(run_dicts, paths, strict=True):
        assert run(["import", "run", path, "--name", name, "--project", "demo", *db])[0] == 0
    _stored_as_files(db, human, judge, paths)

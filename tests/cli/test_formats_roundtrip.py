"""Round trips through the store (SQLite and PostgreSQL): a small collection in each shipped layout, written here,
→ a project (CLI imports) → its release → the field's readers on the exports give the numbers the project stores;
and every file qrelkit writes (stored run, adjudications, release JSONL/CSV) is read back by qrelkit."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest
import pytrec_eval
import sqlalchemy as sa
from sklearn.metrics import cohen_kappa_score

from annotator.cli import main
from db.evaluations import evaluate_stored_run
from db.store.frames import adjudications_frame, judgments_frame
from db.store.models import Fragment, Query, Run
from eval_core.io.judgments import read_adjudications

# One collection, three shipped layouts: 2 queries, 5 passages, graded qrels and a run answering both queries.
QUERIES = {"1037798": "who is robert gray", "1114646": "what is famvir prescribed for"}
PASSAGES = {
    "7067032": "Robert Gray was an American sea captain.",
    "7067056": "Gray Lines tours.",
    "1212": "Famvir is prescribed for shingles.",
    "1213": "Famciclovir treats herpes.",
    "99": "Unrelated passage about the weather.",
}
QRELS = [
    ("1037798", "7067032", 3),
    ("1037798", "7067056", 0),
    ("1114646", "1212", 2),
    ("1114646", "1213", 1),
    ("1114646", "99", 0),
]
RUN = [
    ("1037798", "7067056", 4.1),
    ("1037798", "7067032", 3.9),
    ("1037798", "99", 1.0),
    ("1114646", "1213", 8.5),
    ("1114646", "1212", 8.5),
    ("1114646", "99", 2.0),
]
MEASURES = {"ndcg_cut_10": "ndcg@10", "map": "map", "recip_rank": "mrr", "P_5": "P@5", "recall_10": "recall@10"}


def _put(path: Path, text: str, gz: bool = False) -> Path:
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


def _cli(url: str, *args: str) -> int:
    return main([*args, "--db", url])


def _msmarco(tmp: Path) -> dict[str, list[str]]:
    """MS MARCO / TREC DL as shipped: queries TSV, collection TSV (gzipped), NIST qrels."""
    return {
        "queries": [
            str(_put(tmp / "msmarco-test2019-queries.tsv", "".join(f"{q}\t{t}\n" for q, t in QUERIES.items())))
        ],
        "fragments": [str(_put(tmp / "collection.tsv.gz", "".join(f"{p}\t{t}\n" for p, t in PASSAGES.items()), True))],
        "judgments": [
            str(_put(tmp / "2019qrels-pass.txt", "".join(f"{q} 0 {d} {g}\n" for q, d, g in QRELS))),
            "--annotator",
            "nist",
        ],
    }


def _topics_pyserini_beir(tmp: Path) -> dict[str, list[str]]:
    """TREC topics, a Pyserini JsonCollection (gzipped), BEIR qrels/test.tsv."""
    topics = "".join(
        f"<top>\n<num> Number: {q}\n<title> {t}\n<desc> Description:\nAbout {t}.\n<narr> Narrative:\n"
        f"Relevant if it answers {t}.\n</top>\n\n"
        for q, t in QUERIES.items()
    )
    corpus = "".join(json.dumps({"id": p, "contents": t}) + "\n" for p, t in PASSAGES.items())
    beir = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in QRELS)
    (tmp / "qrels").mkdir()
    return {
        "queries": [str(_put(tmp / "topics.dl19.txt", topics))],
        "fragments": [str(_put(tmp / "corpus.jsonl.gz", corpus, True))],
        "judgments": [str(_put(tmp / "qrels" / "test.tsv", beir)), "--annotator", "vendor"],
    }


def _ir_datasets_jg(tmp: Path) -> dict[str, list[str]]:
    """ir_datasets records (queries: query_id/text; docs: doc_id/title/text) and two judge groups' qrels."""
    queries = "".join(json.dumps({"query_id": q, "text": t}) + "\n" for q, t in QUERIES.items())
    docs = "".join(json.dumps({"doc_id": p, "title": f"T{p}", "text": t}) + "\n" for p, t in PASSAGES.items())
    jg = "".join(f"{q} 1 {d} {g}\n{q} 2 {d} {g}\n" for q, d, g in QRELS)  # both groups agree: the release is QRELS
    return {
        "queries": [str(_put(tmp / "queries.jsonl", queries))],
        "fragments": [str(_put(tmp / "docs.jsonl", docs))],
        "judgments": [str(_put(tmp / "qrels.jg", jg)), "--annotator", "nist", "--qrels-format", "jg"],
    }


LAYOUTS = {"msmarco": _msmarco, "topics+pyserini+beir": _topics_pyserini_beir, "ir_datasets+jg": _ir_datasets_jg}


def _beir_qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR's own qrels loader (beir.datasets.data_loader.GenericDataLoader._load_qrels), line for line."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        for row in reader:
            query_id, corpus_id, score = row[0], row[1], int(row[2])
            qrels.setdefault(query_id, {})[corpus_id] = score
    return qrels


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_collection_as_shipped_to_release_to_the_fields_readers(engine, store_url, tmp_path, capsys, layout):
    files = LAYOUTS[layout](tmp_path)
    assert _cli(store_url, "init", "--project", "dl19") == 0
    for kind in ("queries", "fragments", "judgments"):
        assert _cli(store_url, "import", kind, *files[kind], "--project", "dl19") == 0, capsys.readouterr().err
    run = _put(tmp_path / "run.trec", "".join(f"{q} Q0 {d} {i} {s} bm25\n" for i, (q, d, s) in enumerate(RUN, 1)))
    assert _cli(store_url, "import", "run", str(run), "--project", "dl19") == 0
    assert _cli(store_url, "release", "--project", "dl19") == 0
    for fmt, name in (("trec", "qrels.trec"), ("beir", "test.tsv")):
        assert _cli(store_url, "export", "--project", "dl19", "--format", fmt, "-o", str(tmp_path / name)) == 0
    capsys.readouterr()
    with engine.connect() as conn:
        queries = dict(conn.execute(sa.select(Query.external_id, Query.text)).all())
        fragments = dict(conn.execute(sa.select(Fragment.external_id, Fragment.text)).all())
    assert queries == QUERIES and fragments == PASSAGES
    # One annotator (or two judge groups that agree): the released qrels are the qrels that came in.
    expected = {q: {d: g for qq, d, g in QRELS if qq == q} for q in QUERIES}
    with (tmp_path / "qrels.trec").open() as fh:
        trec = pytrec_eval.parse_qrel(fh)
    assert trec == expected and _beir_qrels(tmp_path / "test.tsv") == expected
    stored, _ = evaluate_stored_run(engine, "dl19", "run")
    run_dict = {q: {d: s for qq, d, s in RUN if qq == q} for q in QUERIES}
    for qrels in (trec, _beir_qrels(tmp_path / "test.tsv")):
        field = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)).evaluate(run_dict)
        for query in QUERIES:
            for measure, ours in MEASURES.items():
                assert stored.per_query.loc[query, ours] == pytest.approx(field[query][measure], abs=1e-12), (
                    query,
                    measure,
                )


def test_trec_topics_keep_description_and_narrative(engine, store_url, tmp_path, capsys):
    files = _topics_pyserini_beir(tmp_path)
    assert _cli(store_url, "init", "--project", "t") == 0
    capsys.readouterr()
    assert (
        _cli(
            store_url,
            "import",
            "queries",
            *files["queries"],
            "--project",
            "t",
            "--topic-field",
            "desc",
            "--report-format",
            "json",
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["format"] == "trec-topics"
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(Query.external_id, Query.text, Query.description, Query.narrative).order_by(Query.external_id)
        ).all()
    assert [tuple(r) for r in rows] == [
        (
            "1037798",
            "About who is robert gray.",
            "About who is robert gray.",
            "Relevant if it answers who is robert gray.",
        ),
        (
            "1114646",
            "About what is famvir prescribed for.",
            "About what is famvir prescribed for.",
            "Relevant if it answers what is famvir prescribed for.",
        ),
    ]


def test_chunked_fragments_store_their_document_and_order(engine, store_url, tmp_path):
    path = _put(
        tmp_path / "chunks.jsonl",
        "".join(
            json.dumps(r) + "\n"
            for r in (
                {"id": "kb-1#1", "doc_id": "kb-1", "chunk": 1, "text": "second"},
                {"id": "kb-1#0", "doc_id": "kb-1", "chunk": 0, "text": "first"},
                {"doc_id": "kb-2", "text": "a whole document", "title": "KB 2"},
            )
        ),
    )
    assert _cli(store_url, "init", "--project", "c") == 0
    assert _cli(store_url, "import", "fragments", str(path), "--project", "c") == 0
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(Fragment.external_id, Fragment.doc_id, Fragment.position, Fragment.title).order_by(
                Fragment.external_id
            )
        ).all()
    assert [tuple(r) for r in rows] == [
        ("kb-1#0", "kb-1", 0, None),
        ("kb-1#1", "kb-1", 1, None),
        ("kb-2", "kb-2", None, "KB 2"),
    ]


def test_judge_groups_become_annotators_whose_agreement_is_measured(engine, store_url, tmp_path, capsys):
    files = _msmarco(tmp_path)
    groups = [
        ("1037798", "7067032", 3, 2),
        ("1037798", "7067056", 0, 0),
        ("1114646", "1212", 2, 1),
        ("1114646", "1213", 1, 1),
        ("1114646", "99", 0, 1),
    ]
    jg = _put(tmp_path / "qrels.jg", "".join(f"{q} 1 {d} {a}\n{q} 2 {d} {b}\n" for q, d, a, b in groups))
    assert _cli(store_url, "init", "--project", "m") == 0
    for kind in ("queries", "fragments"):
        assert _cli(store_url, "import", kind, *files[kind], "--project", "m") == 0
    assert _cli(store_url, "import", "judgments", str(jg), "--project", "m") == 2
    assert "--annotator NAME (multi-judge qrels: also --qrels-format jg" in capsys.readouterr().err
    assert _cli(store_url, "import", "judgments", str(jg), "--project", "m", "--annotator", "nist") == 2
    assert "judge group '2' after '1': multi-judge qrels" in capsys.readouterr().err
    assert (
        _cli(store_url, "import", "judgments", str(jg), "--project", "m", "--annotator", "nist", "--qrels-format", "jg")
        == 0
    )
    out = tmp_path / "judgments.jsonl"
    assert _cli(store_url, "export", "--project", "m", "--judgments", "-o", str(out)) == 0
    capsys.readouterr()
    assert main(["agreement", str(out), "--format", "json", "--bootstrap", "0"]) == 0
    kappa = json.loads(capsys.readouterr().out)["kappa"]
    assert [(k["a"], k["b"]) for k in kappa] == [("nist-jg1", "nist-jg2")]
    reference = cohen_kappa_score(
        [a for *_, a, _ in groups], [b for *_, b in groups], labels=[0, 1, 2, 3], weights="quadratic"
    )
    assert kappa[0]["quadratic"]["value"] == pytest.approx(reference)


def test_qrels_import_refuses_off_scale_grades_with_the_line_and_stamps_the_guideline(
    engine, store_url, tmp_path, capsys
):
    files = _msmarco(tmp_path)
    assert _cli(store_url, "init", "--project", "g") == 0  # a 0-3 project with the bundled guideline, v1
    for kind in ("queries", "fragments"):
        assert _cli(store_url, "import", kind, *files[kind], "--project", "g") == 0
    bad = _put(tmp_path / "bad.tsv", "query-id\tcorpus-id\tscore\n1037798\t7067032\t3\n1114646\t1212\t4\n")
    capsys.readouterr()
    assert _cli(store_url, "import", "judgments", str(bad), "--project", "g", "--annotator", "vendor") == 2
    assert f"{bad}:3: grade 4 is outside the scale 0-3" in capsys.readouterr().err
    assert judgments_frame(engine, "g").empty
    assert (
        _cli(
            store_url,
            "import",
            "judgments",
            files["judgments"][0],
            "--project",
            "g",
            "--annotator",
            "nist",
            "--guideline",
            "7",
        )
        == 2
    )
    assert "--guideline 7: project 'g' has no such version (versions: 1)" in capsys.readouterr().err
    assert (
        _cli(
            store_url,
            "import",
            "judgments",
            files["judgments"][0],
            "--project",
            "g",
            "--annotator",
            "nist",
            "--annotator-kind",
            "model",
            "--model",
            "vendor-llm",
            "--report-format",
            "json",
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["guideline"] == {"version": 1, "from": "the version in force", "judgments": len(QRELS)}
    frame = judgments_frame(engine, "g")
    assert set(frame["guideline"]) == {"1"} and set(frame["annotator_kind"]) == {"model"}


def test_every_file_qrelkit_writes_is_read_back(engine, store_url, tmp_path, capsys):
    """Stored-run export → eval and import run; adjudications export → consensus gives the release; release
    JSONL and CSV → eval gives the stored evaluation."""
    files = _msmarco(tmp_path)
    assert _cli(store_url, "init", "--project", "w") == 0
    for kind in ("queries", "fragments"):
        assert _cli(store_url, "import", kind, *files[kind], "--project", "w") == 0
    people = _put(
        tmp_path / "people.csv",
        "query_id,fragment_id,annotator,grade\n"
        + "".join(f"{q},{d},ann{i},{min(3, g + i - 1) if g else 0}\n" for q, d, g in QRELS for i in (1, 2)),
    )
    assert _cli(store_url, "import", "judgments", str(people), "--project", "w") == 0
    run = _put(tmp_path / "bm25.trec", "".join(f"{q} Q0 {d} {i} {s} bm25\n" for i, (q, d, s) in enumerate(RUN, 1)))
    assert _cli(store_url, "import", "run", str(run), "--project", "w") == 0
    assert _cli(store_url, "user", "add", "boss", "--role", "lead", "--no-password") == 0
    assert (
        _cli(
            store_url,
            "adjudicate",
            "--project",
            "w",
            "--query",
            "1114646",
            "--fragment",
            "1213",
            "--grade",
            "3",
            "--reason",
            "it names the drug's use",
            "--user",
            "boss",
        )
        == 0
    )
    assert _cli(store_url, "release", "--project", "w") == 0
    out = {
        name: tmp_path / name
        for name in ("run.trec", "adj.jsonl", "adj.csv", "judgments.jsonl", "rel.jsonl", "rel.csv", "rel.trec")
    }
    assert _cli(store_url, "export", "--project", "w", "--run", "bm25", "-o", str(out["run.trec"])) == 0
    assert _cli(store_url, "export", "--project", "w", "--adjudications", "-o", str(out["adj.jsonl"])) == 0
    assert (
        _cli(store_url, "export", "--project", "w", "--adjudications", "--format", "csv", "-o", str(out["adj.csv"]))
        == 0
    )
    assert _cli(store_url, "export", "--project", "w", "--judgments", "-o", str(out["judgments.jsonl"])) == 0
    for fmt, name in (("jsonl", "rel.jsonl"), ("csv", "rel.csv"), ("trec", "rel.trec")):
        assert _cli(store_url, "export", "--project", "w", "--format", fmt, "-o", str(out[name])) == 0
    capsys.readouterr()
    # the stored run: the field's run reader sees the scores that came in; importing it again changes nothing
    with out["run.trec"].open() as fh:
        assert pytrec_eval.parse_run(fh) == {q: {d: s for qq, d, s in RUN if qq == q} for q in QUERIES}
    assert (
        _cli(
            store_url,
            "import",
            "run",
            str(out["run.trec"]),
            "--project",
            "w",
            "--name",
            "bm25",
            "--report-format",
            "json",
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["unchanged"] == 1
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(Run)).scalar_one() == 1
    # adjudications: both exports read back as the decision in force; consensus with them is the release
    decided = adjudications_frame(engine, "w")
    assert decided.values.tolist() == [["1114646", "1213", 3, "it names the drug's use", "boss"]]
    for name in ("adj.jsonl", "adj.csv"):
        assert read_adjudications(out[name]).values.tolist() == decided.values.tolist()
    qrels = tmp_path / "consensus.trec"
    assert (
        main(
            [
                "consensus",
                str(out["judgments.jsonl"]),
                "--adjudications",
                str(out["adj.csv"]),
                "-o",
                str(qrels),
                "--format",
                "trec",
            ]
        )
        == 0
    )
    assert qrels.read_text() == out["rel.trec"].read_text()
    # the release's JSONL and CSV are qrels to `qrelkit eval`: the numbers the project stores
    stored, _ = evaluate_stored_run(engine, "w", "bm25")
    capsys.readouterr()
    for name in ("rel.jsonl", "rel.csv", "rel.trec"):
        assert (
            main(["eval", str(out[name]), str(out["run.trec"]), "--metrics", "ndcg@10,map,mrr", "--format", "json"])
            == 0
        )
        printed = json.loads(capsys.readouterr().out)
        means = printed[0]["mean"] if isinstance(printed, list) else printed["runs"][0]["mean"]
        assert means == pytest.approx({m: stored.mean[m] for m in ("ndcg@10", "map", "mrr")}), name


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_no_decisions_yet_is_a_file_every_reader_of_decisions_takes(engine, store_url, tmp_path, capsys, fmt):
    """Before the first adjudication, `export --adjudications` writes a file with no decision; consensus reads it
    as no decision (the same qrels as without it) and `import adjudications` records none."""
    files = _msmarco(tmp_path)
    assert _cli(store_url, "init", "--project", "w") == 0
    for kind in ("queries", "fragments"):
        assert _cli(store_url, "import", kind, *files[kind], "--project", "w") == 0
    people = _put(
        tmp_path / "people.csv",
        "query_id,fragment_id,annotator,grade\n"
        + "".join(f"{q},{d},ann{i},{g}\n" for q, d, g in QRELS for i in (1, 2)),
    )
    assert _cli(store_url, "import", "judgments", str(people), "--project", "w") == 0
    assert _cli(store_url, "user", "add", "boss", "--role", "lead", "--no-password") == 0
    decisions, judged = tmp_path / f"adj.{fmt}", tmp_path / "judgments.jsonl"
    assert _cli(store_url, "export", "--project", "w", "--adjudications", "--format", fmt, "-o", str(decisions)) == 0
    assert _cli(store_url, "export", "--project", "w", "--judgments", "-o", str(judged)) == 0
    without, with_none = tmp_path / "without.trec", tmp_path / "with.trec"
    assert main(["consensus", str(judged), "-o", str(without), "--format", "trec"]) == 0
    assert main(["consensus", str(judged), "--adjudications", str(decisions), "-o", str(with_none)]) == 0
    assert with_none.read_text() == without.read_text() != ""
    capsys.readouterr()
    assert _cli(store_url, "import", "adjudications", str(decisions), "--project", "w", "--lead", "boss") == 0, (
        capsys.readouterr().err
    )
    assert adjudications_frame(engine, "w").empty

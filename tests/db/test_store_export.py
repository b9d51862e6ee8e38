"""Round trips without the app: judgments export → import → export, guidelines from the CLI, safe release CSVs,
and releases that notice when the texts their labels point at change."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.assignment import assign
from db.grading import record_judgment
from db.pooling import pool
from db.projects import BUNDLED_GUIDELINE, current_guideline, list_guidelines
from db.releases import changed_texts, create_release, release_files
from db.store.engine import get_engine
from db.store.frames import judgments_frame
from db.store.models import Fragment, Judgment, Pair, Project, Query, User
from eval_core.agreement.report import agreement_report

QUERIES = [{"id": "q1", "text": "return deadline"}, {"id": "q2", "text": "shipping cost"}]
FRAGMENTS = [{"id": f"f{i}", "text": f"fragment {i} about returns and shipping"} for i in range(1, 5)]


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _cli(url, *args) -> int:
    return main([*args, "--db", url])


def _json_cli(url, *args) -> int:
    """`_cli` with `--format json`, for commands whose report a test reads."""
    return main([*args, "--db", url, "--report-format" if args[0] == "import" else "--format", "json"])


def _corpus(url, project, tmp_path) -> None:
    """Queries and fragments imported into `project` through the CLI."""
    assert _cli(url, "import", "queries", str(_write(tmp_path / "q.jsonl", QUERIES)), "--project", project) == 0
    assert _cli(url, "import", "fragments", str(_write(tmp_path / "f.jsonl", FRAGMENTS)), "--project", project) == 0


@pytest.fixture
def judged(engine, store_url, tmp_path, capsys):
    """Project src created by the CLI (bundled guideline v1), a run pooled to depth 4, judged by two
    annotators: grades, a can't-judge with its reason, notes a spreadsheet would run or that hold commas,
    quotes and newlines."""
    assert _cli(store_url, "project", "create", "src") == 0
    _corpus(store_url, "src", tmp_path)
    for name in ("ann1", "ann2"):
        create_user(engine, name, "annotator", actor=OPERATOR)
    run = tmp_path / "run.trec"
    run.write_text(
        "".join(f"{q['id']} Q0 {f['id']} {r} {5 - r} bm25\n" for q in QUERIES for r, f in enumerate(FRAGMENTS, start=1))
    )
    assert _cli(store_url, "import", "run", str(run), "--project", "src") == 0
    pool(engine, "src", 4, bm25=0, actor=OPERATOR)
    assign(engine, "src", overlap=2, annotators=["ann1", "ann2"], actor=OPERATOR)
    with engine.connect() as conn:
        pairs = {
            f"{q}/{f}": i
            for q, f, i in conn.execute(
                sa.select(Query.external_id, Fragment.external_id, Pair.id)
                .select_from(Pair)
                .join(Query, Query.id == Pair.query_id)
                .join(Fragment, Fragment.id == Pair.fragment_id)
            ).all()
        }
    grades = {
        ("q1/f1", "ann1"): (3, "=SUM(A1:A9)", None),
        ("q1/f1", "ann2"): (2, 'says "30 days", then more\non a new line', None),
        ("q1/f2", "ann1"): (None, None, "fragment is in German"),
        ("q1/f2", "ann2"): (1, "@mentions it", None),
        ("q2/f3", "ann1"): (0, None, None),
        ("q2/f3", "ann2"): (0, "-off topic", None),
        ("q2/f4", "ann1"): (2, "+partly", None),
        ("q2/f4", "ann2"): (3, None, None),
    }
    for (pair, who), (grade, note, reason) in grades.items():
        record_judgment(engine, pairs[pair], who, grade, note=note, cant_judge_reason=reason)
    capsys.readouterr()
    return pairs


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_export_import_export_is_byte_identical(engine, store_url, judged, tmp_path, capsys, fmt):
    first = tmp_path / f"first.{fmt}"
    assert _cli(store_url, "export", "--project", "src", "--judgments", "--format", fmt, "-o", str(first)) == 0
    assert "wrote 8 judgment(s)" in capsys.readouterr().err
    assert _cli(store_url, "project", "create", "dst") == 0
    _corpus(store_url, "dst", tmp_path)
    capsys.readouterr()
    assert _json_cli(store_url, "import", "judgments", str(first), "--project", "dst") == 0
    assert json.loads(capsys.readouterr().out)["created"] == 8
    second = tmp_path / f"second.{fmt}"
    assert _cli(store_url, "export", "--project", "dst", "--judgments", "--format", fmt, "-o", str(second)) == 0
    assert second.read_bytes() == first.read_bytes()
    src, dst = judgments_frame(engine, "src", times=True), judgments_frame(engine, "dst", times=True)
    columns = ["query_id", "fragment_id", "annotator", "grade", "note", "guideline", "cant_judge_reason", "updated_at"]
    assert src[columns].astype(object).equals(dst[columns].astype(object))


def _grade_by_length(query: str, fragment: str, guideline: str) -> int:
    """A stand-in model judge: a grade from the texts alone (deterministic)."""
    return (len(query) + len(fragment)) % 4


@pytest.fixture
def with_judge(engine, judged):
    """`judged` plus model judge `llm` (model gpt-4o-mini) grading every pair with prompt v1, then the first two
    pairs again with prompt v2: one annotator, two prompt versions, the later one the judge's current."""
    from annotator.judge_run import prejudge

    prejudge(
        engine,
        "src",
        _grade_by_length,
        model="gpt-4o-mini",
        annotator="llm",
        prompt_version="umbrela-v1",
        actor=OPERATOR,
    )
    prejudge(
        engine,
        "src",
        lambda q, f, g: 3,
        model="gpt-4o-mini",
        annotator="llm",
        prompt_version="umbrela-v2",
        limit=2,
        actor=OPERATOR,
    )
    return judged


@pytest.fixture
def other_store_url(store_kind, tmp_path, request):
    """A second, empty database at head on the same engine kind: an export taken to another store."""
    from tests.conftest import _create_at_head, pg_schema

    url, drop = (
        (f"sqlite:///{tmp_path / 'other.db'}", lambda: None)
        if store_kind == "sqlite"
        else pg_schema(request.getfixturevalue("pg_url"))
    )
    _create_at_head(url)
    yield url
    get_engine(url).dispose()
    get_engine.cache_clear()
    drop()


def _who(engine, project: str) -> list[tuple]:
    """(query, fragment, annotator, grade, kind, model, prompt version) of every current judgment."""
    with engine.connect() as conn:
        return sorted(
            map(
                tuple,
                conn.execute(
                    sa.select(
                        Query.external_id,
                        Fragment.external_id,
                        User.username,
                        Judgment.grade,
                        User.kind,
                        User.model_name,
                        Judgment.prompt_version,
                    )
                    .select_from(Judgment)
                    .join(Pair, Pair.id == Judgment.pair_id)
                    .join(Query, Query.id == Pair.query_id)
                    .join(Fragment, Fragment.id == Pair.fragment_id)
                    .join(User, User.id == Judgment.user_id)
                    .join(Project, Project.id == Judgment.project_id)
                    .where(Project.name == project)
                ).all(),
            )
        )


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_model_judges_stay_model_judges_in_another_store(
    engine, store_url, with_judge, other_store_url, tmp_path, capsys, fmt
):
    """Export → import into a new project of another database (no options) → export is byte-identical, and the
    judge is still a model judge there, with its model and each grade's prompt version."""
    first = tmp_path / f"first.{fmt}"
    assert _cli(store_url, "export", "--project", "src", "--judgments", "--format", fmt, "-o", str(first)) == 0
    assert _cli(other_store_url, "project", "create", "dst") == 0
    _corpus(other_store_url, "dst", tmp_path)
    capsys.readouterr()
    capsys.readouterr()
    assert _json_cli(other_store_url, "import", "judgments", str(first), "--project", "dst") == 0
    assert json.loads(capsys.readouterr().out)["created"] == 16
    second = tmp_path / f"second.{fmt}"
    assert _cli(other_store_url, "export", "--project", "dst", "--judgments", "--format", fmt, "-o", str(second)) == 0
    assert second.read_bytes() == first.read_bytes()
    other = get_engine(other_store_url)
    src, dst = _who(engine, "src"), _who(other, "dst")
    assert dst == src
    prompts = {(q, f): p for q, f, who, _, kind, model, p in dst if who == "llm"}
    assert {(kind, model) for _, _, who, _, kind, model, _ in dst if who == "llm"} == {("model", "gpt-4o-mini")}
    assert sorted(prompts.values()) == ["umbrela-v1"] * 6 + ["umbrela-v2"] * 2
    assert {kind for _, _, who, _, kind, _, _ in dst if who != "llm"} == {"human"}
    with other.connect() as conn:
        judge = conn.execute(sa.select(User.prompt_version, User.password_hash).where(User.username == "llm")).one()
    assert tuple(judge) == ("umbrela-v2", None)  # the prompt of its latest grade; it cannot log in


def test_an_export_with_model_judges_refuses_to_import_them_as_people(
    engine, store_url, with_judge, other_store_url, tmp_path, capsys
):
    path = tmp_path / "j.csv"
    assert _cli(store_url, "export", "--project", "src", "--judgments", "--format", "csv", "-o", str(path)) == 0
    assert _cli(other_store_url, "project", "create", "dst") == 0
    _corpus(other_store_url, "dst", tmp_path)
    capsys.readouterr()
    assert _cli(other_store_url, "import", "judgments", str(path), "--project", "dst", "--annotator-kind", "human") == 2
    line = next(i for i, row in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if ",llm," in row)
    assert (
        f"qrelkit: error: {path}:{line}: annotator_kind is 'model' on this line, but the import says "
        f"--annotator-kind human; leave out --annotator-kind or that column (and 7 more problem(s))"
        in capsys.readouterr().err
    )
    assert judgments_frame(get_engine(other_store_url), "dst").empty


def test_export_fields_and_escaping(engine, store_url, judged, tmp_path):
    path = tmp_path / "j.jsonl"
    assert _cli(store_url, "export", "--project", "src", "--judgments", "--format", "jsonl", "-o", str(path)) == 0
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert list(rows[0]) == [
        "query_id",
        "fragment_id",
        "annotator",
        "grade",
        "cant_judge_reason",
        "note",
        "guideline",
        "time",
        "annotator_kind",
        "model",
        "prompt_version",
        "scale",
    ]
    assert {r["scale"] for r in rows} == {"0-3"}
    assert {(r["annotator_kind"], r["model"], r["prompt_version"]) for r in rows} == {("human", None, None)}
    cant = next(r for r in rows if r["grade"] is None)
    assert (cant["annotator"], cant["cant_judge_reason"], cant["guideline"]) == ("ann1", "fragment is in German", "1")
    assert rows[0]["time"].endswith("+00:00")
    csv_path = tmp_path / "j.csv"
    assert _cli(store_url, "export", "--project", "src", "--judgments", "--format", "csv", "-o", str(csv_path)) == 0
    text = csv_path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == (
        "query_id,fragment_id,annotator,grade,cant_judge_reason,note,guideline,time,"
        "annotator_kind,model,prompt_version,scale"
    )
    for raw in ("=SUM(A1:A9)", "@mentions it", "-off topic", "+partly"):
        assert f",'{raw}," in text and f",{raw}," not in text


def test_agreement_and_consensus_read_the_export(engine, store_url, judged, tmp_path, capsys):
    path = tmp_path / "j.csv"
    assert _cli(store_url, "export", "--project", "src", "--judgments", "--format", "csv", "-o", str(path)) == 0
    capsys.readouterr()
    assert main(["agreement", str(path), "--format", "json", "--bootstrap", "0"]) == 0
    from_cli = json.loads(capsys.readouterr().out)
    in_store = agreement_report(
        judgments_frame(engine, "src")[["query_id", "fragment_id", "annotator", "grade"]], bootstrap=0
    ).to_dict()
    assert from_cli["alpha"] == in_store["alpha"] and from_cli["n_units"] == in_store["n_units"] == 4
    qrels = tmp_path / "qrels.trec"
    assert main(["consensus", str(path), "-o", str(qrels), "--format", "trec"]) == 0
    assert qrels.read_text() == "q1 0 f1 2\nq1 0 f2 1\nq2 0 f3 0\nq2 0 f4 2\n"  # lower median of real grades


def test_guideline_commands_and_version_filter(engine, store_url, judged, tmp_path, capsys):
    assert [g.version for g in list_guidelines(engine, "src")] == [1]
    assert current_guideline(engine, "src").text == BUNDLED_GUIDELINE.read_text(encoding="utf-8")
    v2 = tmp_path / "v2.md"
    v2.write_text("# Grading v2\n\nGrade 3 only when the fragment alone answers.\n", encoding="utf-8")
    assert (
        _json_cli(store_url, "guideline", "add", str(v2), "--project", "src", "--note", "3 needs the whole answer") == 0
    )
    added = json.loads(capsys.readouterr().out)
    assert (added["version"], added["note"]) == (2, "3 needs the whole answer")
    assert _json_cli(store_url, "guideline", "list", "--project", "src") == 0
    assert [(g["version"], g["note"]) for g in json.loads(capsys.readouterr().out)] == [
        (1, "bundled guideline grading-0-3.md"),
        (2, "3 needs the whole answer"),
    ]
    assert _cli(store_url, "guideline", "show", "2", "--project", "src") == 0
    assert capsys.readouterr().out == v2.read_text(encoding="utf-8")
    assert _cli(store_url, "guideline", "show", "7", "--project", "src") == 2
    assert "no guideline version '7' in project 'src' (versions: 1, 2)" in capsys.readouterr().err
    assert _cli(store_url, "guideline", "add", str(tmp_path / "nope.md"), "--project", "src") == 2
    assert capsys.readouterr().err.startswith(f"qrelkit: error: {tmp_path / 'nope.md'}: cannot read")
    record_judgment(engine, judged["q1/f1"], "ann1", 2, note="regraded under v2")
    only = tmp_path / "v2.jsonl"
    assert (
        _cli(
            store_url,
            "export",
            "--project",
            "src",
            "--judgments",
            "--guideline-version",
            "2",
            "--format",
            "jsonl",
            "-o",
            str(only),
        )
        == 0
    )
    rows = [json.loads(line) for line in only.read_text().splitlines()]
    assert [(r["query_id"], r["fragment_id"], r["annotator"], r["grade"], r["guideline"]) for r in rows] == [
        ("q1", "f1", "ann1", 2, "2")
    ]


def test_project_create_guideline_choice(engine, store_url, capsys):
    assert _cli(store_url, "project", "create", "bare", "--no-guideline") == 0
    assert current_guideline(engine, "bare") is None
    assert _cli(store_url, "project", "create", "five", "--scale", "1-5") == 0
    # the bundled guideline is written for 0-3: a 1-5 project gets one generated for its scale
    assert current_guideline(engine, "five").text.startswith("# Relevance grading guideline (1–5)\n")
    capsys.readouterr()
    assert _json_cli(store_url, "project", "create", "std") == 0
    assert json.loads(capsys.readouterr().out)["guideline"] == 1


def test_import_refuses_an_export_whose_guideline_version_is_missing(engine, store_url, judged, tmp_path, capsys):
    path = tmp_path / "j.jsonl"
    assert _cli(store_url, "export", "--project", "src", "--judgments", "--format", "jsonl", "-o", str(path)) == 0
    assert _cli(store_url, "project", "create", "bare", "--no-guideline") == 0
    _corpus(store_url, "bare", tmp_path)
    capsys.readouterr()
    assert _cli(store_url, "import", "judgments", str(path), "--project", "bare") == 2
    err = capsys.readouterr().err
    assert (
        f"qrelkit: error: {path}:1: guideline version '1' does not exist in project 'bare' (versions: none "
        f"yet); add it with `qrelkit guideline add` (and 7 more problem(s))"
    ) in err
    assert "qrelkit: rejected: " in err  # every further line is listed too
    assert judgments_frame(engine, "bare").empty


def test_release_csv_escapes_formula_cells_and_trec_stays_exact(engine, project):
    """Ids stored before ids with whitespace were refused, written straight into the store."""
    nasty = ["=cmd|' /C calc'!A0", "@SUM(A1)"]
    create_user(engine, "ann", "annotator", actor=OPERATOR)
    with engine.begin() as conn:
        qid = conn.execute(
            sa.insert(Query).values(project_id=project.id, external_id="+q", text="query").returning(Query.id)
        ).scalar_one()
        for ext in nasty:
            fid = conn.execute(
                sa.insert(Fragment)
                .values(project_id=project.id, external_id=ext, text=ext, content_hash=ext)
                .returning(Fragment.id)
            ).scalar_one()
            conn.execute(
                sa.insert(Pair).values(project_id=project.id, query_id=qid, fragment_id=fid, created_at=sa.func.now())
            )
    assign(engine, "demo", overlap=1, annotators=["ann"], actor=OPERATOR)
    with engine.connect() as conn:
        pids = conn.execute(sa.select(Pair.id).order_by(Pair.id)).scalars().all()
    for pid in pids:
        record_judgment(engine, pid, "ann", 2)
    create_release(engine, "demo", actor=OPERATOR)
    files = release_files(engine, "demo")
    lines = files["qrels.csv"].decode().splitlines()
    assert lines[1:] == [
        '\'+q,\'=cmd|\' /C calc\'!A0,2,1,0,"{""ann"": 2}",0-3',
        '\'+q,\'@SUM(A1),2,1,0,"{""ann"": 2}",0-3',
    ]
    assert files["qrels.tsv"].decode().splitlines()[1] == "+q\t=cmd|' /C calc'!A0\t2"  # exported, not a crash
    assert files["qrels.trec"].decode().splitlines()[1] == "+q 0 @SUM(A1) 2"  # TREC is exact: no escaping
    assert json.loads(files["judgments.jsonl"].decode().splitlines()[0])["fragment_id"] == nasty[0]


def test_export_of_an_old_release_lists_pairs_whose_text_changed(engine, store_url, judged, tmp_path, capsys):
    create_release(engine, "src", actor=OPERATOR)
    out = tmp_path / "qrels.trec"
    assert _cli(store_url, "export", "--project", "src", "--format", "trec", "-o", str(out)) == 0
    assert "warning" not in capsys.readouterr().err
    card = json.loads(release_files(engine, "src")["card.json"])
    assert card["text_hashes"]["fragments"] == 4 and "changed_since_release" not in card
    changed = [*FRAGMENTS[:2], {"id": "f3", "text": "fragment 3, rewritten"}, FRAGMENTS[3]]
    assert _cli(store_url, "import", "fragments", str(_write(tmp_path / "f2.jsonl", changed)), "--project", "src") == 0
    assert (
        _cli(
            store_url,
            "import",
            "queries",
            str(_write(tmp_path / "q2.jsonl", [QUERIES[0], {"id": "q2", "text": "shipping costs abroad"}])),
            "--project",
            "src",
        )
        == 0
    )
    capsys.readouterr()
    assert _cli(store_url, "export", "--project", "src", "--release", "1", "--format", "trec", "-o", str(out)) == 0
    err = capsys.readouterr().err
    assert "warning: 2 labelled pair(s) now point at changed text" in err
    assert "q2 f3 (query+fragment text changed)" in err and "q2 f4 (query text changed)" in err
    assert changed_texts(engine, "src", 1) == {
        "pairs": [["q2", "f3", "query+fragment"], ["q2", "f4", "query"]],
        "queries": ["q2"],
        "fragments": ["f3"],
    }
    assert json.loads(release_files(engine, "src", 1)["card.json"])["changed_since_release"]["queries"] == ["q2"]
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE releases SET text_hashes = NULL"))
    assert _cli(store_url, "export", "--project", "src", "--format", "trec", "-o", str(out)) == 0
    assert "predates text hashes" in capsys.readouterr().err
    get_engine.cache_clear()


def test_agreement_reads_a_releases_jsonl_and_csv(engine, store_url, judged, tmp_path, capsys):
    create_release(engine, "src", actor=OPERATOR)
    reports = []
    for fmt in ("jsonl", "csv"):
        path = tmp_path / f"release.{fmt}"
        assert _cli(store_url, "export", "--project", "src", "--format", fmt, "-o", str(path)) == 0
        capsys.readouterr()
        assert main(["agreement", str(path), "--format", "json", "--bootstrap", "0"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    in_store = agreement_report(
        judgments_frame(engine, "src")[["query_id", "fragment_id", "annotator", "grade"]], bootstrap=0
    ).to_dict()
    assert reports[0]["alpha"] == reports[1]["alpha"] == in_store["alpha"]


def test_the_store_doc_lists_the_export_fields_and_what_import_reads():
    """docs/store.md names the export's fields as eval_core.io.judgments.EXPORT_FIELDS (in order) and every optional
    field the judgments reader takes: a field added to either list fails here until the page says so."""
    from eval_core.io.judgments import EXPORT_FIELDS, OPTIONAL
    from tests.conftest import ROOT

    text = (ROOT / "docs" / "store.md").read_text(encoding="utf-8")
    export = text[text.index("## Judgments out") :]
    assert f"\n`{', '.join(EXPORT_FIELDS)}`\n" in export[: export.index("\n## ")]
    reads = text[text.index("- Judgments are read by") : text.index("- **Can't judge**")]
    assert [name for name in OPTIONAL if f"`{name}`" not in reads] == []


def test_a_release_export_takes_its_format_from_the_outputs_suffix(engine, store_url, judged, tmp_path, capsys):
    create_release(engine, "src", actor=OPERATOR)
    for suffix, fmt in ((".qrels", "trec"), (".jsonl", "jsonl"), (".tsv", "beir")):
        guessed, told = tmp_path / f"guessed{suffix}", tmp_path / f"told{suffix}"
        assert _cli(store_url, "export", "--project", "src", "-o", str(guessed)) == 0
        assert _cli(store_url, "export", "--project", "src", "--format", fmt, "-o", str(told)) == 0
        assert guessed.read_bytes() == told.read_bytes()
    capsys.readouterr()
    assert _cli(store_url, "export", "--project", "src", "-o", str(tmp_path / "qrels.txt")) == 2
    err = capsys.readouterr().err
    assert "a release export needs --format (trec, beir, jsonl, csv or card)" in err and "qrels.txt" in err
    assert not (tmp_path / "qrels.txt").exists()

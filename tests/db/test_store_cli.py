"""`qrelkit init | db upgrade | project | user | import`.

Exit codes, JSON reports, passwords, --db and QRELKIT_DB_URL.
"""

from __future__ import annotations

import io
import json

import pytest

from annotator.cli import main as cli_main
from db.accounts.users import authenticate
from db.projects import get_project
from db.store.engine import get_engine
from db.store.schema import current_revision, head_revision


def main(argv: list[str]) -> int:
    """`qrelkit ARGV --format json`: these tests read the reports' JSON (the default output is a summary)."""
    return cli_main([*argv, "--report-format" if argv[0] == "import" else "--format", "json"])


def _json(capsys) -> object:
    return json.loads(capsys.readouterr().out)


def test_init_is_idempotent_and_creates_project(empty_store_url, capsys):
    assert main(["init", "--db", empty_store_url, "--project", "demo", "--scale", "0-2"]) == 0
    out = _json(capsys)
    assert (out["revision"], out["project"]) == (head_revision(), {"name": "demo", "scale": [0, 2], "created": True})
    assert main(["init", "--db", empty_store_url, "--project", "demo"]) == 0
    assert _json(capsys)["project"]["created"] is False
    assert main(["db", "upgrade", "--db", empty_store_url]) == 0
    assert _json(capsys)["to"] == head_revision()
    engine = get_engine(empty_store_url)
    assert get_project(engine, "demo").scale == (0, 2)
    engine.dispose()
    get_engine.cache_clear()


def test_commands_refuse_a_database_without_schema(empty_store_url, capsys):
    if empty_store_url.startswith("sqlite"):
        import sqlite3

        sqlite3.connect(empty_store_url.removeprefix("sqlite:///")).close()  # a file, but no schema
    assert main(["project", "list", "--db", empty_store_url]) == 2
    assert "has no qrelkit schema; run `qrelkit init`" in capsys.readouterr().err
    assert current_revision(get_engine(empty_store_url)) is None  # and did not create it behind your back
    get_engine(empty_store_url).dispose()
    get_engine.cache_clear()


# Every command that opens the store, with arguments that would otherwise be valid.
DB_COMMANDS = [
    ["project", "list"],
    ["project", "create", "p"],
    ["project", "labels", "p", "--labels", "1=a"],
    ["import", "queries", "q.jsonl", "--project", "p"],
    ["user", "list"],
    ["user", "deactivate", "x"],
    ["guideline", "list", "--project", "p"],
    ["guideline", "show", "--project", "p"],
    ["guideline", "add", "g.md", "--project", "p"],
    ["pool", "--project", "p", "--depth", "5"],
    ["assign", "--project", "p"],
    ["release", "--project", "p"],
    ["export", "--project", "p", "--format", "trec", "-o", "out.trec"],
    ["export", "--project", "p", "--judgments", "--format", "jsonl", "-o", "out.jsonl"],
    ["evaluate-run", "r", "--project", "p"],
    ["holes", "r", "--project", "p"],
    ["serve", "--port", "8999"],
]


@pytest.mark.parametrize("command", DB_COMMANDS, ids=[" ".join(c[:2]) for c in DB_COMMANDS])
def test_only_init_creates_a_database(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("QRELKIT_DB_URL", raising=False)
    (tmp_path / "g.md").write_text("grade what is there\n")
    assert cli_main(command) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "qrelkit: error: no database at qrelkit.db: create one with `qrelkit init --db sqlite:///./qrelkit.db`"
    ), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.md"]  # no empty qrelkit.db left behind
    get_engine.cache_clear()


def test_env_url_project_and_users(engine, store_url, capsys, monkeypatch):
    monkeypatch.setenv("QRELKIT_DB_URL", store_url)
    assert main(["project", "create", "alpha", "--scale", "0-4", "--overlap", "3"]) == 0
    assert _json(capsys)["scale"] == [0, 4]
    assert main(["project", "create", "alpha"]) == 2
    assert "already exists" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO("correct-horse-22\n"))
    assert main(["user", "add", "ann", "--role", "annotator", "--password-stdin"]) == 0
    assert _json(capsys)["can_login"] is True
    assert authenticate(engine, "ann", "correct-horse-22") is not None
    prompts = iter(["pw-one", "pw-two"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(prompts))
    assert main(["user", "add", "lead", "--role", "lead"]) == 2
    assert "passwords do not match" in capsys.readouterr().err
    monkeypatch.setattr("getpass.getpass", lambda prompt="": "same-password")
    assert main(["user", "add", "lead", "--role", "lead"]) == 0
    capsys.readouterr()
    assert authenticate(engine, "lead", "same-password").role == "lead"
    assert main(["user", "list"]) == 0
    assert [u["username"] for u in _json(capsys)] == ["ann", "lead"]


def test_imports_report_and_reject(engine, project, store_url, tmp_path, capsys):
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "b"}\n')
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n{"_id": "d2", "text": "y"}\n')
    (tmp_path / "bm25.trec").write_text("q1 Q0 d1 1 2.0 bm25\nq1 Q0 d2 2 1.0 bm25\n")
    (tmp_path / "j.csv").write_text("query_id,fragment_id,annotator,grade\nq1,d1,ann,3\n")
    for kind, name in (
        ("queries", "queries.jsonl"),
        ("fragments", "corpus.jsonl"),
        ("run", "bm25.trec"),
        ("judgments", "j.csv"),
    ):
        assert main(["import", kind, str(tmp_path / name), "--project", "demo", "--db", store_url]) == 0
        report = _json(capsys)
        assert report["kind"] == kind and report["created"] >= 1 and report["rejected"] == []
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,fragment_id,annotator,grade\nq1,d1,ann,7\nq9,d1,ann,1\n")
    assert main(["import", "judgments", str(bad), "--project", "demo", "--db", store_url]) == 2
    err = capsys.readouterr().err
    assert f"qrelkit: error: {bad}:2: grade 7 is outside the scale 0-3 (and 1 more problem(s))" in err
    assert f"qrelkit: rejected: {bad}:3: unknown query id 'q9'" in err
    assert main(["import", "run", str(tmp_path / "bm25.trec"), "--project", "nope", "--db", store_url]) == 2
    assert "no project named 'nope'" in capsys.readouterr().err


def test_adjudicate_names_its_lead(engine, queue, store_url, capsys):
    """`qrelkit adjudicate` records the decision in the name of the lead given with --lead or --user (checked); without
    one the CLI operator is refused with what to pass, and nothing is written."""
    from db.store.frames import adjudications_frame, qrels_frame

    pair = ["adjudicate", "--project", "demo", "--query", "q1", "--fragment", "f2", "--db", store_url]
    assert main([*pair, "--grade", "2", "--reason", "answers it"]) == 2
    assert "the CLI operator cannot adjudicate anonymously: name an active lead" in capsys.readouterr().err
    assert main([*pair, "--grade", "2", "--reason", "answers it", "--user", "ann1"]) == 2
    assert "only a lead may do this; 'ann1' is annotator" in capsys.readouterr().err
    assert main([*pair, "--grade", "2", "--reason", "answers it", "--lead", "ann1"]) == 2  # the spelling of
    assert "only a lead may do this; 'ann1' is annotator" in capsys.readouterr().err  # import adjudications
    assert main([*pair, "--grade", "7", "--reason", "answers it", "--user", "boss"]) == 2
    assert "outside the scale 0-3" in capsys.readouterr().err
    assert (
        main([*pair[:4], "q1", "--fragment", "f9", *pair[7:], "--grade", "2", "--reason", "x", "--user", "boss"]) == 2
    )
    assert "no pair (q1, f9) in project 'demo'" in capsys.readouterr().err
    assert adjudications_frame(engine, "demo").empty
    assert main([*pair, "--grade", "2", "--reason", "answers it", "--user", "boss"]) == 0
    out = _json(capsys)
    assert (out["query_id"], out["fragment_id"], out["grade"], out["reason"], out["by"]) == (
        "q1",
        "f2",
        2,
        "answers it",
        "boss",
    )
    assert adjudications_frame(engine, "demo").values.tolist() == [["q1", "f2", 2, "answers it", "boss"]]
    assert qrels_frame(engine, "demo").values.tolist() == [["q1", "f2", 2]]  # no grades yet: the decision alone


def test_reports_are_readable_by_default_and_json_on_request(empty_store_url, capsys):
    # Default: indented `key: value` lines, not JSON; --format json: the report's JSON, shape unchanged.
    assert cli_main(["init", "--db", empty_store_url, "--project", "demo", "--scale", "1-5"]) == 0
    text = capsys.readouterr().out
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert f"revision: {head_revision()}" in text and "  scale: 1, 5" in text
    assert cli_main(["project", "list", "--db", empty_store_url]) == 0
    listed = capsys.readouterr().out
    assert "name: demo" in listed and "overlap fraction: 1" in listed and "{" not in listed
    assert cli_main(["project", "list", "--db", empty_store_url, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["name"] == "demo"


def test_db_takes_a_sqlite_files_path(tmp_path, monkeypatch, capsys):
    """`--db run/qrelkit.db` (what a newcomer types) names a SQLite file, as `sqlite:///run/qrelkit.db` does; so
    does QRELKIT_DB_URL. It used to end in SQLAlchemy's "Could not parse SQLAlchemy URL"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run").mkdir()
    assert main(["init", "--db", "run/qrelkit.db", "--project", "p", "--scale", "1-5"]) == 0
    assert _json(capsys)["database"] == "sqlite:///run/qrelkit.db"
    assert (tmp_path / "run" / "qrelkit.db").is_file()
    monkeypatch.setenv("QRELKIT_DB_URL", str(tmp_path / "run" / "qrelkit.db"))
    assert main(["project", "list"]) == 0
    assert [p["name"] for p in _json(capsys)] == ["p"]
    get_engine.cache_clear()


def test_a_textless_import_tells_its_note_once(engine, project, store_url, tmp_path, capsys):
    """A run naming a fragment never imported says so once: the readable report keeps the count and the
    line that named it, and the note (what to do) goes to stderr alone; it was printed on both. The JSON report
    keeps its shape, note included, and stderr still tells a person whose stdout goes to a script."""
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n')
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    run = tmp_path / "bm25.trec"
    run.write_text("q1 Q0 d1 1 2.0 bm25\nq1 Q0 ghost 2 1.0 bm25\n")
    for kind, name in (("queries", "queries.jsonl"), ("fragments", "corpus.jsonl")):
        assert main(["import", kind, str(tmp_path / name), "--project", "demo", "--db", store_url]) == 0
    capsys.readouterr()
    assert cli_main(["import", "run", str(run), "--project", "demo", "--db", store_url]) == 0
    out, err = capsys.readouterr()
    assert (out + err).count("1 fragment(s) have no text yet") == 1
    assert err.startswith("note: 1 fragment(s) have no text yet: their pairs are evaluated and released")
    assert "  count: 1\n" in out and f"  examples: {run}:2: 'ghost'\n" in out and "note" not in out
    run.write_text("q1 Q0 d1 1 2.0 bm25\nq1 Q0 spook 2 1.0 bm25\n")
    assert main(["import", "run", str(run), "--project", "demo", "--name", "other", "--db", store_url]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["without_text"]["note"].startswith("1 fragment(s) have no text yet")
    assert err.startswith("note: 1 fragment(s) have no text yet")


def test_qrels_of_gains_are_read_back_as_a_1_to_5_projects_grades(engine, store_url, tmp_path, capsys):
    """A 1-5 release's TREC qrels hold gains 0-4 (grade − 1): `--qrels-grades gains` reads them back as grades."""
    from db.accounts.permissions import OPERATOR
    from db.projects import create_project
    from db.store.frames import judgments_frame

    create_project(engine, "five", scale=(1, 5), actor=OPERATOR)
    (tmp_path / "q.tsv").write_text("q1\tshipping abroad\n")
    (tmp_path / "f.jsonl").write_text("".join(f'{{"id": "d{i}", "contents": "text {i}"}}\n' for i in range(1, 5)))
    base = ["--project", "five", "--db", store_url]
    assert main(["import", "queries", str(tmp_path / "q.tsv"), *base]) == 0
    assert main(["import", "fragments", str(tmp_path / "f.jsonl"), *base]) == 0
    gains = tmp_path / "golden.qrels"
    gains.write_text("q1 0 d1 4\nq1 0 d2 0\nq1 0 d3 1\nq1 0 d4 0\n")
    capsys.readouterr()
    assert main(["import", "judgments", str(gains), "--annotator", "gold", *base]) == 2
    assert "import them with --qrels-grades gains" in capsys.readouterr().err
    assert main(["import", "judgments", str(gains), "--qrels-grades", "gains", *base]) == 2
    assert "name the annotator with --annotator" in capsys.readouterr().err
    assert main(["import", "judgments", str(gains), "--annotator", "gold", "--qrels-grades", "gains", *base]) == 0
    frame = judgments_frame(engine, "five").sort_values("fragment_id")
    assert frame[["fragment_id", "grade"]].values.tolist() == [["d1", 5], ["d2", 1], ["d3", 2], ["d4", 1]]

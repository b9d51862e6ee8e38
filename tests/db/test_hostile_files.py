"""Hostile files are refused with `path:line` and one sentence, never a traceback, on SQLite and PostgreSQL:
an unclosed CSV quote, JSON lone surrogates, NUL and deep nesting, ids with Unicode whitespace or invisible
characters in every import kind (TREC runs included), notes over the bound; a bad output path or a full disk is
one sentence, and a killed writer's temporary file is removed by the next run."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from annotator.cli import main, os_sentence
from db.accounts.permissions import OPERATOR
from db.grading import record_judgment
from db.imports import import_fragments, import_judgments, import_queries, import_run
from db.store.models import Query
from eval_core.errors import InputError
from eval_core.io.formats import read_run
from eval_core.io.records import MAX_JSON_DEPTH, MAX_NOTE_CHARS, iter_records
from eval_core.io.writers import write_atomically

# Whitespace other than the ASCII space and tab, and invisible characters, none of which an id may hold.
ODD = {
    "no-break space": "\u00a0",
    "vertical tab": "\v",
    "form feed": "\f",
    "next line (NEL)": "\x85",
    "em space": "\u2003",
    "zero-width space": "\u200b",
    "right-to-left override": "\u202e",
    "control": "\x01",
}


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


def test_a_stray_csv_quote_is_refused_at_the_line_it_opened_on(engine, project, tmp_path):
    bad = write(tmp_path / "q.csv", 'id,text\nu1,one\nu2,"two has a stray quote\nu3,three\nu4,four\nu5,five\n')
    with pytest.raises(InputError, match=r"q\.csv:3: malformed CSV: the quote opened on this line is never closed"):
        import_queries(engine, "demo", bad, actor=OPERATOR)
    with engine.connect() as conn:  # all or nothing: u1 is not in either
        assert conn.execute(sa.select(sa.func.count()).select_from(Query)).scalar_one() == 0
    good = write(tmp_path / "ok.csv", 'id,text\nu1,"two\nlines"\nu2,"say ""hi"""\n')
    assert [r["text"] for _, r in iter_records(good)] == ["two\nlines", 'say "hi"']


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "q1", "text": "a\\ud800b"}', "lone surrogate"),
        ('{"id": "q1", "text": "a\\u0000b"}', "NUL character"),
        ('{"id": "q1", "text": "a\u0000b"}', "NUL byte"),
        ('{"id": "q1", "text": "x", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper"),
        (
            '{"id": "q1", "text": "x", "meta": ' + "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1) + "}",
            "nested deeper",
        ),
    ],
)
def test_json_that_no_store_can_hold_is_refused_with_its_line(engine, project, tmp_path, line, problem):
    path = write(tmp_path / "q.jsonl", '{"id": "q0", "text": "fine"}\n' + line + "\n")
    with pytest.raises(InputError, match=rf"q\.jsonl:2: .*{problem}"):
        import_queries(engine, "demo", path, actor=OPERATOR)


@pytest.mark.parametrize("name", sorted(ODD))
def test_ids_with_odd_whitespace_or_invisible_characters_are_refused_in_every_import(engine, project, tmp_path, name):
    odd = f"d{ODD[name]}1"
    cases = [
        (import_queries, "q.jsonl", json.dumps({"id": odd, "text": "t"}) + "\n"),
        (import_fragments, "f.jsonl", json.dumps({"id": odd, "text": "t"}) + "\n"),
        (import_run, "r.run", f"q1 Q0 {odd} 1 2.0 tag\nq1 Q0 d2 2 1.0 tag\n"),
        (import_run, "t.run", f"q1\tQ0\t{odd}\t1\t2.0\ttag\nq1\tQ0\td2\t2\t1.0\ttag\n"),  # tab-separated
        (import_run, "m.run", f"q1 \tQ0\t {odd}  1\t2.0 tag\nq1 Q0 d2 2 1.0 tag\n"),  # spaces and tabs mixed
        (
            import_judgments,
            "j.jsonl",
            json.dumps({"query_id": "q1", "fragment_id": odd, "annotator": "a", "grade": 1}) + "\n",
        ),
    ]
    for importer, file, text in cases:
        with pytest.raises(InputError, match=r":1: ") as refused:
            importer(engine, "demo", write(tmp_path / file, text), actor=OPERATOR)
        assert f"U+{ord(ODD[name]):04X}" in str(refused.value) or "whitespace" in str(refused.value), importer


def test_a_big_trec_run_with_a_no_break_space_in_one_id_is_refused_on_that_line(tmp_path):
    lines = [f"q{i % 50} Q0 d{i} 1 {1.0 / (i + 1)} tag\n" for i in range(5000)]
    lines[4321] = "q21 Q0 d\u00a04321 1 0.5 tag\n"
    with pytest.raises(InputError, match=r"run:4322: holds U\+00A0 NO-BREAK SPACE"):
        read_run(write(tmp_path / "run", "".join(lines)))


@pytest.mark.parametrize("sep", ["\t", " \t "])
def test_a_big_tab_separated_run_with_a_no_break_space_in_one_id_is_refused_on_that_line(tmp_path, sep):
    lines = [sep.join(f"q{i % 50} Q0 d{i} 1 {1.0 / (i + 1)} tag".split()) + "\n" for i in range(5000)]
    lines[4321] = sep.join(["q21", "Q0", "d\u00a04321", "1", "0.5", "tag"]) + "\n"
    with pytest.raises(InputError, match=r"run:4322: holds U\+00A0 NO-BREAK SPACE"):
        read_run(write(tmp_path / "run", "".join(lines)))


def test_notes_and_reasons_over_the_bound_are_refused(engine, queue, tmp_path):
    pair = queue[("q1", "f1")]
    with pytest.raises(ValueError, match=f"at most {MAX_NOTE_CHARS}"):
        record_judgment(engine, pair, "ann1", 2, note="n" * (MAX_NOTE_CHARS + 1))
    with pytest.raises(ValueError, match=f"at most {MAX_NOTE_CHARS}"):
        record_judgment(engine, pair, "ann1", None, cant_judge_reason="r" * 2_000_000)
    assert record_judgment(engine, pair, "ann1", 2, note="n" * MAX_NOTE_CHARS).changed
    big = write(
        tmp_path / "j.jsonl",
        json.dumps({"query_id": "q1", "fragment_id": "f2", "annotator": "ann2", "grade": 1, "note": "x" * 2_000_000})
        + "\n",
    )
    with pytest.raises(InputError, match=r"j\.jsonl:1: line longer than 262,144 bytes \(a judgment's line holds a "):
        import_judgments(engine, "demo", big, actor=OPERATOR)  # refused as read: the line is longer than any note
    bigger = write(
        tmp_path / "k.jsonl",
        json.dumps({"query_id": "q1", "fragment_id": "f2", "annotator": "ann2", "grade": 1, "note": "x" * 20_000})
        + "\n",
    )
    with pytest.raises(InputError, match=rf"k\.jsonl:1: .*note has 20000 characters; at most {MAX_NOTE_CHARS}"):
        import_judgments(engine, "demo", bigger, actor=OPERATOR)


def test_a_run_line_longer_than_two_ids_is_refused_as_it_is_read(engine, queue, tmp_path):
    """A docid of 20,000 characters on line 2: refused there, by the store's line bound, before the rest is read
    (the id check after reading named it too, but only once the whole file was held)."""
    huge = write(tmp_path / "huge.run", "q1 Q0 f1 1 2.0 t\nq1 Q0 " + "A" * 20_000 + " 2 1.0 t\nq1 Q0 f2 3 0.5 t\n")
    with pytest.raises(
        InputError,
        match=r"huge\.run:2: line longer than 8,192 bytes \(a run line holds ids of at most 500 characters\)",
    ):
        import_run(engine, "demo", huge, name="huge", actor=OPERATOR)
    fine = write(tmp_path / "fine.run", "q1 Q0 f1 1 2.0 t\nq1 Q0 " + "B" * 501 + " 2 1.0 t\n")
    with pytest.raises(InputError, match=r"fine\.run:2: document id is 501 characters; at most 500"):
        import_run(engine, "demo", fine, name="fine", actor=OPERATOR)  # under the line bound: the id check names it


@pytest.mark.parametrize("target", ["a directory", "a missing folder", "/proc/self/mem", "a 300-character name"])
def test_a_bad_output_path_is_one_sentence(store_url, queue, tmp_path, capsys, target):
    out = {
        "a directory": str(tmp_path),
        "a missing folder": str(tmp_path / "nope" / "j.jsonl"),
        "/proc/self/mem": "/proc/self/mem",
        "a 300-character name": str(tmp_path / ("x" * 300)),
    }[target]
    code = main(["export", "--project", "demo", "--judgments", "--format", "jsonl", "-o", out, "--db", store_url])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("qrelkit: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_full_disk_is_one_sentence():
    full = OSError(errno.ENOSPC, "No space left on device", "/data/release.jsonl")
    assert os_sentence(full) == "cannot write /data/release.jsonl: the disk is full (nothing was written)"


def test_a_killed_writers_temporary_file_is_removed_by_the_next_run(tmp_path):
    target = tmp_path / "out.jsonl"
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import os, sys; sys.path.insert(0, os.getcwd()); from eval_core.io.writers import write_atomically\n"
                "def lines():\n    yield 'a\\n'\n    os.kill(os.getpid(), 9)\n"
                f"write_atomically({str(target)!r}, lines())"
            ),
        ],
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.returncode == -9
    left = list(tmp_path.glob(".out.jsonl.*.tmp"))
    assert len(left) == 1 and not target.exists()
    mine = tmp_path / f".out.jsonl.{os.getpid()}.live.tmp"  # a live writer's file stays
    mine.write_text("x")
    write_atomically(target, iter(["b\n"]))
    assert target.read_text() == "b\n" and list(tmp_path.glob(".out.jsonl.*.tmp")) == [mine]


@pytest.mark.parametrize("name", ["zero-width space", "right-to-left override", "no-break space", "control"])
def test_an_annotator_name_with_invisible_characters_is_refused_by_the_judgments_import(
    engine, project, tmp_path, name
):
    rows = [{"query_id": "q1", "fragment_id": f"f{i}", "annotator": "lea", "grade": 1} for i in range(50)]
    rows[7]["annotator"] = f"le{ODD[name]}a"
    path = write(tmp_path / "j.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=rf"j\.jsonl:8: annotator .* U\+{ord(ODD[name]):04X}"):
        import_judgments(engine, "demo", path, actor=OPERATOR)


def test_a_reader_that_leaves_early_gets_no_error_line(tmp_path):
    """`qrelkit eval --per-query --format csv … | head -1`: the reader closes the pipe after one line; qrelkit
    stops quietly (exit 0, nothing on stderr) instead of "qrelkit: error: the file: Broken pipe", exit 2
    (BrokenPipeError is an OSError, so it must be told apart before the OSError sentence)."""
    qrels = write(tmp_path / "q.qrels", "".join(f"q{i} 0 d{j} {j % 2}\n" for i in range(2000) for j in range(5)))
    run = write(tmp_path / "r.run", "".join(f"q{i} Q0 d{j} {j + 1} {9 - j} r\n" for i in range(2000) for j in range(5)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "annotator", "eval", str(qrels), str(run), "--per-query", "--format", "csv"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])),
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"run,query_id,")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert err == ""

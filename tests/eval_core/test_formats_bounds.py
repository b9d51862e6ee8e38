"""Readers on the layouts people have and on files built to hurt: tab- and mixed-separated TREC files take the
columnar path; decompression bombs (identical lines, blank lines, repeated records) are refused within seconds and
a set memory; overflowing numbers, I/O errors, repeated JSON keys, infinite ids and float grades are path:line."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from eval_core.errors import InputError
from eval_core.io import trec_text
from eval_core.io.collection import read_queries
from eval_core.io.formats import load_qrels, load_run, read_qrels, read_run
from eval_core.io.records import iter_lines, read_limits
from eval_core.io.trec_text import single_spaced

ROOT = Path(__file__).resolve().parents[2]
RUN = "q1 Q0 d7 1 2.5 t\nq1 Q0 d3 2 1.5 t\nq2 Q0 d1 1 0.5 t\n"
QRELS = "q1 0 d3 3\nq1 0 d7 2\nq2 0 d1 0\n"


def rows(df, value):
    return sorted(zip(df["query_id"], df["doc_id"], df[value].tolist(), strict=True))


@pytest.fixture
def no_scan(monkeypatch):
    """Fail if the line-by-line scan reads anything: the columnar path must take the file."""

    def refuse(*args, **kwargs):
        raise AssertionError("the line scan read a file the columnar path should take")

    monkeypatch.setattr(trec_text, "_scan_lines", refuse)


@pytest.mark.parametrize(
    "sep", ["\t", "  ", " \t", "\t\t ", "mixed"], ids=["tab", "two-spaces", "space-tab", "tabs-space", "mixed"]
)
def test_runs_and_qrels_separated_by_tabs_or_any_mix_take_the_columnar_path(tmp_path, no_scan, sep):
    def spaced(text: str) -> str:
        out = []
        for i, line in enumerate(text.splitlines()):
            fields = line.split(" ")
            if sep == "mixed":  # every line its own mix, with leading and trailing blanks
                out.append(" \t"[i % 2] + (" \t ", "\t", "  ")[i % 3].join(fields) + "\t \r\n")
            else:
                out.append(sep.join(fields) + "\n")
        return "".join(out)

    run, qrels = tmp_path / "r.run", tmp_path / "q.qrels.gz"
    run.write_text(spaced(RUN))
    qrels.write_bytes(gzip.compress(spaced(QRELS).encode()))
    assert rows(read_run(run), "score") == [("q1", "d3", 1.5), ("q1", "d7", 2.5), ("q2", "d1", 0.5)]
    assert rows(read_qrels(qrels), "grade") == [("q1", "d3", 3), ("q1", "d7", 2), ("q2", "d1", 0)]


@pytest.mark.parametrize("sep", [" ", "\t", " \t"], ids=["spaces", "tabs", "mixed"])
def test_a_block_read_as_a_view_of_a_larger_buffer_is_parsed_from_its_own_bytes(sep):
    """A big run's block is a view into its worker's reused buffer, which holds other bytes around it (here a tab
    and a space before, a tab after, and a whole other line): the block is searched and parsed where it lies,
    never past its ends, and gives what its bytes alone give."""
    block = RUN.replace(" ", sep).encode()
    buffer = bytearray(b"zz\t \n" + block + b"q9\tQ0\td9\t1\t9\tt\n\t")
    view = memoryview(buffer)[5 : 5 + len(block)]
    from_view = trec_text.arrow_trec_table(view, "run")
    from_bytes = trec_text.arrow_trec_table(bytes(view), "run")
    assert from_view is not None and from_bytes is not None
    assert from_view.qids.to_pylist() == from_bytes.qids.to_pylist() == [b"q1", b"q2"]
    assert from_view.docid.to_pylist() == [b"d7", b"d3", b"d1"]
    assert from_view.value.tolist() == [2.5, 1.5, 0.5]


def test_single_spaced_makes_one_space_of_each_run_and_drops_the_edges():
    assert single_spaced(b"a\tb  c \t d\n") == b"a b c d\n"
    assert single_spaced(b" \ta b\t\r\nc\t d \n") == b"a b\r\nc d\n"
    assert single_spaced(b"a b c\n") is None  # already single-spaced: no copy
    assert single_spaced(b"a\vb c\n") is None  # \v is not a separator here: the id check refuses it


@pytest.mark.parametrize("odd", ["\u00a0", "\v", "\f", "\x85", "\u200b", "\u202e", "\x01", "\u3000"])
def test_a_tab_separated_run_with_an_odd_character_in_an_id_is_refused_on_its_line(tmp_path, odd):
    lines = [f"q{i % 7}\tQ0\td{i}\t1\t{1.0 / (i + 1)}\ttag\n" for i in range(3000)]
    lines[2345] = f"q1\tQ0\td{odd}x\t1\t0.5\ttag\n"
    with pytest.raises(InputError, match=r"run:2346: holds U\+"):
        load_run(_write(tmp_path / "run", "".join(lines)))


def test_a_tab_separated_run_with_a_repeated_doc_is_refused_on_its_line(tmp_path):
    text = "".join(f"q1\tQ0\td{i}\t{i}\t{-i}\tt\n" for i in range(50)) + "q1\tQ0\td7\t51\t-51\tt\n"
    with pytest.raises(InputError, match=r"run:51: doc 'd7' repeated for query 'q1' \(first on line 8\)"):
        load_run(_write(tmp_path / "run", text))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _gzip_of(path: Path, chunk: bytes, times: int, head: bytes = b"") -> Path:
    """A gzip of `head` then `chunk` repeated, written without ever holding the whole."""
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    with path.open("wb") as fh:
        fh.write(z.compress(head))
        for _ in range(times):
            fh.write(z.compress(chunk))
        fh.write(z.flush())
    return path


BOMB = textwrap.dedent(
    """
    import json, sys, time
    from eval_core.errors import InputError
    kind, path = sys.argv[1:3]
    t0 = time.perf_counter()
    try:
        if kind == "run":
            from eval_core.io.formats import load_run
            load_run(path)
        elif kind == "store-run":  # the bound the store's run import sets (db.imports.RUN_LINE_BYTES)
            from eval_core.io.formats import load_run
            from eval_core.io.records import tighter_limits
            with tighter_limits(line_bytes=8192, line_note="a run line holds ids of at most 500 characters"):
                load_run(path)
        elif kind == "evaluate":
            from eval_core import evaluate
            evaluate(sys.argv[3], path)
        elif kind == "queries":
            from eval_core.io.collection import read_queries
            out = read_queries(path)
            raise InputError(path, out.problems[0].line, f"{out.total_problems} problems; " + out.problems[0].problem)
        error = None
    except InputError as exc:
        error = str(exc)
    # VmHWM, not ru_maxrss: Linux carries the parent's peak into ru_maxrss across fork and exec, so a child of a
    # large pytest process would report pytest's memory; VmHWM belongs to this process's own address space.
    hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(json.dumps({"error": error, "seconds": time.perf_counter() - t0, "peak_mib": int(hwm.split()[1]) / 1024}))
    """
)


def _bomb(kind: str, path: Path, *extra: str, env: dict | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", BOMB, kind, str(path), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


# 8M identical run lines: 240 MB once decompressed, 1 MB of gzip; read whole, they took ~1 GB before refusal.
IDENTICAL = b"q1 Q0 doc7 1 1.5 bomb\n" * 4096


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["run", "evaluate"])
def test_a_gzip_of_identical_lines_is_refused_at_line_2_within_seconds_and_bounded_memory(tmp_path, kind):
    bomb = _gzip_of(tmp_path / "bomb.run.gz", IDENTICAL, 2000)
    qrels = _write(tmp_path / "q.qrels", QRELS)
    got = _bomb(kind, bomb, str(qrels))
    assert got["error"] is not None and ":2: doc 'doc7' repeated for query 'q1' (first on line 1)" in got["error"]
    assert got["seconds"] < 20, got
    assert got["peak_mib"] < 400, got  # imports take ~150 MB; one 16 MiB block and its parse, not 240 MB of lines


@pytest.mark.slow
def test_a_gzip_of_blank_lines_is_refused_past_the_line_limit_which_the_environment_sets(tmp_path):
    bomb = _gzip_of(tmp_path / "blank.run.gz", b"\n" * 65536, 80, head=b"q1 Q0 d1 1 1.0 t\n")  # 5.2M lines
    got = _bomb("run", bomb, env={"QRELKIT_MAX_READ_LINES": "1000000"})
    assert got["error"] is not None and "holds more than 1,000,000 lines" in got["error"], got
    assert "QRELKIT_MAX_READ_LINES" in got["error"]
    assert got["seconds"] < 20, got


@pytest.mark.slow
@pytest.mark.parametrize("head", [b"", b"q1 Q0 d1 1 1.0 t\n"], ids=["blank-only", "one-line-then-blank"])
@pytest.mark.parametrize("kind", ["run", "evaluate"])
def test_a_gzip_of_blank_lines_is_refused_in_seconds_at_the_default_limit(tmp_path, head, kind):
    """101M blank lines (101 MB inflated from about 100 KB): every reader that ignores blank lines skips them in
    bulk, so the default 100M-line limit is reached in seconds (reading them one by one took about 3 minutes)."""
    bomb = _gzip_of(tmp_path / "blank.run.gz", b"\n" * 1_048_576, 97, head=head + b"\n" * 1_000_000)
    qrels = _write(tmp_path / "q.qrels", QRELS)
    got = _bomb(kind, bomb, str(qrels))
    assert got["error"] is not None and "holds more than 100,000,000 lines" in got["error"], got
    assert got["seconds"] < 20, got
    assert got["peak_mib"] < 400, got


@pytest.mark.slow
def test_a_gzip_of_repeated_query_records_stops_after_the_problems_kept(tmp_path):
    head = b'{"id": "q1", "text": "one"}\n'
    bomb = _gzip_of(tmp_path / "queries.jsonl.gz", head * 4096, 250, head=head)  # 1M records
    got = _bomb("queries", bomb)
    assert got["error"] is not None and "100 problems; duplicate query id 'q1' (first at line 1)" in got["error"]
    assert got["seconds"] < 20, got


def test_the_byte_limit_refuses_a_file_that_inflates_past_it(tmp_path, monkeypatch):
    monkeypatch.setenv("QRELKIT_MAX_READ_BYTES", "100000")
    bomb = _gzip_of(tmp_path / "big.run.gz", b"".join(f"q1 Q0 d{i} 1 1.0 t\n".encode() for i in range(10_000)), 1)
    with pytest.raises(InputError, match=r"big\.run\.gz.*holds more than 100,000 bytes \(decompressed\)"):
        load_run(bomb)
    with pytest.raises(InputError, match=r"holds more than 100,000 bytes"):
        list(iter_lines(bomb))


def test_a_limit_that_is_not_a_whole_number_is_refused(monkeypatch):
    monkeypatch.setenv("QRELKIT_MAX_READ_LINES", "lots")
    with pytest.raises(ValueError, match="QRELKIT_MAX_READ_LINES must be a whole number"):
        read_limits()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("q.qrels", "q1 0 d1 1\nq1 0 d2 100000000000000000000000\n"),
        (
            "q.jsonl",
            '{"query_id": "q1", "doc_id": "d1", "grade": 1}\n'
            '{"query_id": "q1", "doc_id": "d2", "grade": 100000000000000000000000}\n',
        ),
        ("q.csv", "query_id,doc_id,grade\nq1,d1,1\nq1,d2,100000000000000000000000\n"),
        ("q.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t100000000000000000000000\n"),
    ],
)
def test_a_grade_no_integer_holds_is_path_line(tmp_path, name, text):
    line = 2 if name in ("q.qrels", "q.jsonl") else 3  # CSV and TSV: after the header
    with pytest.raises(InputError, match=rf"{name.replace('.', '[.]')}:{line}: grade .* is out of range"):
        load_qrels(_write(tmp_path / name, text))


def test_a_float_grade_in_json_qrels_is_refused(tmp_path):
    path = _write(
        tmp_path / "q.jsonl",
        '{"query_id": "q1", "doc_id": "d1", "grade": 1}\n{"query_id": "q1", "doc_id": "d2", "grade": 1.0}\n',
    )
    with pytest.raises(InputError, match=r"q\.jsonl:2: grade 1\.0 is not an integer"):
        load_qrels(path)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": 1e400, "text": "x"}', "the number 1e400 is too large"),
        ('{"id": "q2", "text": "x", "text": "y"}', "the key 'text' appears twice"),
        ('{"id": -Infinity, "text": "x"}', "-Infinity is not a JSON value"),
    ],
)
def test_json_an_id_cannot_be_read_from_is_path_line(tmp_path, line, problem):
    path = _write(tmp_path / "q.jsonl", '{"id": "q1", "text": "fine"}\n' + line + "\n")
    with pytest.raises(InputError, match=rf"q\.jsonl:2: invalid JSON: {re.escape(problem)}"):
        read_queries(path)


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="Linux only")
def test_an_io_error_names_the_file():
    with pytest.raises(InputError, match=r"^/proc/self/mem:1: cannot read the file \(Input/output error\)"):
        load_run("/proc/self/mem")


def test_line_readers_start_with_a_small_block_and_grow_it(tmp_path):
    """detect_format reads one line: `iter_blocks(first_bytes=…)` starts small and grows 4× a read up to the block
    size, so sniffing a 7 MB run reads 64 KiB, not 16 MiB. Blocks still end at newlines, carry a long line over
    and number their lines; and iter_lines(blank=False) yields the same lines as the line-by-line reader."""
    from eval_core.io.formats import detect_format
    from eval_core.io.records import iter_blocks

    line = b"q1 Q0 d%06d 1 1.0 tag\n"  # 24 bytes
    path = tmp_path / "r.run"
    path.write_bytes(b"".join(line % i for i in range(1000)) + b"\n\n  \nq2 Q0 " + b"x" * 5000 + b" 1 1 t\n")
    blocks = list(iter_blocks(path, block_bytes=4000, first_bytes=100))
    # reads of 100, 400, 1600, 4000 … bytes; each block holds the whole lines read so far, the rest is carried:
    # 100 → 4 lines (96 B, 4 carried); 4 + 400 → 16 lines (384 B, 20 carried); 20 + 1600 → 67 lines (1608 B, 12)
    # ; 12 + 4000 → 167 lines. First lines 1, 5, 21, 88.
    assert [len(b) for b, _ in blocks[:4]] == [96, 384, 1608, 4008]
    assert [first for _, first in blocks[:4]] == [1, 5, 21, 88]
    assert b"".join(b for b, _ in blocks) == path.read_bytes()
    assert all(b.endswith(b"\n") for b, _ in blocks)
    assert len(blocks[-1][0]) > 4000  # the 5 KB line, carried over reads of 4000
    assert list(iter_lines(path, blank=False)) == [(n, t) for n, t in iter_lines(path) if t.strip()]
    assert detect_format(path) == "trec"


def _outcome(path: Path, **kw: object) -> tuple[list[bytes], str | None]:
    """The blocks iter_blocks yields (their bytes) and the refusal it ends with, if any."""
    from eval_core.io.records import iter_blocks

    got: list[bytes] = []
    try:
        for block, _ in iter_blocks(path, **kw):  # type: ignore[arg-type]
            got.append(block)
    except InputError as exc:
        return got, str(exc)
    return got, None


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize(
    "env",
    [{}, {"QRELKIT_MAX_READ_LINES": "250"}, {"QRELKIT_MAX_READ_BYTES": "3000"}],
    ids=["default", "line-limit", "byte-limit"],
)
def test_blocks_read_without_line_numbers_are_refused_as_numbered_ones(tmp_path, monkeypatch, gz, env):
    """`iter_blocks(numbered=False)` (the columnar readers' whole-file read) skips counting newlines while the bytes
    read cannot pass a limit, and counts what it read once they can: the same blocks and the same refusal, at the
    same line, as the numbered read. 300 lines of 13 bytes (3,900 bytes), read 1,000 bytes at a time: blocks of
    76, 77, 77 and 70 whole lines (988, 1,001, 1,001 and 910 bytes; 12, 11 and 10 bytes carried over). A limit of
    250 lines is passed by the fourth block (lines 231-300): refused at line 251. A limit of 3,000 bytes is passed
    by the fourth read (3,900 bytes read), named after its block's last line, 300."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    text = b"".join(b"q1 0 d%04d 1\n" % i for i in range(300))
    path = _gzip_of(tmp_path / "q.qrels.gz", text, 1) if gz else tmp_path / "q.qrels"
    if not gz:
        path.write_bytes(text)
    numbered = _outcome(path, block_bytes=1000)
    assert _outcome(path, block_bytes=1000, numbered=False) == numbered
    if not env:
        assert numbered == ([text[:988], text[988:1989], text[1989:2990], text[2990:]], None)
    elif "QRELKIT_MAX_READ_LINES" in env:
        assert numbered[1] is not None and numbered[1].startswith(f"{path}:251: holds more than 250 lines")
    else:
        assert numbered[1] is not None and numbered[1].startswith(f"{path}:300: holds more than 3,000 bytes")


def test_a_line_too_long_is_named_by_its_number_without_line_numbers(tmp_path, monkeypatch):
    """The unnumbered read counts the lines before a refused line too long (here line 3)."""
    from eval_core.io import records

    monkeypatch.setattr(records, "MAX_LINE_BYTES", 50)
    path = tmp_path / "r.run"
    path.write_bytes(b"q1 Q0 d1 1 1 t\nq1 Q0 d2 2 1 t\n" + b"x" * 200 + b"\n")
    with pytest.raises(InputError, match=r"r\.run:3: line longer than 50 bytes"):
        list(records.iter_blocks(path, block_bytes=40, numbered=False))


@pytest.mark.slow
def test_a_gzip_of_huge_ids_is_refused_at_line_1_under_the_stores_line_bound(tmp_path):
    """2 GB of run lines whose docid is 20,000 characters (a 2 MB gzip): held whole before the store's id check
    named them, it took 6.7 GB; under the store's line bound the first line is refused as it is read."""
    line = b"q1 Q0 " + b"A" * 20_000 + b" 1 1.5 bomb\n"
    bomb = _gzip_of(tmp_path / "ids.run.gz", line * 100, 1000)
    got = _bomb("store-run", bomb)
    assert got["error"] is not None, got
    assert got["error"].endswith(":1: line longer than 8,192 bytes (a run line holds ids of at most 500 characters)"), (
        got
    )
    assert got["seconds"] < 20, got
    assert got["peak_mib"] < 400, got


def test_tighter_limits_name_their_own_variables_and_never_loosen(tmp_path, monkeypatch):
    from eval_core.io.records import tighter_limits

    path = _write(tmp_path / "r.run", RUN * 10)  # 30 lines, 510 bytes
    with tighter_limits(bytes_var="QRELKIT_MAX_UPLOAD_BYTES", default_bytes=100), pytest.raises(InputError) as exc:
        load_run(path)
    assert "holds more than 100 bytes (decompressed)" in str(exc.value) and "QRELKIT_MAX_UPLOAD_BYTES" in str(exc.value)
    monkeypatch.setenv("QRELKIT_MAX_UPLOAD_LINES", "20")
    with tighter_limits(lines_var="QRELKIT_MAX_UPLOAD_LINES", default_lines=10**6), pytest.raises(InputError) as exc:
        load_run(path)
    assert ":21: holds more than 20 lines" in str(exc.value) and "QRELKIT_MAX_UPLOAD_LINES" in str(exc.value)
    monkeypatch.setenv("QRELKIT_MAX_READ_BYTES", "50")  # an upload's limit never exceeds the operator's
    with tighter_limits(bytes_var="QRELKIT_MAX_UPLOAD_BYTES", default_bytes=10**9) as limits:
        assert limits.bytes == 50 and limits.bytes_var == "QRELKIT_MAX_READ_BYTES"
    monkeypatch.delenv("QRELKIT_MAX_READ_BYTES")
    assert read_limits().bytes > 10**9  # and the bound ends with its block
    long = _write(tmp_path / "long.run", "q1 Q0 d1 1 1 t\nq1 Q0 " + "d" * 60 + " 2 1 t\n")
    for numbered in (True, False):  # the block reader, counting lines or not, names line 2
        with tighter_limits(line_bytes=40), pytest.raises(InputError, match=r"long\.run:2: line longer than 40 bytes"):
            from eval_core.io.records import iter_blocks

            list(iter_blocks(long, numbered=numbered))
    with tighter_limits(line_bytes=40), pytest.raises(InputError, match=r"long\.run:2: line longer than 40 bytes"):
        list(iter_lines(long))
    crlf = _write(tmp_path / "crlf.run", "".join(f"q1 Q0 d{i} {i} 1 t\r\n" for i in (1, 2, 3)))  # 14 bytes + CR LF
    with tighter_limits(line_bytes=14):
        assert len(list(iter_lines(crlf))) == 3 and len(load_run(crlf).qcode) == 3


@pytest.mark.parametrize(
    ("ids", "distinct", "codes"),
    [
        ([b"q2", b"q2", b"q10", b"q1", b"q1", b"q1"], [b"q2", b"q10", b"q1"], [0, 0, 1, 2, 2, 2]),  # grouped
        ([b"q2", b"q1", b"q2", b"q3"], [b"q2", b"q1", b"q3"], [0, 1, 0, 2]),  # q2 comes back after q1
        ([b"a", b"b", b"b", b"a", b"a"], [b"a", b"b"], [0, 1, 1, 0, 0]),  # two runs of a
        ([b"x"], [b"x"], [0]),
    ],
    ids=["grouped", "scattered", "back-again", "one"],
)
def test_query_codes_are_first_seen_order_whether_ids_are_grouped_or_not(ids, distinct, codes):
    """Lines' query codes from runs of equal neighbouring ids, or (an id seen again later) from hashing every
    line: either way the distinct ids in first-seen order and each line's place in them."""
    import pyarrow as pa

    qids, qcode = trec_text.query_codes(pa.array(ids, pa.binary()))
    assert qids.to_pylist() == distinct
    assert qcode.tolist() == codes

"""Readers and writers: every format, gzip, CRLF, comments, and a `path:line: problem` for every malformed case."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from eval_core.errors import InputError
from eval_core.io.formats import detect_format, read_categories, read_qrels, read_run
from eval_core.io.writers import write_qrels, write_run

QRELS = "q1 0 d3 3\nq1 0 d7 2\nq2 0 d1 0\n"
RUN = "q1 Q0 d7 1 2.5 t\nq1 Q0 d3 2 1.5 t\nq2 Q0 d1 1 0.5 t\n"


def put(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    if name.endswith(".gz"):
        p.write_bytes(gzip.compress(text.encode() if isinstance(text, str) else text))
    elif isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def rows(df: pd.DataFrame, value: str) -> list[tuple]:
    return sorted(zip(df["query_id"], df["doc_id"], df[value].tolist(), strict=True))


EXPECTED_QRELS = [("q1", "d3", 3), ("q1", "d7", 2), ("q2", "d1", 0)]
EXPECTED_RUN = [("q1", "d3", 1.5), ("q1", "d7", 2.5), ("q2", "d1", 0.5)]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.qrels", QRELS),
        ("a.qrels.gz", QRELS),
        ("crlf.qrels", QRELS.replace("\n", "\r\n")),
        ("comments.qrels", "# judged by A\n\n" + QRELS + "\n# end\n"),
        ("tabs.txt", QRELS.replace(" ", "\t")),
        ("beir.tsv", "query-id\tcorpus-id\tscore\nq1\td3\t3\nq1\td7\t2\nq2\td1\t0\n"),
        ("a.jsonl", "".join(json.dumps({"query_id": q, "doc_id": d, "grade": g}) + "\n" for q, d, g in EXPECTED_QRELS)),
        ("a.csv", "query_id,doc_id,grade\nq1,d3,3\nq1,d7,2\nq2,d1,0\n"),
    ],
)
def test_read_qrels_every_format(tmp_path: Path, name: str, text: str) -> None:
    df = read_qrels(put(tmp_path, name, text))
    assert rows(df, "grade") == EXPECTED_QRELS
    assert str(df["grade"].dtype) == "int64"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.run", RUN),
        ("a.run.gz", RUN),
        ("crlf.run", RUN.replace("\n", "\r\n")),
        ("spaces.run", RUN.replace(" ", "   ")),
        ("comments.run", "# bm25\n" + RUN),
        (
            "a.jsonl",
            '{"query_id": "q1", "doc_id": "d7", "score": 2.5}\n{"query_id": "q1", "doc_id": "d3", "score": 1.5}\n'
            '{"query_id": "q2", "doc_id": "d1", "score": 0.5}\n',
        ),
        ("a.csv", "query_id,doc_id,score\nq1,d7,2.5\nq1,d3,1.5\nq2,d1,0.5\n"),
    ],
)
def test_read_run_every_format(tmp_path: Path, name: str, text: str) -> None:
    df = read_run(put(tmp_path, name, text))
    assert rows(df, "score") == EXPECTED_RUN
    assert str(df["score"].dtype) == "float64"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("lists.jsonl", '{"query_id": "q1", "doc_ids": ["d7", "d3"]}\n{"query_id": "q2", "doc_ids": ["d1"]}\n'),
        ("noscore.csv", "query_id,doc_id\nq1,d7\nq1,d3\nq2,d1\n"),
    ],
)
def test_ranked_lists_without_scores_keep_their_order(tmp_path: Path, name: str, text: str) -> None:
    df = read_run(put(tmp_path, name, text))
    q1 = df[df["query_id"] == "q1"].sort_values("score", ascending=False)
    assert list(q1["doc_id"]) == ["d7", "d3"]
    assert q1["score"].is_monotonic_decreasing and q1["score"].nunique() == 2


def test_dicts_and_frames_are_accepted() -> None:
    assert rows(read_qrels({"q1": {"d3": 3, "d7": 2}, "q2": {"d1": 0}}), "grade") == EXPECTED_QRELS
    run = read_run({"q1": ["d7", "d3"]})
    assert list(run.sort_values("score", ascending=False)["doc_id"]) == ["d7", "d3"]
    frame = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d7", "d3", "d1"], "score": [2.5, 1.5, 0.5]})
    assert rows(read_run(frame), "score") == EXPECTED_RUN


def test_fast_path_and_scan_agree_on_a_big_file(tmp_path: Path) -> None:
    """The columnar path (single spaces) and the line scan (tabs) must read the same rows."""
    lines = [f"q{i % 97} Q0 doc{i} {i} {(i * 7919) % 1000 / 8} x" for i in range(5000)]
    a = read_run(put(tmp_path, "fast.run", "\n".join(lines) + "\n"))
    b = read_run(put(tmp_path, "scan.run", "\n".join(x.replace(" ", "\t") for x in lines) + "\n"))
    assert rows(a, "score") == rows(b, "score")


BAD_RUNS = [
    ("fields.run", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0\n", 2, "expected 6 fields"),
    ("score.run", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 high t\n", 2, "score 'high' is not a number"),
    ("nan.run", "q1 Q0 d1 1 nan t\n", 1, "not a finite number"),
    (
        "dup.run",
        "q1 Q0 d1 1 2.0 t\nq2 Q0 d1 1 2.0 t\n\nq1 Q0 d1 3 1.0 t\n",
        4,
        "repeated for query 'q1' (first on line 1)",
    ),
    ("empty.run", "", 1, "empty file"),
    ("onlycomments.run", "# nothing\n\n", 1, "empty file"),
    ("bytes.run", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d\xff 2 1.0 t\n", 2, "not valid UTF-8"),
    (
        "bad.jsonl",
        '{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1", "doc_id": "d2", "score": "x"}\n',
        2,
        "score 'x' is not a number",
    ),
    ("dup.jsonl", '{"query_id": "q1", "doc_ids": ["d1", "d2", "d1"]}\n', 1, "repeated"),
    ("bad.csv", "query_id,doc_id,score\nq1,d1,1\nq1,d2\n", 3, "expected 3 fields"),
    ("mixed.csv", "query_id,doc_id,score\nq1,d1,1\nq1,d2,\n", 3, "some rows have a score"),
]


@pytest.mark.parametrize(("name", "text", "line", "problem"), BAD_RUNS)
def test_malformed_runs_name_path_and_line(tmp_path: Path, name: str, text: str, line: int, problem: str) -> None:
    path = put(tmp_path, name, text)
    with pytest.raises(InputError) as exc:
        read_run(path)
    assert str(exc.value).startswith(f"{path}:{line}: ")
    assert problem in str(exc.value)


def test_big_run_with_one_bad_line_is_located(tmp_path: Path) -> None:
    """The fast path fails; the fallback scan names the exact line (a line short of a field)."""
    lines = [f"q{i // 100} Q0 d{i} {i % 100 + 1} {1000 - i % 100} t" for i in range(20000)]
    lines[12345] = lines[12345].replace(" t", "")
    path = put(tmp_path, "big.run", "\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"^{path}:12346: expected 6 fields"):
        read_run(path)


def test_big_run_with_a_duplicate_is_located(tmp_path: Path) -> None:
    """A duplicate passes the columnar parse; the key check catches it and the scan names the line."""
    lines = [f"q{i // 100} Q0 d{i} {i % 100 + 1} {1000 - i % 100} t" for i in range(20000)]
    lines[15001] = "q150 Q0 d15000 2 999 t"
    path = put(tmp_path, "dupbig.run", "\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"^{path}:15002: doc 'd15000' repeated for query 'q150'"):
        read_run(path)


BAD_QRELS = [
    ("fields.qrels", "q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 fields"),
    ("grade.qrels", "q1 0 d1 1\nq1 0 d2 yes\n", 2, "grade 'yes' is not an integer"),
    ("float.qrels", "q1 0 d1 1.5\n", 1, "not an integer"),
    ("dup.qrels", "q1 0 d1 1\nq1 0 d1 2\n", 2, "repeated"),
    ("empty.qrels.gz", "", 1, "empty file"),
    ("beir.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\n", 3, "expected 3 tab-separated fields"),
    ("beirgrade.tsv", "query-id\tcorpus-id\tscore\nq1\td1\tx\n", 2, "not an integer"),
    ("bad.csv", "query_id,doc_id,grade\nq1,d1,2\nq1,d2,two\n", 3, "grade 'two' is not a number"),
    ("nograde.jsonl", '{"query_id": "q1", "doc_id": "d1"}\n', 1, "missing field: grade"),
]


@pytest.mark.parametrize(("name", "text", "line", "problem"), BAD_QRELS)
def test_malformed_qrels_name_path_and_line(tmp_path: Path, name: str, text: str, line: int, problem: str) -> None:
    path = put(tmp_path, name, text)
    with pytest.raises(InputError) as exc:
        read_qrels(path)
    assert str(exc.value).startswith(f"{path}:{line}: ")
    assert problem in str(exc.value)


def test_bad_frames_name_the_row() -> None:
    with pytest.raises(InputError, match=r"^<DataFrame>:2: doc 'd1' repeated"):
        read_run(pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d1"], "score": [1.0, 2.0]}))
    with pytest.raises(InputError, match=r"^<DataFrame>:1: grade 1.5 is not an integer"):
        read_qrels(pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "grade": [1.5]}))
    with pytest.raises(InputError, match="lacks column 'score'"):
        read_run(pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"]}))


def test_content_that_needs_another_name_says_so(tmp_path: Path) -> None:
    path = put(tmp_path, "x.run", '{"query_id": "q1", "doc_id": "d1", "score": 1}\n')
    with pytest.raises(InputError, match=rf"^{path}:1: looks like JSONL with named columns; give it a .jsonl name"):
        read_run(path)


def test_detect_format(tmp_path: Path) -> None:
    assert detect_format(put(tmp_path, "x.txt", RUN)) == "trec"
    assert detect_format(put(tmp_path, "x.tsv", "query-id\tcorpus-id\tscore\n")) == "beir"
    assert detect_format(put(tmp_path, "x.run", '{"query_id": "q"}\n')) == "jsonl"
    assert detect_format(put(tmp_path, "x.csv.gz", "query_id,doc_id\n")) == "csv"


@pytest.mark.parametrize("fmt", ["trec", "beir", "jsonl", "csv"])
def test_qrels_round_trip(tmp_path: Path, fmt: str) -> None:
    src = read_qrels({"q1": {"d3": 3, "d7": 2}, "q2": {"d1": 0}})
    path = tmp_path / {"trec": "x.qrels", "beir": "x.tsv", "jsonl": "x.jsonl", "csv": "x.csv"}[fmt]
    write_qrels(src, path, fmt=fmt)
    assert rows(read_qrels(path), "grade") == EXPECTED_QRELS


def test_run_round_trip_ranks_in_trec_order(tmp_path: Path) -> None:
    """Ties are written in trec_eval order (docid descending) with ranks 1..n; scores survive exactly."""
    src = {"q1": {"d1": 0.1, "d2": 0.5, "d10": 0.5}}
    path = tmp_path / "out.run.gz"
    write_run(src, path, tag="mine")
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    assert lines == ["q1 Q0 d2 1 0.5 mine", "q1 Q0 d10 2 0.5 mine", "q1 Q0 d1 3 0.1 mine"]
    assert rows(read_run(path), "score") == [("q1", "d1", 0.1), ("q1", "d10", 0.5), ("q1", "d2", 0.5)]


def test_writes_are_all_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "keep.qrels"
    path.write_text("old\n")
    with pytest.raises(InputError):
        write_qrels({"q1": {"d1": 1.5}}, path)
    assert path.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [path]


def test_categories(tmp_path: Path) -> None:
    assert read_categories(put(tmp_path, "c.tsv", "query_id\tcategory\nq1\tfaq\nq2\tlegal\n")) == {
        "q1": "faq",
        "q2": "legal",
    }
    with pytest.raises(InputError, match=r"c2.csv:3: query 'q1' given two categories"):
        read_categories(put(tmp_path, "c2.csv", "query_id,category\nq1,a\nq1,b\n"))

"""Judgment readers: the DataFrame contract, can't-judge, and path:line errors for every bad record."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from eval_core.errors import InputError
from eval_core.io.judgments import check_judgments, read_judgments
from eval_core.io.records import parse_scale
from tests.helpers import write_jsonl


def rec(q: str = "q1", f: str = "d1", a: str = "ann", grade: object = 2, **extra: object) -> dict:
    return {"query_id": q, "fragment_id": f, "annotator": a, "grade": grade, **extra}


def test_jsonl_contract_and_cant_judge(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "j.jsonl",
        [rec(grade=2, note="ok"), rec(a="bob", grade=None), rec(f="d2", grade="3", guideline="v1")],
    )
    frame = read_judgments(path)
    assert list(frame.columns) == ["query_id", "fragment_id", "annotator", "grade", "note", "guideline"]
    assert str(frame["grade"].dtype) == "Int64"
    assert frame["grade"].isna().tolist() == [False, True, False]
    assert frame["grade"].dropna().tolist() == [2, 3]


def test_csv_empty_grade_is_cant_judge(tmp_path: Path) -> None:
    path = tmp_path / "j.csv"
    path.write_text("query_id,fragment_id,annotator,grade\nq1,d1,a,0\nq1,d1,b,\nq1,d1,c,NA\n", encoding="utf-8")
    frame = read_judgments(path)
    assert frame["grade"].isna().tolist() == [False, True, True]


def test_gzip_tsv(tmp_path: Path) -> None:
    path = tmp_path / "j.tsv.gz"
    path.write_bytes(gzip.compress(b"query_id\tfragment_id\tannotator\tgrade\nq1\td1\ta\t1\n"))
    assert read_judgments(path)["grade"].tolist() == [1]


@pytest.mark.parametrize(
    ("grade", "problem"),
    [
        (4, "grade 4 is outside the scale 0-3"),
        (-1, "grade -1 is outside the scale 0-3"),
        (1.5, "grade must be an integer"),
        ("high", "grade must be an integer or empty"),
        (True, "grade must be an integer"),
    ],
)
def test_bad_grade_names_file_and_line(tmp_path: Path, grade: object, problem: str) -> None:
    path = write_jsonl(tmp_path / "j.jsonl", [rec(), rec(a="b", grade=grade)])
    with pytest.raises(InputError) as err:
        read_judgments(path)
    assert str(err.value).startswith(f"{path}:2: {problem}")


def test_other_scale(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "j.jsonl", [rec(grade=5), rec(a="b", grade=0)])
    with pytest.raises(InputError, match=":2: grade 0 is outside the scale 1-5"):
        read_judgments(path, scale=(1, 5))
    assert parse_scale("1-5") == (1, 5)
    with pytest.raises(ValueError):
        parse_scale("3-1")


def test_duplicate_is_error_unless_keep_latest(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "j.jsonl", [rec(grade=1), rec(f="d2"), rec(grade=3)])
    with pytest.raises(InputError) as err:
        read_judgments(path)
    assert str(err.value).startswith(f"{path}:3: duplicate judgment of (q1, d1) by ann (first at line 1)")
    frame = read_judgments(path, keep="latest")
    assert len(frame) == 2
    assert frame.set_index("fragment_id").loc["d1", "grade"] == 3


def test_missing_field_and_empty_id(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "j.jsonl", [{"query_id": "q", "fragment_id": "d", "grade": 1}])
    with pytest.raises(InputError, match=r":1: missing field\(s\): annotator"):
        read_judgments(path)
    path = write_jsonl(tmp_path / "k.jsonl", [rec(a="  ")])
    with pytest.raises(InputError, match=":1: annotator is empty"):
        read_judgments(path)


def test_check_judgments_frame() -> None:
    frame = pd.DataFrame({"query_id": ["q", "q"], "fragment_id": ["a", "a"], "annotator": ["x", "x"], "grade": [1, 2]})
    with pytest.raises(ValueError, match="duplicate judgment of \\(q, a\\) by x"):
        check_judgments(frame)
    with pytest.raises(ValueError, match="outside the scale"):
        check_judgments(frame.assign(annotator=["x", "y"], grade=[1, 9]))
    ok = check_judgments(frame.assign(annotator=["x", "y"], grade=[1.0, None]))
    assert str(ok["grade"].dtype) == "Int64" and ok["grade"].isna().tolist() == [False, True]


@pytest.mark.parametrize("keep", ["error", "latest"])
def test_columnar_fast_path_equals_exact_reader(tmp_path: Path, keep: str) -> None:
    """The Arrow fast path must give exactly what the line-by-line reader gives (it is the reference)."""
    from eval_core.io.judgments import _read_columnar, _read_records

    csv_text = (
        "query_id,fragment_id,annotator,grade,note,extra\n"
        'q1, d1 ,a,2.0,"comma, and\nnewline",x\n'
        "q1,d1,b,,,y\n"
        "q2,d3,a,NA,  ,z\n"
        "q2,d3,b,3,sure,w\n"
    )
    if keep == "latest":
        csv_text += "q1,d1,a,1,regraded,v\n"
    jsonl = [rec(grade=None, guideline="v1"), rec(a="b", grade=3, guideline="v2"), rec(f="d9", grade=1)]
    if keep == "latest":
        jsonl.append(rec(grade=0))
    for path in (tmp_path / "j.csv", tmp_path / "j.jsonl"):
        if path.suffix == ".csv":
            path.write_text(csv_text, encoding="utf-8")
        else:
            write_jsonl(path, jsonl)
        fast = _read_columnar(path, (0, 3), keep)
        assert fast is not None, path
        pd.testing.assert_frame_equal(fast, _read_records(path, (0, 3), keep, False), check_dtype=False)
        assert list(fast.dtypes.astype(str))[3] == "Int64"
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [rec(grade="2"), rec(a="b", grade=1)])
    assert _read_columnar(mixed, (0, 3), keep) is None  # mixed JSON types: the exact reader handles them
    assert read_judgments(mixed)["grade"].tolist() == [2, 1]


def test_fast_path_defers_every_doubt_to_exact_reader(tmp_path: Path) -> None:
    """Bad values make the fast path step aside; the exact reader then names the line."""
    path = tmp_path / "j.csv"
    path.write_text("query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d2,a,2.5\n", encoding="utf-8")
    with pytest.raises(InputError, match=":3: grade must be an integer"):
        read_judgments(path)
    path.write_bytes(b"query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d\xff2,a,2\n")
    with pytest.raises(InputError, match=":3: not valid UTF-8"):
        read_judgments(path)
    path.write_text("query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d1,a,2,9\n", encoding="utf-8")
    with pytest.raises(InputError, match=":3: expected 4 fields"):
        read_judgments(path)


RELEASE_LINES = [
    {"query_id": "q1", "fragment_id": "d1", "grade": 2, "grades": {"ann": 3, "bob": 2}, "rule": "median"},
    {
        "query_id": "q1",
        "fragment_id": "d2",
        "grade": 1,
        "grades": {"ann": 0, "bob": None},
        "rule": "median",
        "adjudication": {"grade": 1, "reason": "partial answer", "by": "lea"},
    },
]


def test_release_jsonl_is_read_per_annotator_with_its_adjudications(tmp_path: Path) -> None:
    from eval_core.io.judgments import read_adjudications

    path = write_jsonl(tmp_path / "judgments.jsonl", RELEASE_LINES)
    frame = read_judgments(path)
    assert frame[["query_id", "fragment_id", "annotator"]].values.tolist() == [
        ["q1", "d1", "ann"],
        ["q1", "d1", "bob"],
        ["q1", "d2", "ann"],
        ["q1", "d2", "bob"],
    ]
    assert frame["grade"].tolist()[:3] == [3, 2, 0] and frame["grade"].isna().tolist() == [False] * 3 + [True]
    assert read_adjudications(path).values.tolist() == [["q1", "d2", 1, "partial answer", "lea"]]


def test_release_csv_with_its_grades_column_and_spreadsheet_escapes(tmp_path: Path) -> None:
    path = tmp_path / "qrels.csv"
    path.write_text(
        "query_id,fragment_id,grade,n_grades,adjudicated,grades\n"
        '\'=cmd|\'/C_calc\'!A0,d1,2,2,0,"{""ann"": 3, ""bob"": 2}"\n'
        '\'\'quoted,d2,1,1,1,"{""ann"": 1, ""bob"": null}"\n',
        encoding="utf-8",
    )
    frame = read_judgments(path)
    assert frame[["query_id", "annotator"]].values.tolist() == [
        ["=cmd|'/C_calc'!A0", "ann"],
        ["=cmd|'/C_calc'!A0", "bob"],
        ["'quoted", "ann"],
        ["'quoted", "bob"],
    ]
    assert frame["grade"].tolist()[:3] == [3, 2, 1] and frame["grade"].isna().tolist() == [False] * 3 + [True]


@pytest.mark.parametrize(
    ("grade", "shown"),
    [("NaN", "'NaN'"), ("nan", "'nan'"), ("?", "'?'"), ("inf", "'inf'"), ("Infinity", "'Infinity'"), ("abc", "'abc'")],
)
def test_only_documented_cant_judge_spellings_count(tmp_path: Path, grade: str, shown: str) -> None:
    path = tmp_path / "j.csv"
    path.write_text(f"query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d2,a,{grade}\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_judgments(path)
    assert str(err.value).startswith(f"{path}:3: grade must be an integer or empty for can't judge, got {shown}")
    nan = tmp_path / "nan.jsonl"
    nan.write_text('{"query_id": "q1", "fragment_id": "d1", "annotator": "a", "grade": NaN}\n', encoding="utf-8")
    with pytest.raises(InputError, match=":1: grade must be an integer, or null / empty for can't judge, got nan"):
        read_judgments(nan)
    ok = tmp_path / "ok.csv"
    ok.write_text(
        "query_id,fragment_id,annotator,grade\n"
        + "".join(f"q1,d{i},a,{v}\n" for i, v in enumerate(["", "null", "NULL", "none", "na", "N/A"])),
        encoding="utf-8",
    )
    assert read_judgments(ok)["grade"].isna().all()


def test_ids_with_whitespace_are_refused(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "j.jsonl", [rec(), rec(f="d 2")])
    with pytest.raises(InputError, match=":2: fragment_id 'd 2' contains whitespace; TREC qrels and run files"):
        read_judgments(path)


def test_render_judgments_jsonl_is_json_dumps_and_reads_back(tmp_path: Path) -> None:
    from eval_core.io.judgments import EXPORT_FIELDS, render_judgments

    frame = pd.DataFrame(
        {
            "query_id": ["q1", "q1"],
            "fragment_id": ["d1", "d2"],
            "annotator": ["añn", "bob"],
            "grade": pd.array([2, None], dtype="Int64"),
            "cant_judge_reason": [None, 'in Deutsch "zitiert"'],
            "note": ['tab\tand "quotes" \\ \u2028 ünïcode\n2nd line', None],
            "guideline": ["1", None],
            "time": pd.to_datetime(
                ["2026-01-02T03:04:05.000007+00:00", "2026-01-02T03:04:05+00:00"], utc=True, format="ISO8601"
            ),
            "annotator_kind": ["human", "model"],
            "model": [None, "gpt-4o"],
            "prompt_version": [None, "v=2"],
        }
    )
    lines = list(render_judgments(frame, "jsonl"))
    expected = [
        json.dumps({**dict(zip(EXPORT_FIELDS, values, strict=True))}, ensure_ascii=False) + "\n"
        for values in (
            (
                "q1",
                "d1",
                "añn",
                2,
                None,
                frame["note"][0],
                "1",
                "2026-01-02T03:04:05.000007+00:00",
                "human",
                None,
                None,
            ),
            (
                "q1",
                "d2",
                "bob",
                None,
                'in Deutsch "zitiert"',
                None,
                None,
                "2026-01-02T03:04:05.000000+00:00",
                "model",
                "gpt-4o",
                "v=2",
            ),
        )
    ]
    assert lines == expected
    for fmt in ("jsonl", "csv"):
        path = tmp_path / f"j.{fmt}"
        path.write_text("".join(render_judgments(frame, fmt)), encoding="utf-8")
        back = read_judgments(path)
        assert back["note"].tolist() == [frame["note"][0], None]
        assert back[["annotator_kind", "model", "prompt_version"]].values.tolist() == [
            ["human", None, None],
            ["model", "gpt-4o", "v=2"],
        ]
        assert back["time"].tolist() == ["2026-01-02T03:04:05.000007+00:00", "2026-01-02T03:04:05.000000+00:00"]
        again = back.assign(time=pd.to_datetime(back["time"], utc=True, format="ISO8601"))
        assert "".join(render_judgments(again, fmt)) == path.read_text(encoding="utf-8")

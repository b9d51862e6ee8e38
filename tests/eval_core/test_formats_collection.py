"""Queries, fragments and qrels as the field ships them: each layout read from a small file written here, and
each refusal naming the file, the line, the formats tried and why (eval_core.io.collection, judgments, formats)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from eval_core.errors import InputError
from eval_core.io.collection import FragmentRecord, QueryRecord, read_fragments, read_queries
from eval_core.io.formats import load_qrels, load_run, read_qrels, read_run
from eval_core.io.judgments import read_qrels_judgments


def put(tmp_path: Path, name: str, text: str, gz: bool = False) -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


# --- queries ---------------------------------------------------------------------------------------------------

MSMARCO_QUERIES = "1048585\twhat is paula deen's brother\n2\tAndrogen receptor define\n"
TOPICS = """<top>
<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that participate in international
criminal activity.

<narr> Narrative:
A relevant document must, as a minimum, identify the organization.
</top>

<top>
<num> Number: 302 </num>
<title> Poliomyelitis and Post-Polio </title>
<desc> Description: Is the disease of Poliomyelitis (polio) under control? </desc>
<narr> Narrative: Relevant documents should contain data on polio. </narr>
</top>
"""


@pytest.mark.parametrize("gz", [False, True])
def test_msmarco_queries_tsv_without_header(tmp_path: Path, gz: bool) -> None:
    read = read_queries(put(tmp_path, "queries.tsv" + (".gz" if gz else ""), MSMARCO_QUERIES, gz))
    assert read.format == "id-text-tsv"
    assert read.checked() == [
        QueryRecord("1048585", "what is paula deen's brother", 1),
        QueryRecord("2", "Androgen receptor define", 2),
    ]


def test_trec_topics_title_or_description_with_context(tmp_path: Path) -> None:
    path = put(tmp_path, "topics.301-302", TOPICS)
    titles = read_queries(path).checked()
    assert [(q.id, q.text, q.line) for q in titles] == [
        ("301", "International Organized Crime", 1),
        ("302", "Poliomyelitis and Post-Polio", 13),
    ]
    assert titles[0].description == "Identify organizations that participate in international criminal activity."
    assert titles[0].narrative == "A relevant document must, as a minimum, identify the organization."
    assert titles[1].description == "Is the disease of Poliomyelitis (polio) under control?"
    descs = read_queries(path, topic_field="desc").checked()
    assert descs[1].text == "Is the disease of Poliomyelitis (polio) under control?"
    assert descs[1].narrative == "Relevant documents should contain data on polio."


def test_ir_datasets_topic_records_choose_their_text(tmp_path: Path) -> None:
    path = put(
        tmp_path,
        "q.jsonl",
        '{"query_id": "301", "title": "organized crime", "description": "Identify '
        'organizations.", "narrative": "Must name one."}\n',
    )
    assert read_queries(path).checked() == [
        QueryRecord("301", "organized crime", 1, None, "Identify organizations.", "Must name one.")
    ]
    assert read_queries(path, topic_field="desc").checked()[0].text == "Identify organizations."


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("<top>\n<num> 1\n<title> a\n", 1, "topic opened here is never closed"),
        ("<top>\n<num> 1\n<title> a\n<title> b\n</top>\n", 4, "a second <title> in the topic opened at line 1"),
        ("<top>\n<title> no number\n</top>\n", 1, "query id is missing or empty"),
    ],
)
def test_bad_topics_name_the_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = put(tmp_path, "topics.txt", text)
    with pytest.raises(InputError) as err:
        read_queries(path).checked()
    assert str(err.value).startswith(f"{path}:{line}: ") and words in str(err.value)


# --- fragments -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "collection.tsv",
            "0\tThe presence of communication amid scientific minds.\n7\tManhattan Project.\n",
            [
                FragmentRecord("0", "The presence of communication amid scientific minds.", 1),
                FragmentRecord("7", "Manhattan Project.", 2),
            ],
        ),
        (
            "pyserini.jsonl",
            '{"id": "doc1", "contents": "contents of doc one."}\n{"id": "doc2", "contents": "two"}\n',
            [FragmentRecord("doc1", "contents of doc one.", 1), FragmentRecord("doc2", "two", 2)],
        ),
        (
            "docs.jsonl",
            '{"doc_id": "D1", "title": "One", "text": "first"}\n{"doc_id": "D2", "text": "second"}\n',
            [FragmentRecord("D1", "first", 1, "One", "D1"), FragmentRecord("D2", "second", 2, None, "D2")],
        ),
        (
            "corpus.jsonl",
            '{"_id": "b1", "title": "T", "text": "beir", "metadata": {"url": "u"}}\n',
            [FragmentRecord("b1", "beir", 1, "T", meta={"url": "u"})],
        ),
        (
            "chunks.csv",
            "id,doc_id,chunk,text,lang\nD1#1,D1,1,second part,en\nD1#0,D1,0,first part,\n",
            [
                FragmentRecord("D1#1", "second part", 2, None, "D1", 1, {"lang": "en"}),
                FragmentRecord("D1#0", "first part", 3, None, "D1", 0),
            ],
        ),
    ],
)
def test_fragments_in_every_layout(tmp_path: Path, name: str, text: str, expected: list, gz: bool) -> None:
    read = read_fragments(put(tmp_path, name + (".gz" if gz else ""), text, gz))
    assert read.checked() == expected


def test_a_record_with_id_and_doc_id_reads_the_same_for_diagnose(tmp_path: Path) -> None:
    """`import fragments` takes `doc_id` beside `id` as the document; `diagnose --fragments` must too."""
    from annotator.cli import main

    corpus = put(
        tmp_path,
        "corpus.jsonl",
        '{"id": "kb-101#0", "doc_id": "kb-101", "text": "refunds in 30 days"}\n'
        '{"id": "kb-101#1", "doc_id": "kb-101", "text": "shipping is free"}\n',
    )
    qrels = put(tmp_path, "qrels.txt", "q1 0 kb-101#0 2\n")
    run = put(tmp_path, "run.trec", "q1 Q0 kb-101#1 1 2.0 r\nq1 Q0 kb-101#0 2 1.0 r\n")
    assert main(["diagnose", str(qrels), str(run), "--fragments", str(corpus), "--format", "json"]) == 0


@pytest.mark.parametrize(
    ("name", "text", "line", "words"),
    [
        ("p.tsv", "1\tsome passage\tits title\n", 1, "headerless id<TAB>text TSV: 3 tab-separated field(s), not 2"),
        ("eu.csv", "id;text\nd1;hola\n", 1, "looks like a CSV separated by ';'"),
        ("run.trec", "q1 Q0 d1 1 2.5 bm25\n", 1, "looks like a TREC run (qid Q0 docid rank score tag), not fragments"),
        ("qrels.txt", "q1 0 d1 2\n", 1, "looks like TREC qrels (qid iter docid grade), not fragments"),
        ("c.jsonl", '{"id": "a", "chunk": 1, "text": "x"}\n', 1, "give both the fragment's id and the doc_id"),
        ("c.jsonl", '{"id": "a", "doc_id": "D", "chunk": "two", "text": "x"}\n', 1, "chunk must be a non-negative"),
        (
            "c.jsonl",
            '{"id": "a", "doc_id": "D", "offset": 0, "text": "x"}\n{"id": "b", "doc_id": "D", "offset": 0, '
            '"text": "y"}\n',
            2,
            "position 0 of doc_id 'D' is also given at line 1",
        ),
        ("c.jsonl", '{"id": "a", "title": "x"}\n', 1, "fragment text is missing or empty (field text or contents)"),
    ],
)
def test_fragments_refused_with_what_was_tried(tmp_path: Path, name: str, text: str, line: int, words: str) -> None:
    path = put(tmp_path, name, text)
    with pytest.raises(InputError) as err:
        read_fragments(path).checked()
    assert str(err.value).startswith(f"{path}:{line}: ") and words in str(err.value)


def test_what_was_tried_is_listed(tmp_path: Path) -> None:
    path = put(tmp_path, "odd.txt", "just some words\n")
    with pytest.raises(InputError) as err:
        read_queries(path)
    assert str(err.value) == (
        f"{path}:1: not a queries file qrelkit reads; tried JSONL: the line does not start with '{{'; TREC topics: "
        "no <top>, <num> or XML <topic> tag; CSV/TSV with a header: no column named id or _id or query_id or qid "
        "(text, query for the text); headerless id<TAB>text TSV: 1 tab-separated field(s), not 2"
    )


def test_format_option_overrides_content(tmp_path: Path) -> None:
    """A headerless TSV whose first id is literally `text` is told apart only by --format."""
    path = put(tmp_path, "odd.tsv", "id\ttext\n")
    assert read_fragments(path, "id-text-tsv").checked() == [FragmentRecord("id", "text", 1)]
    with pytest.raises(InputError, match="empty file: no fragments"):
        read_fragments(path).checked()
    with pytest.raises(ValueError, match="fragments format must be one of"):
        read_fragments(path, "trec-topics")


# --- qrels and runs: told apart, with hints ---------------------------------------------------------------------


def test_swapped_qrels_and_run_say_so(tmp_path: Path) -> None:
    run = put(tmp_path, "run.trec", "q1 Q0 d1 1 2.0 bm25\n")
    qrels = put(tmp_path, "qrels.txt", "q1 0 d1 2\n")
    with pytest.raises(InputError, match=r"run.trec:1: expected 4 fields .* found 6; this looks like a TREC run"):
        load_qrels(run)
    with pytest.raises(InputError, match=r"qrels.txt:1: expected 6 fields .* found 4; this looks like TREC qrels"):
        load_run(qrels)
    release = put(
        tmp_path,
        "judgments.jsonl",
        '{"query_id": "q1", "fragment_id": "d1", "grade": 2, "grades": {"a": 2}, "rule": "median"}\n',
    )
    with pytest.raises(InputError, match=r"judgments.jsonl:1: this holds grades .* were the qrels and the run"):
        load_run(release)


def test_multi_judge_qrels_get_a_hint_not_doc_repeated(tmp_path: Path) -> None:
    path = put(tmp_path, "qrels.jg", "q1 1 d1 2\nq1 2 d1 0\n")
    with pytest.raises(
        InputError,
        match=r"qrels.jg:2: .*judge group '2' after '1': multi-judge qrels .*"
        r"--qrels-format jg",
    ):
        load_qrels(path)
    same = put(tmp_path, "dup.txt", "q1 0 d1 2\nq1 0 d1 0\n")
    with pytest.raises(InputError, match=r"dup.txt:2: doc 'd1' repeated for query 'q1' \(first on line 1\)"):
        load_qrels(same)


def test_release_jsonl_and_csv_read_as_qrels(tmp_path: Path) -> None:
    """A release names fragments `fragment_id`; its CSV escapes a formula-like id with `'`."""
    jsonl = put(
        tmp_path,
        "judgments.jsonl",
        '{"query_id": "q1", "fragment_id": "d1", "grade": 2, "grades": {"a": 2}, "rule": "median"}\n',
    )
    csv = put(
        tmp_path, "qrels.csv", 'query_id,fragment_id,grade,n_grades,adjudicated,grades\nq1,\'-d2,1,1,0,"{""a"": 1}"\n'
    )
    assert read_qrels(jsonl).values.tolist() == [["q1", "d1", 2]]
    assert read_qrels(csv).values.tolist() == [["q1", "-d2", 1]]
    judgments = put(tmp_path, "j.csv", "query_id,fragment_id,annotator,grade\nq1,d1,ann,2\n")
    with pytest.raises(InputError, match=r"j.csv:2: this is a judgments file .*qrelkit consensus"):
        read_qrels(judgments)
    assert read_run(put(tmp_path, "r.csv", "query_id,doc_id,score\nq1,'=d3,1.5\n")).values.tolist() == [
        ["q1", "=d3", 1.5]
    ]


def test_qrels_as_an_annotators_grades(tmp_path: Path) -> None:
    trec = put(tmp_path, "2019qrels-pass.txt", "19335 0 1017759 0\n# note\n19335 0 1082489 3\n")
    read = read_qrels_judgments(trec, "nist")
    assert read.total_problems == 0
    assert read.judgments[["query_id", "fragment_id", "annotator", "grade", "line"]].values.tolist() == [
        ["19335", "1017759", "nist", 0, 1],
        ["19335", "1082489", "nist", 3, 3],
    ]
    beir = put(tmp_path, "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n\nq1\td2\t5\n")
    off = read_qrels_judgments(beir, "vendor", scale=(0, 3))
    assert [str(p) for p in off.problems] == [f"{beir}:4: grade 5 is outside the scale 0-3"]
    assert off.judgments["fragment_id"].tolist() == ["d1"]
    # a 1-5 release's TREC export holds gains 0-4: as a 1-5 annotator's grades every one would be off by one
    gains = put(tmp_path, "golden.qrels", "q1 0 d1 4\nq1 0 d2 0\nq1 0 d3 1\nq1 0 d4 0\n")
    shifted = read_qrels_judgments(gains, "gold", scale=(1, 5))
    assert [str(p) for p in shifted.problems] == [
        f"{gains}:2: grade 0 is outside the scale 1-5; the grades run 0-4, as the gains (grade - 1) of a release's "
        "TREC or BEIR qrels: import them with --qrels-grades gains (or export them with --grades as-judged)",
        f"{gains}:4: grade 0 is outside the scale 1-5",
    ]
    # read as gains, each grade is gain + 1 on 1-5 (by hand: 4→5, 0→1, 1→2, 0→1)
    back = read_qrels_judgments(gains, "gold", scale=(1, 5), grades="gains")
    assert back.total_problems == 0 and back.judgments["grade"].tolist() == [5, 1, 2, 1]
    graded = put(tmp_path, "graded.qrels", "q1 0 d1 5\nq1 0 d2 0\n")  # a 5 is no gain on 1-5: no such hint
    assert [str(p) for p in read_qrels_judgments(graded, "gold", scale=(1, 5)).problems] == [
        f"{graded}:2: grade 0 is outside the scale 1-5"
    ]
    assert [str(p) for p in read_qrels_judgments(graded, "gold", scale=(1, 5), grades="gains").problems] == [
        f"{graded}:1: grade 6 is outside the scale 1-5"  # a 5 read as a gain is 6: a file of grades, not gains
    ]
    jg = put(tmp_path, "qrels.jg", "q1 1 d1 2\nq1 2 d1 0\nq1 2 d2 1\n")
    groups = read_qrels_judgments(jg, "nist", qrels_format="jg").judgments
    assert groups[["fragment_id", "annotator", "grade"]].values.tolist() == [
        ["d1", "nist-jg1", 2],
        ["d1", "nist-jg2", 0],
        ["d2", "nist-jg2", 1],
    ]
    records = put(tmp_path, "j.jsonl", '{"query_id": "q1", "fragment_id": "d1", "annotator": "a", "grade": 1}\n')
    with pytest.raises(InputError, match="is a judgments file, not qrels"):
        read_qrels_judgments(records, "nist")


def test_semicolon_csv_is_named_by_every_reader(tmp_path: Path) -> None:
    """A European spreadsheet's export: queries, qrels for eval and judgments for import all name the ';'."""
    from eval_core.io.judgments import judgments_file_hint

    for name, text in (("q.csv", "id;text\nq1;hola\n"), ("qrels.csv", "query_id;doc_id;grade\nq1;d1;2\n")):
        path = put(tmp_path, name, text)
        reader = read_queries if name == "q.csv" else load_qrels
        with pytest.raises(InputError, match=r":1: .*CSV separated by ';'.* save it with ',' as the delimiter"):
            reader(path)
    judgments = put(tmp_path, "j.csv", "\nquery_id;fragment_id;annotator;grade\nq1;d1;ann;2\n")
    assert str(judgments_file_hint(judgments)).startswith(f"{judgments}:2: it looks like a CSV separated by ';'")
    run = put(tmp_path, "j.txt", "# a comment\nq1 Q0 d1 1 2.5 bm25\n")
    assert str(judgments_file_hint(run)).startswith(f"{run}:2: this looks like a TREC run")
    assert judgments_file_hint(put(tmp_path, "ok.csv", "query_id,fragment_id,annotator,grade\nq1,d1,a;b,2\n")) is None


def test_fields_named_otherwise_are_mapped_and_a_missing_one_names_the_line_s_fields(tmp_path):
    from eval_core.io.collection import field_map

    jsonl = put(
        tmp_path, "p.jsonl", '{"docid": "d1", "doc": "first passage", "t": "T1"}\n{"docid": "d2", "doc": "two"}\n'
    )
    plain = read_fragments(jsonl)
    assert plain.total_problems == 2
    assert plain.problems[0].problem == (
        "fragment text is missing or empty (field text or contents); the line has field(s) 'docid', 'doc', 't'; "
        "name the file's fields with --field, e.g. --field text=NAME"
    )
    mapped = read_fragments(jsonl, fields=field_map(["text=doc", "title=t"], "fragments")).checked()
    assert [(r.id, r.text, r.title) for r in mapped] == [("d1", "first passage", "T1"), ("d2", "two", None)]
    wrong = read_fragments(jsonl, fields={"text": "body"})
    assert wrong.problems[0].problem == "no field body (--field text=body); the line has field(s) 'docid', 'doc', 't'"
    # a header naming none of the known columns is read once its fields are mapped
    tsv = put(tmp_path, "q.tsv", "qno\tquestion\tlang\nq1\twhat is recall\ten\n")
    with pytest.raises(InputError, match="not a queries file qrelkit reads"):
        read_queries(tsv)
    queries = read_queries(tsv, fields=field_map(["id=qno", "text=question"], "queries")).checked()
    assert [(r.id, r.text) for r in queries] == [("q1", "what is recall")]
    csv_file = put(tmp_path, "c.csv", "pid,passage\np1,hello\n")
    assert [(r.id, r.text) for r in read_fragments(csv_file, fields={"id": "pid", "text": "passage"}).checked()] == [
        ("p1", "hello")
    ]
    for bad, why in (
        (["text"], "write NAME=FILE_FIELD"),
        (["body=doc"], "fragments take id, text, title, doc_id, position, not 'body'"),
        (["text=a", "text=b"], "--field text= is given twice"),
    ):
        with pytest.raises(ValueError, match=why):
            field_map(bad, "fragments")


def test_near_identical_problems_collapse_into_one_line(tmp_path):
    from eval_core.errors import Problems, problem_shape

    problems = Problems("run.qrels")
    for i in range(11_386):
        problems.add(i + 3, f"unknown fragment id 'D{i}' (not imported into this project)")
    problems.add(20_000, "grade 7 is outside the scale 0-3")
    assert problems.lines() == [
        "run.qrels: 11,386 lines like line 3: unknown fragment id 'D0' (not imported into this project)",
        "run.qrels:20000: grade 7 is outside the scale 0-3",
    ]
    assert problem_shape("no pair ('q1', 'f9') in 'demo'") == "no pair (…, …) in …"
    with pytest.raises(InputError) as err:
        problems.check()
    assert str(err.value) == (
        "run.qrels:3: unknown fragment id 'D0' (not imported into this project) (and 11,386 more problem(s))"
    )
    assert err.value.more == problems.lines()

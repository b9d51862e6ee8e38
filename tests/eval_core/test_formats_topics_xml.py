"""TREC topics in the XML layout of the Web, COVID and later tracks (`<topic number="…">` with `<query>`,
`<question>` or `<description>`, `<narrative>`): read by the one queries reader, told by content, refused with
`path:line` when malformed — also through `qrelkit import queries`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotator.cli import main
from eval_core.errors import InputError
from eval_core.io.collection import QueryRecord, read_queries

# TREC-COVID's first topic as shipped (topics-rnd5.xml), and a Web track topic with a subtopic.
XML = """<?xml version="1.0" encoding="UTF-8"?>
<topics task="2020-covid">
  <topic number="1">
    <query>coronavirus origin</query>
    <question>what is the origin of COVID-19</question>
    <narrative>seeking range of information about the SARS-CoV-2 virus's origin, including its evolution, animal
      source, and first transmission into humans</narrative>
  </topic>
  <topic number="51" type="faceted">
    <query>horse hooves &amp; shoes</query>
    <description>Find information about horse hooves, their care, and diseases of hoof.</description>
    <subtopic number="1" type="inf">Find pictures of horse hooves.</subtopic>
  </topic>
</topics>
"""


def put(tmp_path: Path, text: str, name: str = "topics.xml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_xml_topics_read_with_their_context(tmp_path: Path) -> None:
    read = read_queries(put(tmp_path, XML))
    assert read.format == "trec-topics"
    covid = (
        "seeking range of information about the SARS-CoV-2 virus's origin, including its evolution, animal "
        "source, and first transmission into humans"
    )
    assert read.checked() == [
        QueryRecord("1", "coronavirus origin", 3, None, "what is the origin of COVID-19", covid),
        QueryRecord(
            "51",
            "horse hooves & shoes",
            9,
            None,
            "Find information about horse hooves, their care, and diseases of hoof.",
            None,
        ),
    ]
    descs = read_queries(put(tmp_path, XML), topic_field="desc").checked()
    assert [q.text for q in descs] == [
        "what is the origin of COVID-19",
        "Find information about horse hooves, their care, and diseases of hoof.",
    ]
    bare = read_queries(put(tmp_path, '<topic number="7"><query>one line</query></topic>\n', "t.txt"))
    assert bare.checked() == [QueryRecord("7", "one line", 1)]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('<topics>\n<topic number="1">\n<query>a</query>\n</topics>\n', 4, "not well-formed XML: mismatched tag"),
        (
            '<topics>\n<topic number="1">\n<query>a</query>\n<query>b</query>\n</topic>\n</topics>\n',
            4,
            "a second <query> in the topic opened at line 2",
        ),
        (
            '<topics>\n<topic number="1">\n<title>a</title>\n</topic>\n</topics>\n',
            3,
            "unexpected <title> in the topic opened at line 2 (a topic holds <query>, <question>, <description>, "
            "<narrative>)",
        ),
        (
            '<topics>\n<topic number="1">\n<query>a</query>\n<topic number="2">\n',
            4,
            "<topic> inside the topic opened at line 2",
        ),
        ("<topics>\n<query>a</query>\n</topics>\n", 2, "<query> outside a <topic> … </topic>"),
        ('<topic number="1">\n<query>a <b>bold</b></query>\n</topic>\n', 2, "<b> inside <query> (close <query> first)"),
        ("<topics>\n<topic>\n<query>no number</query>\n</topic>\n</topics>\n", 2, "query id is missing or empty"),
        (
            '<topics>\n<topic number="1">\nstray\n<query>a</query>\n</topic>\n</topics>\n',
            3,
            "text between the fields of the topic opened at line 2",
        ),
        (
            '<?xml version="1.0"?>\n<!DOCTYPE t [\n<!ENTITY a "aaaaaaaaaa">\n]>\n<topics/>\n',
            3,
            "an XML entity declaration",
        ),
        ('<topics>\n<topic number="1">\n<query>a</query>\n</topic>\n', 5, "not well-formed XML: no element found"),
    ],
)
def test_bad_xml_topics_name_the_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = put(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_queries(path).checked()
    assert str(err.value).startswith(f"{path}:{line}: ") and words in str(err.value), str(err.value)


def test_import_queries_takes_xml_topics(engine, store_url, tmp_path: Path, capsys) -> None:
    assert main(["project", "create", "covid", "--db", store_url]) == 0
    capsys.readouterr()
    path = put(tmp_path, XML)
    assert (
        main(["import", "queries", str(path), "--project", "covid", "--db", store_url, "--report-format", "json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert (report["created"], report["format"]) == (2, "trec-topics")
    bad = put(tmp_path, XML.replace("</query>\n    <question>", "\n    <question>"), "bad.xml")
    assert main(["import", "queries", str(bad), "--project", "covid", "--db", store_url]) == 2
    assert capsys.readouterr().err == f"qrelkit: error: {bad}:5: <question> inside <query> (close <query> first)\n"

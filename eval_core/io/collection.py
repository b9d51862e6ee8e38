"""Queries and fragments as the field ships them: the one reader of each, for imports and every command.

Queries: JSONL / CSV / TSV with named columns (`id`/`_id`/`query_id`/`qid`, `text`/`query`, optional
`category`; ir_datasets TREC topics as records: `title`, `description`, `narrative`), headerless `qid<TAB>text`
TSV (MS MARCO, TREC DL, ir_datasets), and TREC topic files (`<top> <num> <title> <desc> <narr>`, or the XML
layout of the Web, COVID and later tracks: `<topic number="…"><query> <question>|<description> <narrative>`;
the topic field chosen is the query text, the description and narrative are kept as its context).
Fragments: JSONL / CSV / TSV with named columns (qrelkit's `id`, `text`, `title`, `doc_id`; BEIR's `_id`,
`title`, `text`, `metadata`; Pyserini JsonCollection's `id`, `contents`; ir_datasets' `doc_id`, `text`, `title`),
and headerless `pid<TAB>text` TSV (MS MARCO collection); any of them gzipped.

A fragment's id is `id` / `_id` / `fragment_id` / `docid`, else `doc_id` (ir_datasets: the record is a
document); when both an id and `doc_id` are given, `doc_id` is the document the fragment belongs to, and a
`position` / `chunk` / `chunk_index` / `offset` field is its order within that document.

Fields named otherwise are mapped (`fields`, the CLI's `--field text=doc`): the file's field becomes the one
named, e.g. `{"docid": …, "doc": …}` with `text=doc`; a line without a mapped field, or without a field the
reader needs, is told which fields it has.

The format is told by content — a JSON record, a header naming known columns, a `<top>` tag, a line of
exactly two tab-separated fields — or named (`fmt`); a file that fits none is refused with every format tried
and why it did not fit, never read by a guess that drops columns.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from eval_core.errors import InputError
from eval_core.io.records import SEMICOLON_HINT, check_id, iter_lines, iter_records_as

QUERY_FORMATS = ("jsonl", "csv", "tsv", "id-text-tsv", "trec-topics")
FRAGMENT_FORMATS = ("jsonl", "csv", "tsv", "id-text-tsv")
TOPIC_FIELDS = ("title", "desc")
QUERY_ID_FIELDS = ("id", "_id", "query_id", "qid")
QUERY_TEXT_FIELDS = ("text", "query")
FRAGMENT_ID_FIELDS = ("id", "_id", "fragment_id", "docid")
FRAGMENT_TEXT_FIELDS = ("text", "contents")
POSITION_FIELDS = ("position", "chunk", "chunk_index", "offset")
_QUERY_FIELDS = {*QUERY_ID_FIELDS, *QUERY_TEXT_FIELDS, "category", "title", "description", "narrative", "metadata"}
_FRAGMENT_FIELDS = {*FRAGMENT_ID_FIELDS, *FRAGMENT_TEXT_FIELDS, *POSITION_FIELDS, "doc_id", "title", "metadata"}
MAX_PROBLEMS = 100
# What `fields` may map, per kind: the reader's own field names.
MAPPABLE = {
    "queries": ("id", "text", "category", "description", "narrative"),
    "fragments": ("id", "text", "title", "doc_id", "position"),
}
_TAG = re.compile(r"<(/?)(top|num|title|desc|narr)>", re.IGNORECASE)
# The XML layout's elements: the root, a topic (its id in `number`), and a topic's fields as the SGML layout's.
_XML_FIELDS = {"query": "title", "question": "desc", "description": "desc", "narrative": "narr"}
_XML_START = ("<?xml", "<topics", "<topic ", "<topic>")
_LABEL = {
    "num": re.compile(r"^\s*number:\s*", re.I),
    "title": re.compile(r"^\s*topic:\s*", re.I),
    "desc": re.compile(r"^\s*description:\s*", re.I),
    "narr": re.compile(r"^\s*narrative:\s*", re.I),
}


@dataclass(frozen=True)
class QueryRecord:
    """One query as read: its id, text and optional category, TREC description and narrative, and file line."""

    id: str
    text: str
    line: int
    category: str | None = None
    description: str | None = None
    narrative: str | None = None


@dataclass(frozen=True)
class FragmentRecord:
    """One fragment as read: id, text, optional title, document and order within it, other fields, file line."""

    id: str
    text: str
    line: int
    title: str | None = None
    doc_id: str | None = None
    position: int | None = None
    meta: dict | None = None


@dataclass
class Collection:
    """What a queries or fragments file holds: its records in file order, the format they were read as, and
    every problem found (the first MAX_PROBLEMS kept, `total_problems` counted) so an import reports them all."""

    format: str
    records: list = field(default_factory=list)
    problems: list[InputError] = field(default_factory=list)
    total_problems: int = 0

    def add(self, path: str, line: int | None, problem: str) -> None:
        """Count one problem (kept if among the first MAX_PROBLEMS)."""
        self.total_problems += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(InputError(path, line, problem))

    def checked(self) -> list:
        """The records, or the first problem raised (saying how many more there are)."""
        if self.total_problems:
            first = self.problems[0]
            more = f" (and {self.total_problems - 1} more problem(s))" if self.total_problems > 1 else ""
            raise InputError(first.path, first.line, first.problem + more)
        return self.records


# ------------------------------------------------------------------------------------------- telling the format


def _first_line(path: str) -> tuple[int, str] | None:
    for lineno, text in iter_lines(path, blank=False):
        if text.strip() and not text.lstrip().startswith("#"):
            return lineno, text
    return None


def detect(path: str | Path, kind: str, mapped: tuple[str, ...] = ()) -> str:
    """The format of a queries or fragments file (`kind`), told by its first record (a header may name the
    `mapped` fields instead of known ones); an InputError naming every format tried and why it did not fit when
    none does."""
    label = str(path)
    first = _first_line(label)
    if first is None:
        raise InputError(label, None, "empty file: no records")
    lineno, text = first
    line = text.strip()
    ids, texts = (
        (QUERY_ID_FIELDS, QUERY_TEXT_FIELDS) if kind == "queries" else (FRAGMENT_ID_FIELDS, FRAGMENT_TEXT_FIELDS)
    )
    known = {*ids, *texts, "doc_id", "title", "description", *mapped}
    if line.startswith("{"):
        return "jsonl"
    if (_TAG.match(line) and line.lower().startswith(("<top>", "<num>"))) or line.lower().startswith(_XML_START):
        if kind == "queries":
            return "trec-topics"
        raise InputError(
            label, lineno, "this is a TREC topics file: it holds queries (qrelkit import queries), not fragments"
        )
    tabs = [c.strip() for c in text.split("\t")]
    commas = [c.strip() for c in next(csv.reader([text]))]
    semis = [c.strip() for c in text.split(";")]
    if len(tabs) > 1 and known & set(tabs):
        return "tsv"
    if len(tabs) == 2 and tabs[0] and not any(ch.isspace() for ch in tabs[0]):
        return "id-text-tsv"
    if len(commas) > 1 and known & set(commas):
        return "csv"
    why = [
        "JSONL: the line does not start with '{'",
        f"CSV/TSV with a header: no column named {' or '.join(ids)} ({', '.join(texts)} for the text)",
        f"headerless id<TAB>text TSV: {len(tabs)} tab-separated field(s), not 2",
    ]
    if kind == "queries":
        why.insert(1, "TREC topics: no <top>, <num> or XML <topic> tag")
    hint = f"; {SEMICOLON_HINT}" if len(semis) > 1 and known & set(semis) else _trec_hint(line, kind)
    raise InputError(label, lineno, f"not a {kind} file qrelkit reads; tried {'; '.join(why)}{hint}")


def _trec_hint(line: str, kind: str) -> str:
    """What a TREC run or qrels line given as queries or fragments is, and where it goes."""
    fields = line.split()
    if len(fields) == 6 and fields[1] == "Q0":
        return f"; it looks like a TREC run (qid Q0 docid rank score tag), not {kind}: `qrelkit import run`"
    if len(fields) == 4 and fields[3].lstrip("-").isdigit():
        return (
            f"; it looks like TREC qrels (qid iter docid grade), not {kind}: `qrelkit import judgments "
            "--annotator NAME`"
        )
    return ""


def _format(path: str, kind: str, fmt: str | None, formats: tuple[str, ...], mapped: tuple[str, ...] = ()) -> str:
    if fmt is None:
        return detect(path, kind, mapped)
    if fmt not in formats:
        raise ValueError(f"{kind} format must be one of {', '.join(formats)}, got {fmt!r}")
    return fmt


# -------------------------------------------------------------------------------------------- raw records


def _headerless(path: str) -> Iterator[tuple[int, dict]]:
    """`id<TAB>text` lines without a header (MS MARCO, TREC DL, ir_datasets); any other field count refused."""
    for lineno, text in iter_lines(path, blank=False):
        if not text.strip():
            continue
        cells = text.split("\t")
        if len(cells) != 2:
            raise InputError(
                path,
                lineno,
                f"expected 2 tab-separated fields (id, text), found {len(cells)}; a "
                "file with more columns needs a header naming them",
            )
        yield lineno, {"id": cells[0].strip(), "text": cells[1]}


def _topics(path: str) -> Iterator[tuple[int, dict]]:
    """TREC topics: each `<top>` … `</top>` with `<num>`, `<title>`, `<desc>`, `<narr>` (closing tags optional;
    'Number:', 'Topic:', 'Description:', 'Narrative:' labels dropped), as records numbered by their `<top>` line."""
    topic: dict[str, list[str]] | None = None
    start, current = 0, None
    for lineno, text in iter_lines(path):
        pos = 0
        for match in _TAG.finditer(text):
            if topic is not None and current is not None:
                topic[current].append(text[pos : match.start()])
            closing, tag = match[1] == "/", match[2].lower()
            pos = match.end()
            if tag == "top":
                if closing:
                    if topic is None:
                        raise InputError(path, lineno, "</top> without an opening <top>")
                    yield start, _topic_record(topic)
                    topic, current = None, None
                else:
                    if topic is not None:
                        raise InputError(path, lineno, f"<top> inside the topic opened at line {start}")
                    topic, start, current = {}, lineno, None
                continue
            if topic is None:
                raise InputError(path, lineno, f"<{tag}> outside a <top> … </top> topic")
            if closing:
                current = None
                continue
            if tag in topic:
                raise InputError(path, lineno, f"a second <{tag}> in the topic opened at line {start}")
            topic[tag], current = [], tag
        if topic is not None and current is not None:
            topic[current].append(text[pos:] + "\n")
        elif topic is None and text[pos:].strip():
            raise InputError(path, lineno, "text outside a <top> … </top> topic")
    if topic is not None:
        raise InputError(path, start, "topic opened here is never closed with </top>")


def _xml_topics(path: str) -> Iterator[tuple[int, dict]]:
    """TREC topics in XML (`<topics>` of `<topic number="…">` with `<query>`, `<question>` or `<description>`,
    `<narrative>`; a Web track `<subtopic>` is skipped), as records numbered by their `<topic>` line. Entity
    declarations are refused, so a file cannot expand or fetch anything."""
    parser = expat.ParserCreate(encoding="UTF-8")
    done: list[tuple[int, dict]] = []
    topic: dict[str, list[str]] | None = None
    opened, current, skip = 0, None, 0  # the topic's line, the field being read, subtopic depth

    def fail(problem: str) -> None:
        raise InputError(path, parser.CurrentLineNumber, problem)

    def start(tag: str, attrs: dict[str, str]) -> None:
        nonlocal topic, opened, current, skip
        if skip or tag == "subtopic":
            skip += 1
        elif tag == "topic":
            if topic is not None:
                fail(f"<topic> inside the topic opened at line {opened}")
            topic, opened = {"num": [attrs.get("number", "")]}, parser.CurrentLineNumber
        elif topic is None:
            if tag != "topics":
                fail(f"<{tag}> outside a <topic> … </topic>")
        elif current is not None:
            fail(f"<{tag}> inside <{current}> (close <{current}> first)")
        elif tag not in _XML_FIELDS:
            fail(
                f"unexpected <{tag}> in the topic opened at line {opened} (a topic holds "
                f"{', '.join(f'<{t}>' for t in _XML_FIELDS)})"
            )
        elif _XML_FIELDS[tag] in topic:
            fail(f"a second <{tag}> in the topic opened at line {opened}")
        else:
            current = tag
            topic[_XML_FIELDS[tag]] = []

    def end(tag: str) -> None:
        nonlocal topic, current, skip
        if skip:
            skip -= 1
        elif tag == "topic" and topic is not None:
            done.append((opened, _topic_record(topic)))
            topic = None
        elif tag in _XML_FIELDS:
            current = None

    def text(data: str) -> None:
        if skip:
            return
        if topic is not None and current is not None:
            topic[_XML_FIELDS[current]].append(data)
        elif data.strip():
            fail(
                "text outside a <topic> … </topic>"
                if topic is None
                else f"text between the fields of the topic opened at line {opened}"
            )

    def entity(*_args: object) -> None:
        fail("an XML entity declaration; a topics file declares none (nothing is expanded or fetched)")

    parser.StartElementHandler, parser.EndElementHandler, parser.CharacterDataHandler = start, end, text
    parser.EntityDeclHandler = entity
    try:
        for _, line in iter_lines(path):
            parser.Parse(line + "\n", False)
            yield from done
            done.clear()
        parser.Parse("", True)
    except expat.ExpatError as exc:
        raise InputError(
            path, exc.lineno, f"not well-formed XML: {expat.ErrorString(exc.code)} (column {exc.offset + 1})"
        ) from None


def _topic_record(topic: dict[str, list[str]]) -> dict:
    out = {}
    for tag, parts in topic.items():
        text = " ".join("".join(parts).split())
        out[tag] = _LABEL[tag].sub("", text) if tag in _LABEL else text
    return out


def _raw(path: str, fmt: str) -> Iterator[tuple[int, dict]]:
    if fmt == "id-text-tsv":
        return _headerless(path)
    if fmt == "trec-topics":
        first = _first_line(path)
        return _xml_topics(path) if first and first[1].strip().lower().startswith(_XML_START) else _topics(path)
    return iter_records_as(path, fmt)


# ---------------------------------------------------------------------------------------------- fields


def _text(rec: dict, names: tuple[str, ...], what: str, required: bool = True) -> str | None:
    """The first present field of `names` as a stripped string, None when optional and absent or empty."""
    for name in names:
        if name in rec and rec[name] is not None:
            value = rec[name]
            if isinstance(value, dict | list | bool):
                raise ValueError(f"{what} must be a string, got {type(value).__name__}")
            text = str(value).strip()
            if text:
                return text
            break
    if required:
        raise _Missing(f"{what} is missing or empty (field {' or '.join(names)})")
    return None


class _Missing(ValueError):
    """A field the reader needs is not on the line (told with the fields the line has)."""


def field_map(items: list[str] | None, kind: str) -> dict[str, str]:
    """`--field NAME=FILE_FIELD` options as {reader's field: the file's field}; a ValueError for a malformed
    item, a field the reader does not take, or one named twice."""
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, source = item.partition("=")
        name, source = name.strip(), source.strip()
        if not sep or not name or not source:
            raise ValueError(f"--field {item!r}: write NAME=FILE_FIELD, e.g. text=doc")
        if name not in MAPPABLE[kind]:
            raise ValueError(f"--field {item!r}: {kind} take {', '.join(MAPPABLE[kind])}, not {name!r}")
        if name in out:
            raise ValueError(f"--field {name}= is given twice")
        out[name] = source
    return out


def _mapped(rec: dict, fields: dict[str, str]) -> dict:
    """The record with each mapped file field under the reader's name; a mapped id or text the line lacks is a
    _Missing naming the line's fields (a mapped optional field may be absent)."""
    if not fields:
        return rec
    absent = [
        f"{source} (--field {name}={source})"
        for name, source in fields.items()
        if source not in rec and name in ("id", "text")
    ]
    if absent:
        raise _Missing(f"no field {', '.join(absent)}")
    out = {k: v for k, v in rec.items() if k not in fields.values()}
    out.update({name: rec[source] for name, source in fields.items() if source in rec})
    return out


def _problem(exc: ValueError, rec: dict, fields: dict[str, str]) -> str:
    """A field problem, with the fields the line has when one is missing."""
    if not isinstance(exc, _Missing):
        return str(exc)
    have = ", ".join(map(repr, rec)) or "none"
    how = "" if fields else "; name the file's fields with --field, e.g. --field text=NAME"
    return f"{exc}; the line has field(s) {have}{how}"


def _position(rec: dict) -> int | None:
    """A fragment's order within its document: a non-negative integer in the first POSITION_FIELDS present."""
    for name in POSITION_FIELDS:
        value = rec.get(name)
        if value is not None and value != "":
            break
    else:
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit():
        raise ValueError(
            f"{name} must be a non-negative integer (the fragment's order within its doc_id), got {value!r}"
        )
    return int(text)


def read_queries(
    path: str | Path, fmt: str | None = None, topic_field: str = "title", fields: dict[str, str] | None = None
) -> Collection:
    """Every query of a file (format told by content unless `fmt` names it); `topic_field` is the TREC topic
    field (title or desc) that becomes the query text; `fields` maps the file's field names (see field_map).
    Problems are collected, not raised (see `checked`)."""
    if topic_field not in TOPIC_FIELDS:
        raise ValueError(f"topic field must be one of {', '.join(TOPIC_FIELDS)}, got {topic_field!r}")
    label, fields = str(path), fields or {}
    out = Collection(_format(label, "queries", fmt, QUERY_FORMATS, tuple(fields.values())))
    chosen = {"title": ("title",), "desc": ("desc", "description")}[topic_field]
    first: dict[str, int] = {}
    for lineno, given in _raw(label, out.format):
        if out.total_problems >= MAX_PROBLEMS:
            break  # enough to fix the file by; the rest is not read
        try:
            rec = _mapped(given, fields)
            ident = check_id(_text(rec, ("num", *QUERY_ID_FIELDS), "query id") or "", "query id")
            text = _text(rec, (*QUERY_TEXT_FIELDS, *chosen), "query text")
            category = _text(rec, ("category",), "category", required=False)
            if category is None and isinstance(rec.get("metadata"), dict):
                category = _text(rec["metadata"], ("category",), "category", required=False)
            description = _text(rec, ("desc", "description"), "description", required=False)
            narrative = _text(rec, ("narr", "narrative"), "narrative", required=False)
        except ValueError as exc:
            out.add(label, lineno, _problem(exc, given, fields))
            continue
        if ident in first:
            out.add(label, lineno, f"duplicate query id {ident!r} (first at line {first[ident]})")
            continue
        first[ident] = lineno
        out.records.append(QueryRecord(ident, text or "", lineno, category, description, narrative))
    if not out.records and not out.total_problems:
        out.add(label, None, "empty file: no queries")
    return out


def read_fragments(path: str | Path, fmt: str | None = None, fields: dict[str, str] | None = None) -> Collection:
    """Every fragment of a file (format told by content unless `fmt` names it; `fields` maps the file's field
    names, see field_map). Problems are collected."""
    label, fields = str(path), fields or {}
    out = Collection(_format(label, "fragments", fmt, FRAGMENT_FORMATS, tuple(fields.values())))
    first: dict[str, int] = {}
    ordered: dict[tuple[str, int], int] = {}
    for lineno, given in _raw(label, out.format):
        if out.total_problems >= MAX_PROBLEMS:
            break  # enough to fix the file by; the rest is not read
        try:
            rec = _mapped(given, fields)
            own = _text(rec, FRAGMENT_ID_FIELDS, "fragment id", required=False)
            doc = _text(rec, ("doc_id",), "doc_id", required=False)
            if own is None and doc is None:
                raise _Missing(
                    f"fragment id is missing or empty (field {' or '.join(FRAGMENT_ID_FIELDS)}, or "
                    f"doc_id for a record that is a whole document)"
                )
            ident = check_id(own or doc or "", "fragment id")
            text = _text(rec, FRAGMENT_TEXT_FIELDS, "fragment text")
            title = _text(rec, ("title",), "title", required=False)
            position = _position(rec)
            if position is not None and (own is None or doc is None):
                raise ValueError(
                    "a position orders a fragment within its doc_id: give both the fragment's id "
                    "and the doc_id it belongs to"
                )
        except ValueError as exc:
            out.add(label, lineno, _problem(exc, given, fields))
            continue
        if ident in first:
            out.add(label, lineno, f"duplicate fragment id {ident!r} (first at line {first[ident]})")
            continue
        first[ident] = lineno
        if position is not None and doc is not None:
            seen = ordered.setdefault((doc, position), lineno)
            if seen != lineno:
                out.add(label, lineno, f"position {position} of doc_id {doc!r} is also given at line {seen}")
                continue
        meta = dict(rec["metadata"]) if isinstance(rec.get("metadata"), dict) else {}
        meta.update({k: v for k, v in rec.items() if k not in _FRAGMENT_FIELDS and v not in (None, "")})
        out.records.append(FragmentRecord(ident, text or "", lineno, title, doc, position, meta or None))
    if not out.records and not out.total_problems:
        out.add(label, None, "empty file: no fragments")
    return out


def fragment_texts(path: str | Path, fmt: str | None = None) -> dict[str, str]:
    """fragment id → text, read exactly as `qrelkit import fragments` reads the file (for snippets)."""
    return {r.id: r.text for r in read_fragments(path, fmt).checked()}


def query_texts(path: str | Path, fmt: str | None = None, topic_field: str = "title") -> dict[str, str]:
    """query id → text, read exactly as `qrelkit import queries` reads the file."""
    return {r.id: r.text for r in read_queries(path, fmt, topic_field).checked()}

"""Qrels and runs read as trec_eval reads them, and each query's ranking in trec_eval's order.

trec_eval skips lines starting with `#` (a run's also after leading blanks) and blank run lines,
keeps the run id of the last run line, and ranks by score descending (float64 in 10.0, float32 in
version 9), ties by docid descending in byte order; the rank column is ignored. Queries are kept in
byte order of their ids, the order trec_eval prints them in.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval_core.errors import InputError
from eval_core.io.keys import arrow_ints, numpy_values, pair_keys, string_keys
from eval_core.io.records import iter_blocks
from eval_core.io.trec_text import single_spaced


@dataclass
class Qrels:
    """Judgments per query id (byte order of ids): docid → relevance (may be negative: pooled, unjudged).

    `lines`, when the fast reader read the file: the same judgments as columns in by_query's order (docids, each
    line's query index, grades, and the query ids as an Arrow array), for the columnar run path.
    `averaged_over`: the file's query count when by_query keeps only some of them (trec_eval -D 0.qid), which
    -c's averages still divide by."""

    by_query: Mapping[str, dict[str, int]]
    lines: tuple[Any, np.ndarray, np.ndarray, Any] | None = field(default=None, compare=False, repr=False)
    averaged_over: int | None = None


@dataclass(eq=False)  # holds arrays: compared by identity
class Results:
    """A run: per query id (byte order) its docids and their scores as read, and the last line's run id."""

    by_query: dict[str, tuple[list[str], np.ndarray]]
    run_id: str


def _read_bytes(path: str | Path) -> bytes:
    """A file's bytes, gzip looked through (as every qrelkit reader does; trec_eval 10.0 does not), stdin for `-`
    (trec_eval reads a run from stdin that way)."""
    if str(path) == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as file:  # gzip's magic first: a compressed file is read once, by the block reader
            data = file.read(2)
            if data != b"\x1f\x8b":
                data += file.read()
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read the file ({exc.strerror})") from exc
    if data == b"\x1f\x8b":
        data = b"".join(block for block, _ in iter_blocks(path, numbered=False))
    if not data:
        raise InputError(str(path), None, "empty file")
    return data


def _decode(field: bytes) -> str:
    """A field as text; bytes that are not UTF-8 kept one-to-one (surrogateescape) so byte order survives."""
    return field.decode("utf-8", "surrogateescape")


def byte_key(text: str) -> bytes:
    """The bytes of a field, for trec_eval's strcmp order."""
    return text.encode("utf-8", "surrogateescape")


class _Judgments(Mapping[str, dict[str, int]]):
    """qid → docid → grade over the fast reader's columns (queries in byte order); a query's dict is built when
    first asked for, so the columnar path, which needs only the query ids, never builds them."""

    def __init__(self, names: list[str], docs: Any, grades: np.ndarray, bounds: list[int]) -> None:
        self._names = names
        self._index = {q: i for i, q in enumerate(names)}
        self._docs, self._grades, self._bounds = docs, grades, bounds
        self._built: dict[str, dict[str, int]] = {}

    def __getitem__(self, qid: str) -> dict[str, int]:
        judged = self._built.get(qid)
        if judged is None:
            i = self._index[qid]
            a, b = self._bounds[i], self._bounds[i + 1]
            judged = dict(zip(self._docs.slice(a, b - a).to_pylist(), self._grades[a:b].tolist(), strict=True))
            self._built[qid] = judged
        return judged

    def __contains__(self, qid: object) -> bool:
        return qid in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _arrow_qrels(path: str | Path) -> Qrels | None:
    """The qrels through pyarrow when every line is `qid iter docid rel` with single spaces, no comment, no
    repeated pair; None otherwise (the line reader then reads it, and names any bad line)."""
    import pyarrow as pa

    table = _qrels_table(str(path))
    if table is None:
        try:
            spaced = single_spaced(_read_bytes(path))
        except InputError:
            return None
        table = None if spaced is None else _qrels_table(pa.py_buffer(spaced))
    if table is None:
        return None
    return _qrels_of(table)


def _qrels_table(source: Any) -> Any:
    """pyarrow's parse of `qid iter docid rel` lines with single spaces, no comment, no blank line; None when
    the lines are not so."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from eval_core.io import arrow_compute as pc

    try:
        table = pacsv.read_csv(
            source,
            read_options=pacsv.ReadOptions(column_names=["q", "it", "d", "g"]),
            parse_options=pacsv.ParseOptions(
                delimiter=" ",
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=False,
            ),
            convert_options=pacsv.ConvertOptions(
                include_columns=["q", "d", "g"],
                null_values=[],
                column_types={"q": pa.string(), "d": pa.string(), "g": pa.int64()},
                strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None
    if table.num_rows == 0 or pc.any(pc.starts_with(table["q"], "#")).as_py():
        return None
    if min(pc.min(pc.binary_length(table[c])).as_py() for c in ("q", "d")) == 0:
        return None
    return table


def _qrels_of(table: Any) -> Qrels | None:
    """Qrels from the parsed table, queries in byte order; None when a docid may be judged twice in a query."""
    import pyarrow as pa

    from eval_core.io import arrow_compute as pc

    q = pc.dictionary_encode(table["q"].combine_chunks())
    names = q.dictionary.to_pylist()
    by_bytes = sorted(range(len(names)), key=lambda i: byte_key(names[i]))
    index = np.empty(len(names), dtype=np.int64)
    index[by_bytes] = np.arange(len(names))
    query = index[numpy_values(q.indices)]
    lines = np.argsort(query, kind="stable")  # grouped by query, file order within each
    query = query[lines]
    docs = pc.take(table["d"].combine_chunks(), arrow_ints(lines))
    grades = numpy_values(table["g"])[lines]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(query, minlength=len(names))))).tolist()
    ordered = [names[k] for k in by_bytes]
    keys = np.sort(pair_keys(string_keys(docs), query))
    if len(keys) > 1 and bool((keys[1:] == keys[:-1]).any()):  # maybe a docid judged twice: look at the strings
        doc_list = docs.to_pylist()
        for i in range(len(ordered)):
            a, b = bounds[i], bounds[i + 1]
            if len(set(doc_list[a:b])) != b - a:
                return None  # a docid judged twice: the line reader names it
    qvalues = pc.cast(pc.take(q.dictionary, arrow_ints(np.asarray(by_bytes, dtype=np.int64))), pa.large_string())
    return Qrels(_Judgments(ordered, docs, grades, bounds), (docs, query, grades, qvalues))


def read_qrels(path: str | Path) -> Qrels:
    """A `qid iter docid rel` file (`-R qrels`); a docid judged twice for one query is refused, as trec_eval does."""
    label = str(path)
    fast = None if str(path) == "-" else _arrow_qrels(path)
    if fast is not None:
        return fast
    out: dict[str, dict[str, int]] = {}
    lines = _read_bytes(path).split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the end of the last line, not a line
    for number, line in enumerate(lines, 1):
        if line.startswith(b"#"):
            continue
        fields = line.split()
        if len(fields) != 4:  # a blank line too: trec_eval calls it malformed
            raise InputError(label, number, f"expected 4 fields 'qid iter docid rel', found {len(fields)}")
        qid, _, doc, rel = (_decode(f) for f in fields)
        try:
            grade = int(rel)
        except ValueError:
            raise InputError(label, number, f"relevance {rel!r} is not an integer") from None
        judged = out.setdefault(qid, {})
        if doc in judged:
            raise InputError(label, number, f"docid {doc!r} is judged twice for query {qid!r}")
        judged[doc] = grade
    if not out:
        raise InputError(label, None, "no qrels lines")
    return Qrels({q: out[q] for q in sorted(out, key=byte_key)})


def read_results(path: str | Path, float32: bool = False) -> Results:
    """A `qid iter docid rank score runid` file (`-T trec_results`); fields after the run id are ignored.

    Scores become float64 as trec_eval 10.0 reads them, or float32 (`float32=True`) as version 9 does.
    A docid retrieved twice for one query is refused (trec_eval stops on it too).
    """
    label = str(path)
    docs: dict[str, list[str]] = {}
    scores: dict[str, list[float]] = {}
    run_id = ""
    lines = _read_bytes(path).split(b"\n")
    for number, line in enumerate(lines, 1):
        stripped = line.lstrip()
        if not stripped or stripped.startswith(b"#"):
            continue
        fields = line.split()
        if len(fields) < 6:
            raise InputError(label, number, f"expected 6 fields 'qid iter docid rank score runid', found {len(fields)}")
        qid, doc = _decode(fields[0]), _decode(fields[2])
        try:
            score = float(fields[4])
        except ValueError:
            raise InputError(label, number, f"score {_decode(fields[4])!r} is not a number") from None
        docs.setdefault(qid, []).append(doc)
        scores.setdefault(qid, []).append(score)
        run_id = _decode(fields[5])
    if not docs:
        raise InputError(label, None, "no run lines")
    dtype = np.float32 if float32 else np.float64
    by_query = {}
    for qid in sorted(docs, key=byte_key):
        ids = docs[qid]
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            dup = next(d for d in ids if d in seen or seen.add(d))  # type: ignore[func-returns-value]
            first, again = _lines_of(lines, qid, dup)
            raise InputError(
                label, again, f"docid {dup!r} is retrieved twice for query {qid!r} (first on line {first})"
            )
        by_query[qid] = (ids, np.asarray(scores[qid], dtype=np.float64).astype(dtype))
    return Results(by_query, run_id)


def _lines_of(lines: list[bytes], qid: str, doc: str) -> tuple[int, int]:
    """The first two line numbers of a run whose query is `qid` and docid `doc` (found again only for the error
    that names them: a repeat is rare, and keeping every line's number would cost memory on every big run)."""
    found = []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if (
            len(fields) >= 6
            and not fields[0].startswith(b"#")
            and _decode(fields[0]) == qid
            and _decode(fields[2]) == doc
        ):
            found.append(number)
            if len(found) == 2:
                break
    return found[0], found[1]


def rank_query(docids: list[str], scores: np.ndarray, max_docs: int | None = None) -> list[str]:
    """One query's docids in trec_eval's order: score descending, ties by docid descending (bytes); at most
    `max_docs` of them (`-M`)."""
    by_doc = sorted(range(len(docids)), key=lambda i: byte_key(docids[i]), reverse=True)
    order = np.asarray(by_doc, dtype=np.int64)
    order = order[np.argsort(-scores[order], kind="stable")] if len(order) else order
    ranked = [docids[i] for i in order]
    return ranked if max_docs is None else ranked[:max_docs]


def ranked_docids(results: Results, max_docs: int | None = None) -> dict[str, list[str]]:
    """Every query's ranked docids the trec_eval way (see `rank_query`), queries in byte order of their ids."""
    return {qid: rank_query(ids, sc, max_docs) for qid, (ids, sc) in results.by_query.items()}


def qrels_from_dict(judged: dict[str, dict[str, int]]) -> Qrels:
    """Qrels from Python (pytrec_eval's layout: qid → docid → grade), queries put in byte order."""
    return Qrels({q: dict(judged[q]) for q in sorted(judged, key=byte_key)})


def results_from_dict(run: dict[str, dict[str, float]], run_id: str = "run", float32: bool = False) -> Results:
    """A run from Python (qid → docid → score), scores as trec_eval 10.0 (float64) or 9 (float32) holds them."""
    dtype = np.float32 if float32 else np.float64
    return Results(
        {
            q: (list(run[q]), np.asarray(list(run[q].values()), dtype=np.float64).astype(dtype))
            for q in sorted(run, key=byte_key)
            if run[q]
        },
        run_id,
    )

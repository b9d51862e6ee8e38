"""Fragments that wait for their text: created when a judgment, qrels or run names an id never imported, counted
for the pages and commands that say how many pairs wait, and what to do (import the texts)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from sqlalchemy import exists, false, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from db.projects import project_row
from db.store.engine import session_scope
from db.store.models import Fragment, Judgment, Pair, table_of

FRAGMENTS, JUDGMENTS, PAIRS = table_of(Fragment), table_of(Judgment), table_of(Pair)
# A text-less fragment's content hash: this prefix then hex. A real text's hash is 64 hex digits (db.imports.
# content_hash), so the two never collide, and two text-less fragments never share one (pooling would fold them).
TEXTLESS_PREFIX = "notext:"
IMPORT_TEXTS = "`qrelkit import fragments FILE` (or the Project page's Import tab; `--field` maps other field names)"
SQLITE_CACHE_KIB = 32 * 1024  # page cache while inserting text-less fragments (the default is 2 MiB)
EXAMPLES = 10  # text-less ids a report names, with the line that named them


def textless_hash(external_id: str) -> str:
    """The content hash of a fragment that has no text yet: unique per id, never a real text's hash."""
    digest = hashlib.sha256(external_id.encode("utf-8")).hexdigest()
    return TEXTLESS_PREFIX + digest[: 64 - len(TEXTLESS_PREFIX)]


def create_textless(session: Session, project_id: int, external_ids: Collection[str]) -> dict[str, int]:
    """Create fragments with no text (has_text false, text "") for these ids in the caller's transaction;
    returns id → fragment id. The ids must be new to the project.

    A run can name ~800k of them, so this is a driver-level bulk insert of plain tuples (SQLite executemany
    with a larger page cache for the call, PostgreSQL COPY), no per-row bind processing, and one SELECT of
    the ids back (docs/store.md, *Fragments without a text*, has the figures)."""
    wanted = sorted(set(external_ids))
    if not wanted:
        return {}
    rows = ((project_id, ext, "", textless_hash(ext), False) for ext in wanted)
    conn = session.connection()
    before = session.execute(select(func.coalesce(func.max(FRAGMENTS.c.id), 0))).scalar_one()
    columns = "project_id, external_id, text, content_hash, has_text"
    driver = conn.connection.driver_connection  # psycopg's (COPY is not in the DBAPI) or sqlite3's connection
    assert driver is not None, "a live connection has its driver's"
    if conn.dialect.name == "postgresql":
        with driver.cursor().copy(f"COPY fragments ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
    else:
        # the fragments' indexes (one on a random hash) outgrow SQLite's 2 MB default page cache, which then
        # spills to the WAL over and over; a bigger cache for this insert only (a connection setting)
        cache = conn.exec_driver_sql("PRAGMA cache_size").scalar_one()
        conn.exec_driver_sql(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
        try:
            # sqlite3's executemany takes an iterator (SQLAlchemy's wants a list): no list of rows in memory
            driver.cursor().executemany(f"INSERT INTO fragments ({columns}) VALUES (?, ?, ?, ?, ?)", rows)
        finally:
            conn.exec_driver_sql(f"PRAGMA cache_size = {int(cache)}")
    new = set(wanted)
    created = session.execute(
        select(FRAGMENTS.c.external_id, FRAGMENTS.c.id).where(
            FRAGMENTS.c.project_id == project_id, FRAGMENTS.c.id > before, FRAGMENTS.c.has_text == false()
        )
    )
    # ids above the largest before this insert are this transaction's (or, on PostgreSQL, another import's
    # committed meanwhile: kept out by the id set)
    return {ext: fid for ext, fid in created if ext in new}


def created_note(count: int) -> str:
    """What an import says of the fragments it created without a text."""
    return (
        f"{count:,} fragment(s) have no text yet: their pairs are evaluated and released, but never served to "
        f"an annotator until their texts are imported with {IMPORT_TEXTS}"
    )


def textless_report(path: str, count: int, first_lines: Mapping[str, int | None]) -> dict:
    """The report of an import that created `count` text-less fragments: how many, the first EXAMPLES ids
    (of `first_lines`: id → the line that first named it, None when the file has no such lines) with that
    line, so a typo'd id shows here, and what to do."""
    shown = sorted(first_lines.items(), key=lambda item: (item[1] is None, item[1] or 0, item[0]))[:EXAMPLES]
    return {
        "count": count,
        "examples": [f"{path}:{line}: {ext!r}" if line is not None else f"{path}: {ext!r}" for ext, line in shown],
        "note": created_note(count),
    }


@dataclass(frozen=True)
class TextsWaiting:
    """A project's fragments without a text, and its pairs that wait for one: `unjudged` of them have no grade."""

    fragments: int
    pairs: int
    unjudged: int

    def sentence(self) -> str:
        """One sentence for the Project page and the CLI ("" when nothing waits)."""
        if not self.pairs and not self.fragments:
            return ""
        return (
            f"{self.pairs:,} pair(s) wait for their text ({self.unjudged:,} of them unjudged; {self.fragments:,} "
            f"fragment(s) without a text): they are evaluated and released, but never served to an annotator. "
            f"Import their texts with {IMPORT_TEXTS}, then assign."
        )


def texts_waiting(engine: Engine, project: str) -> TextsWaiting:
    """How many fragments of the project have no text, and how many pairs (and unjudged pairs) wait for one."""
    with session_scope(engine) as session:
        project_id = project_row(session, project).id
        fragments = session.execute(
            select(func.count()).where(FRAGMENTS.c.project_id == project_id, FRAGMENTS.c.has_text == false())
        ).scalar_one()
        waiting = (PAIRS.c.project_id == project_id) & (FRAGMENTS.c.has_text == false())
        pairs = session.execute(
            select(func.count())
            .select_from(PAIRS.join(FRAGMENTS, FRAGMENTS.c.id == PAIRS.c.fragment_id))
            .where(waiting)
        ).scalar_one()
        unjudged = session.execute(
            select(func.count())
            .select_from(PAIRS.join(FRAGMENTS, FRAGMENTS.c.id == PAIRS.c.fragment_id))
            .where(waiting, ~exists().where(JUDGMENTS.c.pair_id == PAIRS.c.id))
        ).scalar_one()
    return TextsWaiting(int(fragments), int(pairs), int(unjudged))

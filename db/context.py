"""Grading in context: a pair's query description and narrative (TREC topics), and the fragments that share its
fragment's document, in document order — what an annotator reads beside the fragment they grade (the answer is
often in the neighbouring chunk). Read only: the grade stays the fragment's."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlmodel import col

from db.projects import project_row
from db.store.engine import session_scope
from db.store.models import Fragment, Pair, Query


@dataclass(frozen=True)
class ContextFragment:
    """One fragment of the document, and whether it is the one being graded."""

    external_id: str
    position: int | None
    title: str | None
    text: str
    current: bool


@dataclass(frozen=True)
class PairContext:
    """The query's context and the document the pair's fragment belongs to (empty without a doc_id)."""

    description: str | None
    narrative: str | None
    doc_id: str | None
    document: list[ContextFragment]

    @property
    def has_document(self) -> bool:
        """True when the fragment has neighbours to read (its document holds more than itself)."""
        return len(self.document) > 1

    def neighbours(self, around: int = 1) -> list[ContextFragment]:
        """The graded fragment with `around` fragments either side of it, in document order."""
        at = next((i for i, f in enumerate(self.document) if f.current), 0)
        return self.document[max(0, at - around) : at + around + 1]


def query_context(engine: Engine, project: str, pair_id: int) -> tuple[str | None, str | None]:
    """The pair's query description and narrative (None each when the import had none); one indexed probe."""
    with session_scope(engine) as session:
        proj = project_row(session, project)
        row = session.execute(
            select(col(Query.description), col(Query.narrative))
            .join(Pair, col(Pair.query_id) == Query.id)
            .where(col(Pair.id) == pair_id, col(Pair.project_id) == proj.id)
        ).first()
    if row is None:
        raise LookupError(f"no pair with id {pair_id} in project {project!r}")
    return row[0], row[1]


def pair_context(engine: Engine, project: str, pair_id: int) -> PairContext:
    """The query's context and every fragment of the pair's document, ordered by position (fragments without
    one last, then by id)."""
    description, narrative = query_context(engine, project, pair_id)
    with session_scope(engine) as session:
        proj = project_row(session, project)
        fid, doc_id = session.execute(
            select(col(Fragment.id), col(Fragment.doc_id))
            .join(Pair, col(Pair.fragment_id) == Fragment.id)
            .where(col(Pair.id) == pair_id)
        ).one()
        if doc_id is None:
            return PairContext(description, narrative, None, [])
        rows = session.execute(
            select(
                col(Fragment.id),
                col(Fragment.external_id),
                col(Fragment.position),
                col(Fragment.title),
                col(Fragment.text),
            )
            .where(col(Fragment.project_id) == proj.id, col(Fragment.doc_id) == doc_id)
            .order_by(col(Fragment.position).is_(None), col(Fragment.position), col(Fragment.external_id))
        ).all()
    return PairContext(
        description,
        narrative,
        doc_id,
        [ContextFragment(ext, pos, title, text, i == fid) for i, ext, pos, title, text in rows],
    )

"""Grading in context from the store: a query's description and narrative, and the pair's document in order."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from db.context import pair_context, query_context
from db.store.models import Fragment, Pair, Query


def contextual(engine, project) -> dict[str, int]:
    """Query t1 (with description and narrative); document doc-1's chunks c2, c0, c1 inserted out of order with
    positions 2, 0, 1, chunk cx of doc-1 without a position, and lone fragment solo without a doc_id; a pair for
    each. Returns fragment external id → pair id."""
    pairs = {}
    with engine.begin() as conn:
        qid = conn.execute(
            sa.insert(Query.__table__)
            .values(
                project_id=project.id,
                external_id="t1",
                text="return deadline",
                description="How long may I wait?",
                narrative="Relevant: states the number of days.",
            )
            .returning(Query.__table__.c.id)
        ).scalar_one()
        for ext, doc, pos in (
            ("c2", "doc-1", 2),
            ("c0", "doc-1", 0),
            ("c1", "doc-1", 1),
            ("cx", "doc-1", None),
            ("solo", None, None),
        ):
            fid = conn.execute(
                sa.insert(Fragment.__table__)
                .values(
                    project_id=project.id,
                    external_id=ext,
                    doc_id=doc,
                    position=pos,
                    text=f"text of {ext}",
                    content_hash=ext,
                )
                .returning(Fragment.__table__.c.id)
            ).scalar_one()
            pairs[ext] = conn.execute(
                sa.insert(Pair.__table__)
                .values(project_id=project.id, query_id=qid, fragment_id=fid, created_at=sa.func.now())
                .returning(Pair.__table__.c.id)
            ).scalar_one()
    return pairs


def test_document_in_position_order_and_neighbours(engine, project):
    pairs = contextual(engine, project)
    context = pair_context(engine, "demo", pairs["c1"])
    assert (context.description, context.narrative) == ("How long may I wait?", "Relevant: states the number of days.")
    assert [f.external_id for f in context.document] == ["c0", "c1", "c2", "cx"]  # no position: last
    assert [f.external_id for f in context.neighbours()] == ["c0", "c1", "c2"]
    assert [f.current for f in context.document] == [False, True, False, False]
    assert [f.external_id for f in pair_context(engine, "demo", pairs["c0"]).neighbours()] == ["c0", "c1"]
    solo = pair_context(engine, "demo", pairs["solo"])
    assert solo.doc_id is None and solo.document == [] and not solo.has_document


def test_query_context_of_an_unknown_pair(engine, project):
    contextual(engine, project)
    assert query_context(engine, "demo", 1)[0] == "How long may I wait?"
    with pytest.raises(LookupError, match="no pair"):
        query_context(engine, "demo", 999_999)

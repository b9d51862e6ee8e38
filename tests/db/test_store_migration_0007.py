"""Migration 0007: existing queries and fragments keep their rows with no context and no order; down and up again."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command

from db.store.engine import get_engine
from db.store.schema import alembic_config, head_revision, upgrade


def _columns(engine: sa.Engine, table: str) -> set[str]:
    with engine.connect() as conn:
        return {c["name"] for c in sa.inspect(conn).get_columns(table)}


def test_0007_adds_context_and_position_and_goes_back_down(empty_store_url):
    engine = get_engine(empty_store_url)
    assert upgrade(engine, "0006") == "0006"
    with engine.begin() as conn:
        run = conn.exec_driver_sql
        run(
            "INSERT INTO projects (id, name, scale_min, scale_max, overlap, overlap_fraction, agreement_threshold, "
            "created_at) VALUES (1, 'old', 0, 3, 2, 1.0, 0.6, '2026-01-02 03:04:05')"
        )
        run("INSERT INTO queries (id, project_id, external_id, text) VALUES (1, 1, 'q1', 'query one')")
        run(
            "INSERT INTO fragments (id, project_id, external_id, doc_id, text, content_hash) "
            "VALUES (1, 1, 'd1#0', 'd1', 'text', 'h1')"
        )
    assert upgrade(engine, "0007") == "0007"
    with engine.begin() as conn:
        assert conn.execute(sa.text("SELECT text, description, narrative FROM queries")).one() == (
            "query one",
            None,
            None,
        )
        assert conn.execute(sa.text("SELECT doc_id, position FROM fragments")).one() == ("d1", None)
        conn.exec_driver_sql("UPDATE queries SET description = 'what is meant', narrative = 'relevant if ...'")
        conn.exec_driver_sql("UPDATE fragments SET position = 3")
        assert conn.execute(sa.text("SELECT position FROM fragments")).scalar_one() == 3
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0006")
    assert not {"description", "narrative"} & _columns(engine, "queries")
    assert "position" not in _columns(engine, "fragments")
    assert upgrade(engine) == head_revision()  # back up to head, 0007 and what follows it
    assert {"description", "narrative"} <= _columns(engine, "queries")
    engine.dispose()
    get_engine.cache_clear()

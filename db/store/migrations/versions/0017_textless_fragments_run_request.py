"""Fragments may wait for their text; a run pooled from a live search engine keeps its request

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05

fragments.has_text (NOT NULL, default true): false for a fragment a judgment, qrels or run named before its
text was imported (its `text` is empty); such a pair is evaluated, agreed on and released, but never served to
an annotator until an import of its text sets the flag.
runs.request (JSON, nullable): for a run pooled from a live search engine (`qrelkit pool --search CONFIG`), the
endpoint, request template and reply paths it was made with (never a credential).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN: a batch rebuild would drop `fragments` and `runs`, which foreign keys refuse
    op.add_column('fragments', sa.Column('has_text', sa.Boolean(), nullable=False, server_default=sa.true()))
    op.add_column('runs', sa.Column('request', sa.JSON(), nullable=True))


def downgrade() -> None:
    waiting = op.get_bind().exec_driver_sql("SELECT count(*) FROM fragments WHERE NOT has_text").scalar_one()
    if waiting:
        raise RuntimeError(f"cannot downgrade below 0017: {waiting} fragment(s) wait for their text, which revision "
                           "0016 cannot tell from an empty text; import their texts or delete them first")
    op.drop_column('runs', 'request')
    op.drop_column('fragments', 'has_text')

"""Query context and fragment order: queries.description, queries.narrative, fragments.position

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

A TREC topic file gives each query a description and a narrative besides its title; the one chosen as the
query text is the query, the others are kept to show annotators as the query's context (NULL when the file
had none). A fragment that is a chunk of a document can carry its order within its doc_id (a chunk number or
an offset), so the context view can show neighbouring chunks in order (NULL when the file gave none).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('queries', sa.Column('description', sa.Text(), nullable=True))
    op.add_column('queries', sa.Column('narrative', sa.Text(), nullable=True))
    op.add_column('fragments', sa.Column('position', sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column('fragments', 'position')  # SQLite ≥ 3.35 drops a plain column in place
    op.drop_column('queries', 'narrative')
    op.drop_column('queries', 'description')

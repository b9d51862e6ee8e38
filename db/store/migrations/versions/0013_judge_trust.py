"""Runs record the model that produced them; model judges keep their last probe summary; post-edit marks

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05

runs.produced_by (nullable, ≤ 200 characters): the model a run was produced with (`qrelkit import run
--produced-by MODEL`); judge-trust and the release card warn when a judge of the same model family grades it.
users.probes (JSON, model judges): the last `qrelkit judge-probe` summary, whose flag shows on the judge's card.
assignments.post_edit_of (the model judge's user id): the assignment asks a person to post-edit (grade blind) a
pair only that model graded; NULL for every other assignment.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN: a batch rebuild would drop `runs` and `users`, which foreign keys refuse
    op.add_column('runs', sa.Column('produced_by', sa.String(length=200), nullable=True))
    op.add_column('users', sa.Column('probes', sa.JSON(), nullable=True))
    op.add_column('assignments', sa.Column('post_edit_of', sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column('assignments', 'post_edit_of')
    op.drop_column('users', 'probes')  # SQLite ≥ 3.35 drops a plain column in place
    op.drop_column('runs', 'produced_by')

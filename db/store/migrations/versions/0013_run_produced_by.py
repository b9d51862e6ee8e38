"""Runs record the model that produced them, so a model judge of the same family is warned about

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05

runs.produced_by (nullable, ≤ 200 characters): the model a run was produced with (`qrelkit import run
--produced-by MODEL`); judge-trust and the release card warn when a judge of the same model family grades it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('produced_by', sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('produced_by')

"""assignments.done + ix_assignments_todo: next pair in one index probe; latest-change indexes

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29

With a million judgments, "first assigned pair without a judgment" scanned past every judged pair of the
annotator. `done` is kept by the judging transaction and backfilled here from the judgments table.
(project_id, id) on judgment_history and adjudications make a project's latest change (the app's cache key,
queries_frames.judgments_fingerprint) one index probe on PostgreSQL too.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('done', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.execute(
        "UPDATE assignments SET done = true WHERE EXISTS (SELECT 1 FROM judgments j "
        "WHERE j.pair_id = assignments.pair_id AND j.user_id = assignments.user_id)"
    )
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.create_index('ix_assignments_todo', ['project_id', 'user_id', 'done', 'position', 'pair_id'],
                              unique=False)
    with op.batch_alter_table('judgment_history', schema=None) as batch_op:
        batch_op.create_index('ix_history_project_latest', ['project_id', 'id'], unique=False)
    with op.batch_alter_table('adjudications', schema=None) as batch_op:
        batch_op.create_index('ix_adjudications_project_latest', ['project_id', 'id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('adjudications', schema=None) as batch_op:
        batch_op.drop_index('ix_adjudications_project_latest')
    with op.batch_alter_table('judgment_history', schema=None) as batch_op:
        batch_op.drop_index('ix_history_project_latest')
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.drop_index('ix_assignments_todo')
        batch_op.drop_column('done')

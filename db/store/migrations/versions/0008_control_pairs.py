"""Control pairs: pairs with a settled grade a lead uses to check each annotator, and the rate they are served at

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

A control pair is an ordinary pair (served blind, like any other) whose grade is settled: taken from an
adjudicated release (release_id) or set by a lead with a reason. projects.control_every is the rate: one
control pair in every N pairs of an annotator's queue (NULL: no control pairs served).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

MAX_GRADE = 100  # frozen at this revision: the grade bound every grade column checks


def upgrade() -> None:
    op.add_column('projects', sa.Column('control_every', sa.Integer(), nullable=True))
    op.create_table(
        'control_pairs',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('project_id', sa.Integer(), nullable=False),
        sa.Column('pair_id', sa.Integer(), nullable=False),
        sa.Column('grade', sa.Integer(), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('release_id', sa.Integer(), nullable=True),
        sa.Column('created_by_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(f'grade >= 0 AND grade <= {MAX_GRADE}', name='ck_control_pairs_grade'),
        sa.ForeignKeyConstraint(['created_by_id'], ['users.id']),
        sa.ForeignKeyConstraint(['pair_id'], ['pairs.id']),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id']),
        sa.ForeignKeyConstraint(['release_id'], ['releases.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('pair_id', name='uq_control_pairs_pair'),
    )
    op.create_index(op.f('ix_control_pairs_project_id'), 'control_pairs', ['project_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_control_pairs_project_id'), table_name='control_pairs')
    op.drop_table('control_pairs')
    op.drop_column('projects', 'control_every')  # SQLite ≥ 3.35 drops a plain column in place

"""Qualification round: a new annotator grades N control pairs first, seeing each settled grade and reason

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

projects.qualify_pairs is the round's size (NULL: no round) and projects.qualify_threshold the κ it must reach
(NULL: the project's agreement threshold). qualification_rounds holds each annotator's state (in_round, passed,
failed, opened: by which lead and when); qualification_grades the round's pairs, the settled grade and reason
shown, and the grade given. Round grades are not judgments: never released, never in agreement.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

MAX_GRADE = 100  # frozen at this revision: the grade bound every grade column checks
STATUSES = ('in_round', 'passed', 'failed', 'opened')  # frozen at this revision


def _ts(name: str, nullable: bool) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


PAIRS_CHECK = 'qualify_pairs IS NULL OR qualify_pairs >= 2'
THRESHOLD_CHECK = 'qualify_threshold IS NULL OR (qualify_threshold >= -1 AND qualify_threshold <= 1)'


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # ADD COLUMN with an inline CHECK: a batch rebuild would drop `projects`, which foreign keys refuse
        op.execute(f"ALTER TABLE projects ADD COLUMN qualify_pairs INTEGER "
                   f"CONSTRAINT ck_projects_qualify_pairs CHECK ({PAIRS_CHECK})")
        op.execute(f"ALTER TABLE projects ADD COLUMN qualify_threshold FLOAT "
                   f"CONSTRAINT ck_projects_qualify_threshold CHECK ({THRESHOLD_CHECK})")
    else:
        op.add_column('projects', sa.Column('qualify_pairs', sa.Integer(), nullable=True))
        op.add_column('projects', sa.Column('qualify_threshold', sa.Float(), nullable=True))
        op.create_check_constraint('ck_projects_qualify_pairs', 'projects', PAIRS_CHECK)
        op.create_check_constraint('ck_projects_qualify_threshold', 'projects', THRESHOLD_CHECK)
    op.create_table(
        'qualification_rounds',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('project_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('status', sa.String(length=10), nullable=False),
        sa.Column('pairs', sa.Integer(), nullable=False),
        sa.Column('threshold', sa.Float(), nullable=False),
        sa.Column('weights', sa.String(length=20), nullable=False),
        sa.Column('kappa', sa.Float(), nullable=True),
        _ts('started_at', False),
        _ts('finished_at', True),
        sa.Column('opened_by_id', sa.Integer(), nullable=True),
        _ts('opened_at', True),
        sa.CheckConstraint(f"status IN ({', '.join(repr(s) for s in STATUSES)})",
                           name='ck_qualification_rounds_status'),
        sa.CheckConstraint('pairs >= 0', name='ck_qualification_rounds_pairs'),
        sa.CheckConstraint("status != 'opened' OR (opened_by_id IS NOT NULL AND opened_at IS NOT NULL)",
                           name='ck_qualification_rounds_opened'),
        sa.ForeignKeyConstraint(['opened_by_id'], ['users.id']),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id']),
        sa.ForeignKeyConstraint(['user_id'], ['users.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('project_id', 'user_id', name='uq_qualification_rounds_user'),
    )
    op.create_index(op.f('ix_qualification_rounds_project_id'), 'qualification_rounds', ['project_id'],
                    unique=False)
    op.create_table(
        'qualification_grades',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('round_id', sa.Integer(), nullable=False),
        sa.Column('pair_id', sa.Integer(), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('settled', sa.Integer(), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('grade', sa.Integer(), nullable=True),
        _ts('graded_at', True),
        sa.CheckConstraint(f'grade IS NULL OR (grade >= 0 AND grade <= {MAX_GRADE})',
                           name='ck_qualification_grades_grade'),
        sa.CheckConstraint(f'settled >= 0 AND settled <= {MAX_GRADE}', name='ck_qualification_grades_settled'),
        sa.ForeignKeyConstraint(['pair_id'], ['pairs.id']),
        sa.ForeignKeyConstraint(['round_id'], ['qualification_rounds.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('round_id', 'pair_id', name='uq_qualification_grades_pair'),
        sa.UniqueConstraint('round_id', 'position', name='uq_qualification_grades_position'),
    )
    op.create_index(op.f('ix_qualification_grades_round_id'), 'qualification_grades', ['round_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_qualification_grades_round_id'), table_name='qualification_grades')
    op.drop_table('qualification_grades')
    op.drop_index(op.f('ix_qualification_rounds_project_id'), table_name='qualification_rounds')
    op.drop_table('qualification_rounds')
    if op.get_bind().dialect.name != "sqlite":  # SQLite ≥ 3.35 drops a column's inline CHECK with it
        op.drop_constraint('ck_projects_qualify_threshold', 'projects', type_='check')
        op.drop_constraint('ck_projects_qualify_pairs', 'projects', type_='check')
    op.execute("ALTER TABLE projects DROP COLUMN qualify_threshold")
    op.execute("ALTER TABLE projects DROP COLUMN qualify_pairs")

"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('projects',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('scale_min', sa.Integer(), nullable=False),
    sa.Column('scale_max', sa.Integer(), nullable=False),
    sa.Column('overlap', sa.Integer(), nullable=False),
    sa.Column('overlap_fraction', sa.Float(), nullable=False),
    sa.Column('agreement_threshold', sa.Float(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint('agreement_threshold >= -1 AND agreement_threshold <= 1', name='ck_projects_threshold'),
    sa.CheckConstraint('overlap >= 1', name='ck_projects_overlap'),
    sa.CheckConstraint('overlap_fraction > 0 AND overlap_fraction <= 1', name='ck_projects_fraction'),
    sa.CheckConstraint('scale_min >= 0 AND scale_max > scale_min AND scale_max <= 100', name='ck_projects_scale'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_projects_name'), ['name'], unique=True)

    op.create_table('users',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('username', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('role', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('password_hash', sqlmodel.sql.sqltypes.AutoString(length=400), nullable=True),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("role IN ('annotator', 'lead')", name='ck_users_role'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_users_username'), ['username'], unique=True)

    op.create_table('fragments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('external_id', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('doc_id', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
    sa.Column('title', sa.Text(), nullable=True),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('content_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('meta', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('project_id', 'external_id', name='uq_fragments_external')
    )
    with op.batch_alter_table('fragments', schema=None) as batch_op:
        batch_op.create_index('ix_fragments_hash', ['project_id', 'content_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_fragments_project_id'), ['project_id'], unique=False)

    op.create_table('guidelines',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('content_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint('version >= 1', name='ck_guidelines_version'),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('project_id', 'version', name='uq_guidelines_version')
    )
    with op.batch_alter_table('guidelines', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_guidelines_project_id'), ['project_id'], unique=False)

    op.create_table('queries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('external_id', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('category', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('project_id', 'external_id', name='uq_queries_external')
    )
    with op.batch_alter_table('queries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_queries_project_id'), ['project_id'], unique=False)

    op.create_table('releases',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('rule', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('min_grades', sa.Integer(), nullable=False),
    sa.Column('content_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('card', sa.JSON(), nullable=False),
    sa.Column('qrels_trec', sa.Text(), nullable=False),
    sa.Column('judgments_jsonl', sa.Text(), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("rule IN ('median', 'majority', 'mean', 'min')", name='ck_releases_rule'),
    sa.CheckConstraint('version >= 1', name='ck_releases_version'),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('project_id', 'version', name='uq_releases_version')
    )
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_releases_project_id'), ['project_id'], unique=False)

    op.create_table('runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('content_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('n_lines', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('project_id', 'name', name='uq_runs_name')
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_runs_project_id'), ['project_id'], unique=False)

    op.create_table('evaluations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('release_id', sa.Integer(), nullable=False),
    sa.Column('means', sa.JSON(), nullable=False),
    sa.Column('per_query', sa.JSON(), nullable=True),
    sa.Column('warnings', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['release_id'], ['releases.id'], ),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'release_id', name='uq_evaluations_run_release')
    )
    with op.batch_alter_table('evaluations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_evaluations_release_id'), ['release_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_evaluations_run_id'), ['run_id'], unique=False)

    op.create_table('pairs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('query_id', sa.Integer(), nullable=False),
    sa.Column('fragment_id', sa.Integer(), nullable=False),
    sa.Column('sources', sa.JSON(), nullable=True),
    sa.Column('best_rank', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint('best_rank IS NULL OR best_rank >= 1', name='ck_pairs_rank'),
    sa.ForeignKeyConstraint(['fragment_id'], ['fragments.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('query_id', 'fragment_id', name='uq_pairs_query_fragment')
    )
    with op.batch_alter_table('pairs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_pairs_fragment_id'), ['fragment_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_pairs_project_id'), ['project_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_pairs_query_id'), ['query_id'], unique=False)

    op.create_table('run_entries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('query_id', sa.Integer(), nullable=False),
    sa.Column('doc_external_id', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('fragment_id', sa.Integer(), nullable=True),
    sa.Column('rank', sa.Integer(), nullable=False),
    sa.Column('score', sa.Float(), nullable=False),
    sa.CheckConstraint('rank >= 1', name='ck_run_entries_rank'),
    sa.ForeignKeyConstraint(['fragment_id'], ['fragments.id'], ),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], ),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('run_entries', schema=None) as batch_op:
        batch_op.create_index('ix_run_entries_rank', ['run_id', 'query_id', 'rank'], unique=False)

    op.create_table('adjudications',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.Integer(), nullable=False),
    sa.Column('grade', sa.Integer(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint('grade >= 0 AND grade <= 100', name='ck_adjudications_grade'),
    sa.ForeignKeyConstraint(['pair_id'], ['pairs.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('adjudications', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_adjudications_pair_id'), ['pair_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_adjudications_project_id'), ['project_id'], unique=False)

    op.create_table('assignments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['pair_id'], ['pairs.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('pair_id', 'user_id', name='uq_assignments_pair_user')
    )
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_assignments_pair_id'), ['pair_id'], unique=False)
        batch_op.create_index('ix_assignments_queue', ['project_id', 'user_id', 'position'], unique=False)

    op.create_table('judgment_history',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('old_grade', sa.Integer(), nullable=True),
    sa.Column('new_grade', sa.Integer(), nullable=True),
    sa.Column('old_note', sa.Text(), nullable=True),
    sa.Column('new_note', sa.Text(), nullable=True),
    sa.Column('old_cant_judge_reason', sa.Text(), nullable=True),
    sa.Column('new_cant_judge_reason', sa.Text(), nullable=True),
    sa.Column('guideline_id', sa.Integer(), nullable=True),
    sa.Column('changed_by_id', sa.Integer(), nullable=True),
    sa.Column('changed_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("action IN ('create', 'update', 'undo', 'import')", name='ck_history_action'),
    sa.ForeignKeyConstraint(['changed_by_id'], ['users.id'], ),
    sa.ForeignKeyConstraint(['guideline_id'], ['guidelines.id'], ),
    sa.ForeignKeyConstraint(['pair_id'], ['pairs.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('judgment_history', schema=None) as batch_op:
        batch_op.create_index('ix_history_pair_user', ['pair_id', 'user_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_judgment_history_project_id'), ['project_id'], unique=False)

    op.create_table('judgments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('grade', sa.Integer(), nullable=True),
    sa.Column('cant_judge_reason', sa.Text(), nullable=True),
    sa.Column('note', sa.Text(), nullable=True),
    sa.Column('guideline_id', sa.Integer(), nullable=True),
    sa.Column('seconds_spent', sa.Float(), nullable=True),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint('grade IS NULL OR (grade >= 0 AND grade <= 100)', name='ck_judgments_grade'),
    sa.CheckConstraint('revision >= 1', name='ck_judgments_revision'),
    sa.CheckConstraint('seconds_spent IS NULL OR seconds_spent >= 0', name='ck_judgments_seconds'),
    sa.ForeignKeyConstraint(['guideline_id'], ['guidelines.id'], ),
    sa.ForeignKeyConstraint(['pair_id'], ['pairs.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('pair_id', 'user_id', name='uq_judgments_pair_user')
    )
    with op.batch_alter_table('judgments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judgments_pair_id'), ['pair_id'], unique=False)
        batch_op.create_index('ix_judgments_project_user', ['project_id', 'user_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('judgments', schema=None) as batch_op:
        batch_op.drop_index('ix_judgments_project_user')
        batch_op.drop_index(batch_op.f('ix_judgments_pair_id'))

    op.drop_table('judgments')
    with op.batch_alter_table('judgment_history', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_judgment_history_project_id'))
        batch_op.drop_index('ix_history_pair_user')

    op.drop_table('judgment_history')
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.drop_index('ix_assignments_queue')
        batch_op.drop_index(batch_op.f('ix_assignments_pair_id'))

    op.drop_table('assignments')
    with op.batch_alter_table('adjudications', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_adjudications_project_id'))
        batch_op.drop_index(batch_op.f('ix_adjudications_pair_id'))

    op.drop_table('adjudications')
    with op.batch_alter_table('run_entries', schema=None) as batch_op:
        batch_op.drop_index('ix_run_entries_rank')

    op.drop_table('run_entries')
    with op.batch_alter_table('pairs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_pairs_query_id'))
        batch_op.drop_index(batch_op.f('ix_pairs_project_id'))
        batch_op.drop_index(batch_op.f('ix_pairs_fragment_id'))

    op.drop_table('pairs')
    with op.batch_alter_table('evaluations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_evaluations_run_id'))
        batch_op.drop_index(batch_op.f('ix_evaluations_release_id'))

    op.drop_table('evaluations')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_runs_project_id'))

    op.drop_table('runs')
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_releases_project_id'))

    op.drop_table('releases')
    with op.batch_alter_table('queries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_queries_project_id'))

    op.drop_table('queries')
    with op.batch_alter_table('guidelines', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_guidelines_project_id'))

    op.drop_table('guidelines')
    with op.batch_alter_table('fragments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_fragments_project_id'))
        batch_op.drop_index('ix_fragments_hash')

    op.drop_table('fragments')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_users_username'))

    op.drop_table('users')
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_projects_name'))

    op.drop_table('projects')

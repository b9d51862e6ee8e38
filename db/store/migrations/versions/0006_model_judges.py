"""Model judges: users.kind and model fields, the prompt version on judgments and history, judge_calls

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30

An annotator is a person ('human', every existing account) or a model judge ('model': model name, prompt
version, parameters); CHECK constraints keep the kind to the two kinds (frozen below) and the model
name and prompt version to model judges. Every judgment and history row can carry the prompt version that produced it (NULL
for people). judge_calls keeps a model's graded answer per (pair, model, prompt version, inputs), so a second
run asks nothing twice.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

ANNOTATOR_KINDS = ("human", "model")  # frozen at this revision (never read from today's eval_core)
MODEL_FIELDS = "kind = 'model' OR (model_name IS NULL AND prompt_version IS NULL)"


def upgrade() -> None:
    kinds = f"kind IN ({', '.join(repr(k) for k in ANNOTATOR_KINDS)})"
    if op.get_bind().dialect.name == "sqlite":
        # ADD COLUMN with inline CHECKs: a batch rebuild would drop `users`, which foreign keys refuse
        op.execute(f"ALTER TABLE users ADD COLUMN kind VARCHAR(10) NOT NULL DEFAULT 'human' "
                   f"CONSTRAINT ck_users_kind CHECK ({kinds})")
        op.execute("ALTER TABLE users ADD COLUMN model_name VARCHAR(200)")
        op.execute(f"ALTER TABLE users ADD COLUMN prompt_version VARCHAR(64) "
                   f"CONSTRAINT ck_users_model_fields CHECK ({MODEL_FIELDS})")
        op.execute("ALTER TABLE users ADD COLUMN model_params JSON")
    else:
        op.add_column('users', sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False,
                                         server_default='human'))
        op.add_column('users', sa.Column('model_name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True))
        op.add_column('users', sa.Column('prompt_version', sqlmodel.sql.sqltypes.AutoString(length=64),
                                         nullable=True))
        op.add_column('users', sa.Column('model_params', sa.JSON(), nullable=True))
        op.create_check_constraint('ck_users_kind', 'users', kinds)
        op.create_check_constraint('ck_users_model_fields', 'users', MODEL_FIELDS)
    for table in ('judgments', 'judgment_history'):
        op.add_column(table, sa.Column('prompt_version', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))
    op.create_table(
        'judge_calls',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('project_id', sa.Integer(), nullable=False),
        sa.Column('pair_id', sa.Integer(), nullable=False),
        sa.Column('model', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('prompt_version', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('input_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('grade', sa.Integer(), nullable=False),
        sa.Column('answer', sa.Text(), nullable=True),
        sa.Column('prompt_tokens', sa.Integer(), nullable=False),
        sa.Column('completion_tokens', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint('prompt_tokens >= 0 AND completion_tokens >= 0', name='ck_judge_calls_tokens'),
        sa.ForeignKeyConstraint(['pair_id'], ['pairs.id']),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('pair_id', 'model', 'prompt_version', 'input_hash', name='uq_judge_calls_key'),
    )
    op.create_index(op.f('ix_judge_calls_pair_id'), 'judge_calls', ['pair_id'], unique=False)
    op.create_index(op.f('ix_judge_calls_project_id'), 'judge_calls', ['project_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_judge_calls_project_id'), table_name='judge_calls')
    op.drop_index(op.f('ix_judge_calls_pair_id'), table_name='judge_calls')
    op.drop_table('judge_calls')
    for table in ('judgment_history', 'judgments'):
        op.drop_column(table, 'prompt_version')  # SQLite ≥ 3.35 drops a plain column in place
    if op.get_bind().dialect.name == "sqlite":
        for column in ('model_params', 'prompt_version', 'model_name', 'kind'):  # each takes its inline CHECK
            op.execute(f"ALTER TABLE users DROP COLUMN {column}")
        return
    op.drop_constraint('ck_users_model_fields', 'users', type_='check')
    op.drop_constraint('ck_users_kind', 'users', type_='check')
    for column in ('model_params', 'prompt_version', 'model_name', 'kind'):
        op.drop_column('users', column)

"""sessions (hashed tokens, expiry, revocation) and login_attempts (store-backed back-off)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

A login survives reloads and new tabs through a server-side session keyed by the SHA-256 of a random token
that the browser keeps in a cookie; logging out or deactivating an account revokes its rows. Password
attempts are recorded per account name and per client so repeated failures back off in every process.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sessions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('token_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('client', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint('length(token_hash) = 64', name='ck_sessions_token_hash'),
    sa.CheckConstraint('expires_at > created_at', name='ck_sessions_expiry'),
    sa.CheckConstraint('revoked_at IS NULL OR revoked_at >= created_at', name='ck_sessions_revoked'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_sessions_token_hash'), ['token_hash'], unique=True)
        batch_op.create_index('ix_sessions_user_open', ['user_id', 'revoked_at'], unique=False)

    op.create_table('login_attempts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('username', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('client', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('succeeded', sa.Boolean(), nullable=False),
    sa.Column('attempted_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('login_attempts', schema=None) as batch_op:
        batch_op.create_index('ix_login_attempts_username', ['username', 'attempted_at'], unique=False)
        batch_op.create_index('ix_login_attempts_client', ['client', 'attempted_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('login_attempts', schema=None) as batch_op:
        batch_op.drop_index('ix_login_attempts_client')
        batch_op.drop_index('ix_login_attempts_username')
    op.drop_table('login_attempts')
    with op.batch_alter_table('sessions', schema=None) as batch_op:
        batch_op.drop_index('ix_sessions_user_open')
        batch_op.drop_index(batch_op.f('ix_sessions_token_hash'))
    op.drop_table('sessions')

"""Login attempts in flight: login_attempts.succeeded may be NULL while the password is being checked

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05

An attempt is recorded before its password is checked (so simultaneous guesses cannot all pass the back-off);
it used to be written as a failure until checked, which made colleagues logging in at the same moment from one
address wait. NULL now means "in flight": neither a failure nor a success until the check ends.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('login_attempts', schema=None) as batch_op:
        batch_op.alter_column('succeeded', existing_type=sa.Boolean(), nullable=True)


def downgrade() -> None:
    op.execute('UPDATE login_attempts SET succeeded = false WHERE succeeded IS NULL')
    with op.batch_alter_table('login_attempts', schema=None) as batch_op:
        batch_op.alter_column('succeeded', existing_type=sa.Boolean(), nullable=False)

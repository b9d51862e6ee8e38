"""projects.queue_order

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

The order an annotator's assigned pairs are served in is a project setting: the pool order (as before, the
default for existing projects), MoveToFront or a Bayesian bandit over the pooled runs, or model-uncertain
first. A CHECK constraint keeps it to the names eval_core.judging_order.ORDER_NAMES knows.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    from eval_core.judging_order import DEFAULT_ORDER, ORDER_NAMES

    names = ", ".join(f"'{name}'" for name in ORDER_NAMES)
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.add_column(sa.Column('queue_order', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False,
                                      server_default=DEFAULT_ORDER))
        batch_op.create_check_constraint('ck_projects_queue_order', f"queue_order IN ({names})")


def downgrade() -> None:
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.drop_constraint('ck_projects_queue_order', type_='check')
        batch_op.drop_column('queue_order')

"""projects.queue_order

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

The order an annotator's assigned pairs are served in is a project setting: the pool order (as before, the
default for existing projects), MoveToFront or a Bayesian bandit over the pooled runs, or model-uncertain
first. A CHECK constraint keeps it to the order names of this revision (frozen below).
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

# The judging orders known at this revision, frozen here (never read from today's eval_core.judging_order).
ORDER_NAMES = ("pool", "move-to-front", "bandit", "bandit-max-mean", "model-uncertain")
DEFAULT_ORDER = "pool"


def upgrade() -> None:
    check = f"queue_order IN ({', '.join(repr(name) for name in ORDER_NAMES)})"
    if op.get_bind().dialect.name == "sqlite":
        # ADD COLUMN with an inline CHECK: a batch rebuild would drop `projects`, which foreign keys refuse
        op.execute(f"ALTER TABLE projects ADD COLUMN queue_order VARCHAR(40) NOT NULL DEFAULT '{DEFAULT_ORDER}' "
                   f"CONSTRAINT ck_projects_queue_order CHECK ({check})")
        return
    op.add_column('projects', sa.Column('queue_order', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False,
                                        server_default=DEFAULT_ORDER))
    op.create_check_constraint('ck_projects_queue_order', 'projects', check)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE projects DROP COLUMN queue_order")  # SQLite ≥ 3.35 drops its inline CHECK with it
        return
    op.drop_constraint('ck_projects_queue_order', 'projects', type_='check')
    op.drop_column('projects', 'queue_order')

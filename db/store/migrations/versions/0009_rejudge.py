"""assignments.rejudge_version: a judged pair sent back to its annotator under a newer guideline

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

A lead sends pairs judged under an older guideline version back for re-judging: the assignment is open again
(done false) and records the version it is to be re-judged under, so the annotator's queue serves it although
a judgment exists, and the page says "re-judging under guideline vN". The new grade replaces the current
judgment (the old one stays in judgment_history) and clears the mark. NULL for every existing assignment.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('assignments', sa.Column('rejudge_version', sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column('assignments', 'rejudge_version')

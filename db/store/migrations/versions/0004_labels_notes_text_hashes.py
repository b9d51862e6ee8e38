"""projects.grade_labels, guidelines.note, releases.text_hashes

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

Each project names every grade of its scale (the Annotate page shows these names); existing projects get
the defaults (the bundled 0-3 guideline's grade names, otherwise "Grade g"). A guideline version can carry
a note saying what changed. A release keeps each judged pair's query and fragment text hashes, so an export
can say which labels now point at changed text (older releases have none: NULL).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

# The default grade names as of this revision, frozen here (never read from today's db.projects): the bundled
# 0-3 guideline's names, "Grade g" on any other scale.
NAMES_0_3 = {"0": "Not relevant", "1": "Related / mentioned in passing", "2": "Answers partially / essential context",
             "3": "Answers fully"}


def _default_labels(low: int, high: int) -> dict[str, str]:
    """The JSON stored in projects.grade_labels for a project on the scale low-high."""
    if (low, high) == (0, 3):
        return dict(NAMES_0_3)
    return {str(g): f"Grade {g}" for g in range(low, high + 1)}


def upgrade() -> None:
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.add_column(sa.Column('grade_labels', sa.JSON(), nullable=True))
    with op.batch_alter_table('guidelines', schema=None) as batch_op:
        batch_op.add_column(sa.Column('note', sa.Text(), nullable=True))
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.add_column(sa.Column('text_hashes', sa.JSON(), nullable=True))
    projects = sa.table('projects', sa.column('id', sa.Integer), sa.column('scale_min', sa.Integer),
                        sa.column('scale_max', sa.Integer), sa.column('grade_labels', sa.JSON))
    conn = op.get_bind()
    for pid, low, high in conn.execute(sa.select(projects.c.id, projects.c.scale_min, projects.c.scale_max)).all():
        conn.execute(projects.update().where(projects.c.id == pid)
                     .values(grade_labels=_default_labels(low, high)))


def downgrade() -> None:
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.drop_column('text_hashes')
    with op.batch_alter_table('guidelines', schema=None) as batch_op:
        batch_op.drop_column('note')
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.drop_column('grade_labels')

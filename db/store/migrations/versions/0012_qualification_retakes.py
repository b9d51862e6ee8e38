"""Qualification retakes and closed queues: an annotator's rounds are numbered, a lead may close a queue again

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03

qualification_rounds.attempt numbers an annotator's rounds in a project (every existing round is attempt 1)
and replaces the one-round-per-annotator UNIQUE with (project_id, user_id, attempt): a lead grants a retake
(a new round on fresh control pairs, granted_by_id) or reopens a closed queue (a new row with no pairs), and
the earlier rounds stay as they were. Status `closed` records a lead closing an open queue again, with
closed_by_id, closed_at and closed_reason.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

# frozen at this revision
STATUSES = ('in_round', 'passed', 'failed', 'opened', 'closed')
OLD_STATUSES = ('in_round', 'passed', 'failed', 'opened')
CLOSED_CHECK = "status != 'closed' OR (closed_by_id IS NOT NULL AND closed_at IS NOT NULL)"
ASIDE = '_qualification_grades_0012'


def _status_check(statuses: tuple[str, ...]) -> str:
    return f"status IN ({', '.join(repr(s) for s in statuses)})"


def _grades_aside() -> bool:
    """On SQLite, move the round grades to a temporary table: rebuilding qualification_rounds drops it, which
    foreign keys refuse while grades point at it. Returns whether they were moved (put back by _grades_back)."""
    if op.get_bind().dialect.name != 'sqlite':
        return False
    op.execute(f'CREATE TEMPORARY TABLE {ASIDE} AS SELECT * FROM qualification_grades')
    op.execute('DELETE FROM qualification_grades')
    return True


def _grades_back() -> None:
    op.execute(f'INSERT INTO qualification_grades SELECT * FROM {ASIDE}')
    op.execute(f'DROP TABLE {ASIDE}')


def upgrade() -> None:
    moved = _grades_aside()
    with op.batch_alter_table('qualification_rounds', schema=None) as batch_op:
        batch_op.add_column(sa.Column('attempt', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('granted_by_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('closed_by_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('closed_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('closed_reason', sa.Text(), nullable=True))
        batch_op.drop_constraint('uq_qualification_rounds_user', type_='unique')
        batch_op.drop_constraint('ck_qualification_rounds_status', type_='check')
        batch_op.create_check_constraint('ck_qualification_rounds_status', _status_check(STATUSES))
        batch_op.create_check_constraint('ck_qualification_rounds_closed', CLOSED_CHECK)
        for column in ('granted_by_id', 'closed_by_id'):  # named as PostgreSQL names the models' unnamed keys
            batch_op.create_foreign_key(f'qualification_rounds_{column}_fkey', 'users', [column], ['id'])
    op.execute('UPDATE qualification_rounds SET attempt = 1')
    with op.batch_alter_table('qualification_rounds', schema=None) as batch_op:
        batch_op.alter_column('attempt', existing_type=sa.Integer(), nullable=False)
        batch_op.create_check_constraint('ck_qualification_rounds_attempt', 'attempt >= 1')
        batch_op.create_unique_constraint('uq_qualification_rounds_attempt', ['project_id', 'user_id', 'attempt'])
    if moved:
        _grades_back()


def downgrade() -> None:
    later = op.get_bind().execute(sa.text(
        "SELECT count(*) FROM qualification_rounds WHERE attempt > 1 OR status = 'closed'")).scalar_one()
    if later:
        raise RuntimeError(f"cannot downgrade below 0012: {later} qualification round(s) are retakes, reopenings "
                           "or closed queues, which revision 0011 cannot hold; delete them first")
    moved = _grades_aside()
    with op.batch_alter_table('qualification_rounds', schema=None) as batch_op:
        batch_op.drop_constraint('uq_qualification_rounds_attempt', type_='unique')
        batch_op.drop_constraint('ck_qualification_rounds_attempt', type_='check')
        batch_op.drop_constraint('ck_qualification_rounds_closed', type_='check')
        batch_op.drop_constraint('ck_qualification_rounds_status', type_='check')
        batch_op.create_check_constraint('ck_qualification_rounds_status', _status_check(OLD_STATUSES))
        batch_op.create_unique_constraint('uq_qualification_rounds_user', ['project_id', 'user_id'])
        for column in ('granted_by_id', 'closed_by_id'):
            batch_op.drop_constraint(f'qualification_rounds_{column}_fkey', type_='foreignkey')
        batch_op.drop_column('closed_reason')
        batch_op.drop_column('closed_at')
        batch_op.drop_column('closed_by_id')
        batch_op.drop_column('granted_by_id')
        batch_op.drop_column('attempt')
    if moved:
        _grades_back()

"""Reference annotators: users.kind may be 'reference' (grades imported from an existing qrels)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05

A reference's grades (e.g. NIST's qrels) are measured against, never an overlap slot or a person in assignment.
Only the users.kind CHECK changes. On SQLite the CHECK is widened in place (the table is not rebuilt: every
table's foreign keys point at users): SQLite's documented procedure for loosening a constraint, editing the
stored CREATE TABLE text under writable_schema, which every existing row already satisfies.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

# frozen at this revision
OLD_KINDS = ('human', 'model')
KINDS = ('human', 'model', 'reference')


def _check(kinds: tuple[str, ...]) -> str:
    return f"kind IN ({', '.join(repr(k) for k in kinds)})"


def _sqlite_check(old: tuple[str, ...], new: tuple[str, ...]) -> None:
    """Rewrite the users table's stored CHECK text from `old` kinds to `new` (SQLite, in the migration's
    transaction), bumping schema_version so every connection re-reads the schema."""
    bind = op.get_bind()
    sql = bind.execute(sa.text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'users'")).scalar_one()
    before, after = f"CHECK ({_check(old)})", f"CHECK ({_check(new)})"
    if before not in sql:
        raise RuntimeError(f"users table has no CHECK {before!r}; cannot migrate it in place")
    version = bind.execute(sa.text('PRAGMA schema_version')).scalar_one()
    bind.execute(sa.text('PRAGMA writable_schema = ON'))
    bind.execute(
        sa.text("UPDATE sqlite_master SET sql = :sql WHERE type = 'table' AND name = 'users'"),
        {'sql': sql.replace(before, after)},
    )
    bind.execute(sa.text(f'PRAGMA schema_version = {int(version) + 1}'))
    bind.execute(sa.text('PRAGMA writable_schema = OFF'))


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        _sqlite_check(OLD_KINDS, KINDS)
        return
    op.drop_constraint('ck_users_kind', 'users', type_='check')
    op.create_check_constraint('ck_users_kind', 'users', _check(KINDS))


def downgrade() -> None:
    held = op.get_bind().execute(sa.text("SELECT count(*) FROM users WHERE kind = 'reference'")).scalar_one()
    if held:
        raise RuntimeError(f"cannot downgrade below 0014: {held} reference annotator(s), which 0013 cannot hold; "
                           "delete them first")
    if op.get_bind().dialect.name == 'sqlite':
        _sqlite_check(KINDS, OLD_KINDS)
        return
    op.drop_constraint('ck_users_kind', 'users', type_='check')
    op.create_check_constraint('ck_users_kind', 'users', _check(OLD_KINDS))

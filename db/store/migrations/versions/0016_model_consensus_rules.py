"""Consensus by annotator models: releases.rule may be dawid-skene, mace or glad

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05

The releases table's CHECK on the rule name gains the three annotator-model rules. On SQLite the table is
rebuilt (batch mode), which foreign keys refuse while evaluations and control_pairs point at it: their rows are
moved to temporary tables first and put back after, under the same ids.
"""

from __future__ import annotations

from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

# frozen at this revision
RULES = ('median', 'majority', 'mean', 'min', 'dawid-skene', 'mace', 'glad')
OLD_RULES = ('median', 'majority', 'mean', 'min')


def _rule_check(rules: tuple[str, ...]) -> str:
    return f"rule IN ({', '.join(repr(r) for r in rules)})"


CHILDREN = ('evaluations', 'control_pairs')  # the tables whose rows point at releases


def _swap(rules: tuple[str, ...]) -> None:
    sqlite = op.get_bind().dialect.name == 'sqlite'
    if sqlite:
        for table in CHILDREN:
            op.execute(f'CREATE TEMPORARY TABLE _{table}_0016 AS SELECT * FROM {table}')
            op.execute(f'DELETE FROM {table}')
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.drop_constraint('ck_releases_rule', type_='check')
        batch_op.create_check_constraint('ck_releases_rule', _rule_check(rules))
    if sqlite:
        for table in CHILDREN:
            op.execute(f'INSERT INTO {table} SELECT * FROM _{table}_0016')
            op.execute(f'DROP TABLE _{table}_0016')


def upgrade() -> None:
    _swap(RULES)


def downgrade() -> None:
    modelled = op.get_bind().exec_driver_sql(
        f"SELECT count(*) FROM releases WHERE NOT ({_rule_check(OLD_RULES)})").scalar_one()
    if modelled:
        raise RuntimeError(f"cannot downgrade below 0016: {modelled} release(s) were made by an annotator-model "
                           "rule (dawid-skene, mace, glad), which revision 0015 cannot hold; delete them first")
    _swap(OLD_RULES)

"""Tapes and drives belong to a library (docs/decisions.md §15, §17): `tape_states`, `drive_states` and
`media_audit` record the library (existing rows: `default`, the one library of a site that names none); a
tape state is keyed (library, tape) and a drive state (library, drive), so the same tape ID or drive name in
two libraries is two tapes or two drives.

Going down drops the column; it fails when two libraries hold a state for the same name (the old key cannot
hold both).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 05:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT = "default"
LIBRARY_LENGTH = 32
KEYED = (("tape_states", "tape"), ("drive_states", "drive"))


def _library() -> sa.Column[str]:
    return sa.Column("library", sa.String(length=LIBRARY_LENGTH), nullable=False, server_default=DEFAULT)


def upgrade() -> None:
    for table, name in KEYED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(_library())
            batch_op.drop_constraint(f"pk_{table}", type_="primary")
            batch_op.create_primary_key(f"pk_{table}", ["library", name])
    with op.batch_alter_table("media_audit", schema=None) as batch_op:
        batch_op.add_column(_library())


def downgrade() -> None:
    with op.batch_alter_table("media_audit", schema=None) as batch_op:
        batch_op.drop_column("library")
    for table, name in KEYED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(f"pk_{table}", type_="primary")
            batch_op.create_primary_key(f"pk_{table}", [name])
            batch_op.drop_column("library")

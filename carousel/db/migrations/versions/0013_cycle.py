"""Files backing off: a partial index (rows with not_before only) instead of an index of every file; the
tape queues' version.

The snapshot asks which tapes have queued files backing off after a failed read (`not_before > now`). Over
the full index on not_before, a planner without statistics on `files` (a bulk intake not yet analyzed) chose
the state index instead and filtered every queued file: 2 s at 1,000,000 files, every cycle until autovacuum
analyzed the table. The partial index holds the few rows with a not_before and costs next to nothing, so it
is chosen whatever the statistics; intake no longer maintains an index entry for every file.

tape_queue_version (one row): each fold that finds deltas takes the next version first, so folds run one at a
time and a scheduler that keeps a copy of the tape queues applies its own folds to it and reads the table
again only when someone else folded since (carousel.db.demand_assembly).

Revision ID: 0013
Revises: 0008
Create Date: 2026-11-26 04:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ONLY_BACKING_OFF = sa.text("not_before IS NOT NULL")


def upgrade() -> None:
    op.create_index(
        "ix_files_backing_off",
        "files",
        ["not_before", "tape"],
        unique=False,
        postgresql_where=ONLY_BACKING_OFF,
        sqlite_where=ONLY_BACKING_OFF,
    )
    op.drop_index("ix_files_not_before", table_name="files")
    version = op.create_table(
        "tape_queue_version",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tape_queue_version")),
    )
    op.bulk_insert(version, [{"id": 1, "version": 0}])


def downgrade() -> None:
    op.drop_table("tape_queue_version")
    op.create_index("ix_files_not_before", "files", ["not_before"], unique=False)
    op.drop_index("ix_files_backing_off", table_name="files")

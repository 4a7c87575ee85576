"""Indexes for set-based completion and cheap fair-share accounting.

- ix_recalls_open: the open recalls (finished_at IS NULL) by file and batch, the key completion updates
  them by. Without it PostgreSQL chose ix_recalls_finished_at for `finished_at IS NULL` (every open recall
  read for each one updated).
- ix_recalls_tape_drive_started_at: the recalls of one mount (its tape and drive, started while it was
  mounted), which the fair-share usage query reads per mount of the accounting window instead of joining
  every recall.

Revision ID: 0012
Revises: 0008
Create Date: 2026-11-26 04:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPEN = "finished_at IS NULL"


def upgrade() -> None:
    op.create_index(
        "ix_recalls_open",
        "recalls",
        ["file_id", "batch_key"],
        unique=False,
        postgresql_where=sa.text(OPEN),
        sqlite_where=sa.text(OPEN),
    )
    op.create_index(
        "ix_recalls_tape_drive_started_at", "recalls", ["tape", "drive", "started_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_recalls_tape_drive_started_at", table_name="recalls")
    op.drop_index("ix_recalls_open", table_name="recalls")

"""request_files.started_at: when the recall that ended a link had started, kept on the link, so a file
that started and was then cancelled, or that a later request queued anew, keeps its startedAt (docs/api.md).
Links ended before this revision keep the old answer (the file's, while it holds the same recall).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 00:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("request_files", schema=None) as batch_op:
        batch_op.add_column(sa.Column("started_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("request_files", schema=None) as batch_op:
        batch_op.drop_column("started_at")

"""applied_events.event_at: when each applied event happened, so the table can be pruned
(carousel.scheduler.event_pruning). Rows applied before this revision get the time of the upgrade.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 09:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("applied_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("event_at", sa.DateTime(timezone=True), nullable=True))
    applied_events = sa.table("applied_events", sa.column("event_at", sa.DateTime(timezone=True)))
    op.execute(applied_events.update().values(event_at=datetime.now(UTC)))
    with op.batch_alter_table("applied_events", schema=None) as batch_op:
        batch_op.alter_column("event_at", existing_type=sa.DateTime(timezone=True), nullable=False)
        batch_op.create_index(batch_op.f("ix_applied_events_event_at"), ["event_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("applied_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_applied_events_event_at"))
        batch_op.drop_column("event_at")

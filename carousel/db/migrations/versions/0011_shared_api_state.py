"""State that several API processes share: call-rate buckets in the database (`rate_buckets`), and a
request's `status_version`, bumped by every write of intake that changes what its status shows (cancel,
delete; a release changes no state), so that a process's cached status document is checked against it on
every call.

Revision ID: 0011
Revises: 0008
Create Date: 2026-11-26 04:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rate_buckets",
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_rate_buckets")),
    )
    op.create_index(op.f("ix_rate_buckets_updated_at"), "rate_buckets", ["updated_at"])
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("status_version", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )


def downgrade() -> None:
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.drop_column("status_version")
    op.drop_index(op.f("ix_rate_buckets_updated_at"), table_name="rate_buckets")
    op.drop_table("rate_buckets")

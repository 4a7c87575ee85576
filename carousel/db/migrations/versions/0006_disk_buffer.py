"""The disk buffer (docs/data-path.md): each file's checksum and when its bytes in the buffer were last used
(NULL: not in the buffer, the LRU key otherwise); each link's lifetime and the epoch second its pin lasts to.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26 00:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ON_DISK = sa.text("disk_used_at IS NOT NULL")


def upgrade() -> None:
    with op.batch_alter_table("files", schema=None) as batch_op:
        batch_op.add_column(sa.Column("checksum", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("disk_used_at", sa.DateTime(timezone=True), nullable=True))
    # eviction's question: files in the buffer, least recently used first (few rows: those on disk)
    op.create_index(
        "ix_files_disk_used_at",
        "files",
        ["disk_used_at"],
        unique=False,
        postgresql_where=ON_DISK,
        sqlite_where=ON_DISK,
    )
    with op.batch_alter_table("request_files", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lifetime_s", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("pin_until_s", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("request_files", schema=None) as batch_op:
        batch_op.drop_column("pin_until_s")
        batch_op.drop_column("lifetime_s")
    op.drop_index("ix_files_disk_used_at", table_name="files")
    with op.batch_alter_table("files", schema=None) as batch_op:
        batch_op.drop_column("disk_used_at")
        batch_op.drop_column("checksum")

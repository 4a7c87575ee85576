"""Call-rate buckets in an unlogged table (PostgreSQL).

Every API call takes a token from its caller's bucket: one row written per call. An unlogged table writes
no WAL, so such a call's commit does not wait for the disk, with no setting per transaction, and the call can
be one statement committed on its own (carousel.api.rate_limit). After a crash PostgreSQL empties the
table: every bucket is full again (no row is a full bucket), which gives callers back at most one burst. A
standby has no copy: after a failover, buckets start full too. SQLite keeps its table as it is.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 07:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE rate_buckets SET UNLOGGED")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE rate_buckets SET LOGGED")

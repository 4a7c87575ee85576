"""Tapes and drives as operators set them: tape states (with the library's count of failed mounts), the
states admins want drives in, and the audit trail of both.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 04:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tape_states",
        sa.Column("tape", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("changed_by", sa.String(length=256), nullable=True),
        sa.Column("failed_mounts", sa.Integer(), nullable=False),
        sa.CheckConstraint("state IN ('active', 'disabled', 'broken')", name=op.f("ck_tape_states_state")),
        sa.CheckConstraint("failed_mounts >= 0", name=op.f("ck_tape_states_failed_mounts")),
        sa.PrimaryKeyConstraint("tape", name=op.f("pk_tape_states")),
    )
    op.create_table(
        "drive_states",
        sa.Column("drive", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("changed_by", sa.String(length=256), nullable=False),
        sa.CheckConstraint("state IN ('up', 'down')", name=op.f("ck_drive_states_state")),
        sa.CheckConstraint(
            "mode IS NULL OR mode IN ('after_mount', 'now')", name=op.f("ck_drive_states_mode")
        ),
        sa.PrimaryKeyConstraint("drive", name=op.f("pk_drive_states")),
    )
    op.create_table(
        "media_audit",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("who", sa.String(length=256), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("old_state", sa.String(length=32), nullable=False),
        sa.Column("new_state", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.CheckConstraint("kind IN ('tape', 'drive')", name=op.f("ck_media_audit_kind")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_media_audit")),
    )
    with op.batch_alter_table("media_audit", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_media_audit_at"), ["at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("media_audit", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_media_audit_at"))
    op.drop_table("media_audit")
    op.drop_table("drive_states")
    op.drop_table("tape_states")

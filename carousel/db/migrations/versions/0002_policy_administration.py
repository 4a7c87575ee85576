"""Policy administration: the active policy and its audit trail.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 03:50:14.031037
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "policy_audit",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("who", sa.String(length=256), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("old_policy", sa.String(length=64), nullable=False),
        sa.Column("old_options", sa.JSON(), nullable=False),
        sa.Column("new_policy", sa.String(length=64), nullable=False),
        sa.Column("new_options", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policy_audit")),
    )
    with op.batch_alter_table("policy_audit", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_policy_audit_at"), ["at"], unique=False)

    op.create_table(
        "policy_settings",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("policy", sa.String(length=64), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("changed_by", sa.String(length=256), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_policy_settings_one_row")),
        sa.CheckConstraint("version >= 1", name=op.f("ck_policy_settings_version")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policy_settings")),
    )


def downgrade() -> None:
    op.drop_table("policy_settings")
    with op.batch_alter_table("policy_audit", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_policy_audit_at"))

    op.drop_table("policy_audit")

"""Policy administration (the active policy and its audit trail), the tape outlook (why each tape waits and
when its files should be on disk), request webhooks (registration and outbox).

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
    op.create_table(
        "tape_outlook",
        sa.Column("tape", sa.String(length=64), nullable=False),
        sa.Column("code", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("files_ahead", sa.BigInteger(), nullable=False),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("eta", sa.DateTime(timezone=True), nullable=True),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tape", name=op.f("pk_tape_outlook")),
    )
    op.create_table(
        "request_webhooks",
        sa.Column("request_id", sa.String(length=36), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "state IN ('WAITING', 'DUE', 'DELIVERED', 'FAILED', 'DROPPED')",
            name=op.f("ck_request_webhooks_state"),
        ),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["requests.id"],
            name=op.f("fk_request_webhooks_request_id_requests"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("request_id", name=op.f("pk_request_webhooks")),
    )
    with op.batch_alter_table("request_webhooks", schema=None) as batch_op:
        batch_op.create_index(
            "ix_request_webhooks_state_next_attempt_at", ["state", "next_attempt_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("request_webhooks", schema=None) as batch_op:
        batch_op.drop_index("ix_request_webhooks_state_next_attempt_at")

    op.drop_table("request_webhooks")
    op.drop_table("tape_outlook")
    op.drop_table("policy_settings")
    with op.batch_alter_table("policy_audit", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_policy_audit_at"))

    op.drop_table("policy_audit")

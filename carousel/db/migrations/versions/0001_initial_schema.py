"""Initial schema: requests, files (one row per path), request_files links, mounts, recalls, applied events.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 02:24:38.395068
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "applied_events",
        sa.Column("adapter", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("adapter", "seq", name=op.f("pk_applied_events")),
    )
    op.create_table(
        "files",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("path", sa.String(length=4096), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("tape", sa.String(length=64), nullable=True),
        sa.Column("position_bytes", sa.BigInteger(), nullable=True),
        sa.Column("size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("service_class", sa.String(length=64), nullable=False),
        sa.Column("grp", sa.String(length=128), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("batch_key", sa.String(length=64), nullable=True),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("not_before", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("on_disk", sa.Boolean(), nullable=False),
        sa.CheckConstraint(
            "state IN ('UNRESOLVED', 'QUEUED', 'CLAIMED', 'SUBMITTED', 'STAGED', 'FAILED', 'CANCELLED')",
            name=op.f("ck_files_state"),
        ),
        sa.CheckConstraint("attempts >= 0", name=op.f("ck_files_attempts")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_files")),
        sa.UniqueConstraint("path", name=op.f("uq_files_path")),
    )
    with op.batch_alter_table("files", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_files_batch_key"), ["batch_key"], unique=False)
        batch_op.create_index("ix_files_state_queued_at", ["state", "queued_at", "id"], unique=False)
        batch_op.create_index(
            "ix_files_tape_state_position", ["tape", "state", "position_bytes", "id"], unique=False
        )

    op.create_table(
        "mounts",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("tape", sa.String(length=64), nullable=False),
        sa.Column("drive", sa.String(length=64), nullable=True),
        sa.Column("mounted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("unmounted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mounts")),
    )
    with op.batch_alter_table("mounts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mounts_mounted_at"), ["mounted_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_mounts_tape"), ["tape"], unique=False)

    op.create_table(
        "requests",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("owner", sa.String(length=256), nullable=False),
        sa.Column("grp", sa.String(length=128), nullable=False),
        sa.Column("activity", sa.String(length=128), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("api", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("files_total", sa.Integer(), nullable=False),
        sa.Column("client_info", sa.Text(), nullable=True),
        sa.Column("colocation", sa.String(length=256), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("state IN ('ACTIVE', 'DONE', 'DELETED')", name=op.f("ck_requests_state")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_requests")),
    )
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_requests_owner"), ["owner"], unique=False)

    op.create_table(
        "recalls",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("file_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("batch_key", sa.String(length=64), nullable=False),
        sa.Column("tape", sa.String(length=64), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=True),
        sa.Column("drive", sa.String(length=64), nullable=True),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["file_id"], ["files.id"], name=op.f("fk_recalls_file_id_files")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recalls")),
    )
    with op.batch_alter_table("recalls", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_recalls_batch_key"), ["batch_key"], unique=False)
        batch_op.create_index(batch_op.f("ix_recalls_file_id"), ["file_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_recalls_finished_at"), ["finished_at"], unique=False)

    op.create_table(
        "request_aliases",
        sa.Column("alias", sa.String(length=256), nullable=False),
        sa.Column("request_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["requests.id"],
            name=op.f("fk_request_aliases_request_id_requests"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("alias", name=op.f("pk_request_aliases")),
    )
    with op.batch_alter_table("request_aliases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_request_aliases_request_id"), ["request_id"], unique=False)

    op.create_table(
        "request_files",
        sa.Column("request_id", sa.String(length=36), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("file_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("path", sa.String(length=4096), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("released_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "state IN ('PENDING', 'COMPLETED', 'FAILED', 'CANCELLED')", name=op.f("ck_request_files_state")
        ),
        sa.ForeignKeyConstraint(["file_id"], ["files.id"], name=op.f("fk_request_files_file_id_files")),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["requests.id"],
            name=op.f("fk_request_files_request_id_requests"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("request_id", "ordinal", name=op.f("pk_request_files")),
    )
    with op.batch_alter_table("request_files", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_request_files_file_id"), ["file_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("request_files", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_request_files_file_id"))

    op.drop_table("request_files")
    with op.batch_alter_table("request_aliases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_request_aliases_request_id"))

    op.drop_table("request_aliases")
    with op.batch_alter_table("recalls", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_recalls_finished_at"))
        batch_op.drop_index(batch_op.f("ix_recalls_file_id"))
        batch_op.drop_index(batch_op.f("ix_recalls_batch_key"))

    op.drop_table("recalls")
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_requests_owner"))

    op.drop_table("requests")
    with op.batch_alter_table("mounts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mounts_tape"))
        batch_op.drop_index(batch_op.f("ix_mounts_mounted_at"))

    op.drop_table("mounts")
    with op.batch_alter_table("files", schema=None) as batch_op:
        batch_op.drop_index("ix_files_tape_state_position")
        batch_op.drop_index("ix_files_state_queued_at")
        batch_op.drop_index(batch_op.f("ix_files_batch_key"))

    op.drop_table("files")
    op.drop_table("applied_events")

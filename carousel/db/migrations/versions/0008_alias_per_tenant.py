"""request_aliases.owner: an alias is unique per caller (the request's owner), not across the service. A
global name let any caller learn another tenant's XRootD request ids (409 "already names a request") or take
them in advance. Existing aliases get their request's owner.

Going down fails if two callers have come to use one alias since: the old table cannot hold both.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 01:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("request_aliases", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner", sa.String(length=256), nullable=True))
    aliases = sa.table("request_aliases", sa.column("owner", sa.String), sa.column("request_id", sa.String))
    requests = sa.table("requests", sa.column("id", sa.String), sa.column("owner", sa.String))
    owner_of_request = (
        sa.select(requests.c.owner).where(requests.c.id == aliases.c.request_id).scalar_subquery()
    )
    op.execute(aliases.update().values(owner=owner_of_request))
    with op.batch_alter_table("request_aliases", schema=None) as batch_op:
        batch_op.alter_column("owner", existing_type=sa.String(length=256), nullable=False)
        batch_op.drop_constraint("pk_request_aliases", type_="primary")
        batch_op.create_primary_key("pk_request_aliases", ["owner", "alias"])


def downgrade() -> None:
    with op.batch_alter_table("request_aliases", schema=None) as batch_op:
        batch_op.drop_constraint("pk_request_aliases", type_="primary")
        batch_op.create_primary_key("pk_request_aliases", ["alias"])
        batch_op.drop_column("owner")

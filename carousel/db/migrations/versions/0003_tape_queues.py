"""Tape queues: per tape, group and class of service, the queued and the in-flight files, so the scheduler's
snapshot reads tapes, not files.

Triggers on files append every change to tape_queue_deltas (inserts only: writers of files never wait for
each other there, and a claim keeps FOR UPDATE SKIP LOCKED); the scheduler folds the deltas into tape_queues
when it takes its snapshot. PostgreSQL: one statement-level trigger per operation, with transition tables,
appending one delta per key and statement. SQLite: row-level triggers, one delta per row. The migration fills
tape_queues from the files already there.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 04:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY = "tape, grp, service_class, kind"
COUNTED = "tape IS NOT NULL AND state IN ('QUEUED', 'CLAIMED', 'SUBMITTED')"
KIND = "CASE WHEN state = 'QUEUED' THEN 'Q' ELSE 'F' END"
DELTA_COLUMNS = (
    "tape, grp, service_class, kind, files, bytes, retries,"
    " arriving_oldest, arriving_priority, leaving_oldest, leaving_priority"
)


def _lines(source: str | None, sign: int, row: str = "") -> str:
    """One line per file of a transition table (PostgreSQL), or of one row (SQLite: row is "NEW." or "OLD."
    and there is no table): its key and what it adds (sign 1) or takes away (-1)."""
    c = {name: f"{row}{name}" for name in _COLUMNS}
    queued = f"{c['state']} = 'QUEUED'"
    arriving, leaving = (queued, "0 = 1") if sign > 0 else ("0 = 1", queued)
    where = f"{c['tape']} IS NOT NULL AND {c['state']} IN ('QUEUED', 'CLAIMED', 'SUBMITTED')"
    return f"""
        SELECT {c["tape"]} AS tape, {c["grp"]} AS grp, {c["service_class"]} AS service_class,
               CASE WHEN {queued} THEN 'Q' ELSE 'F' END AS kind, {sign} AS n,
               {sign} * coalesce({c["size_bytes"]}, 0) AS b,
               {sign} * (CASE WHEN {queued} AND {c["attempts"]} > 0 THEN 1 ELSE 0 END) AS r,
               CASE WHEN {arriving} THEN {c["queued_at"]} END AS arriving_oldest,
               CASE WHEN {arriving} THEN {c["priority"]} END AS arriving_priority,
               CASE WHEN {leaving} THEN {c["queued_at"]} END AS leaving_oldest,
               CASE WHEN {leaving} THEN {c["priority"]} END AS leaving_priority
        {f"FROM {source}" if source else ""} WHERE {where}"""


_COLUMNS = ("tape", "grp", "service_class", "state", "size_bytes", "attempts", "queued_at", "priority")


def _postgresql_function(name: str, lines: str) -> str:
    return f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tape_queue_deltas ({DELTA_COLUMNS})
    SELECT tape, grp, service_class, kind, sum(n), sum(b), sum(r), min(arriving_oldest),
           max(arriving_priority), min(leaving_oldest), max(leaving_priority)
    FROM ({lines}) AS line
    GROUP BY {KEY}
    HAVING sum(n) <> 0 OR sum(b) <> 0 OR sum(r) <> 0 OR count(arriving_oldest) > 0
        OR count(leaving_oldest) > 0;
    RETURN NULL;
END;
$$;
"""


POSTGRESQL_UP = [
    _postgresql_function("carousel_tape_queues_insert", _lines("new_rows", 1)),
    _postgresql_function("carousel_tape_queues_delete", _lines("old_rows", -1)),
    _postgresql_function(
        "carousel_tape_queues_update", _lines("old_rows", -1) + " UNION ALL " + _lines("new_rows", 1)
    ),
    "CREATE TRIGGER tape_queues_insert AFTER INSERT ON files REFERENCING NEW TABLE AS new_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION carousel_tape_queues_insert()",
    "CREATE TRIGGER tape_queues_delete AFTER DELETE ON files REFERENCING OLD TABLE AS old_rows"
    " FOR EACH STATEMENT EXECUTE FUNCTION carousel_tape_queues_delete()",
    "CREATE TRIGGER tape_queues_update AFTER UPDATE ON files REFERENCING OLD TABLE AS old_rows"
    " NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION carousel_tape_queues_update()",
]
POSTGRESQL_DOWN = [
    "DROP TRIGGER IF EXISTS tape_queues_insert ON files",
    "DROP TRIGGER IF EXISTS tape_queues_delete ON files",
    "DROP TRIGGER IF EXISTS tape_queues_update ON files",
    "DROP FUNCTION IF EXISTS carousel_tape_queues_insert()",
    "DROP FUNCTION IF EXISTS carousel_tape_queues_delete()",
    "DROP FUNCTION IF EXISTS carousel_tape_queues_update()",
]


def _sqlite_row(row: str, sign: int) -> str:
    """The delta of one row (NEW adds, OLD takes away), as an INSERT for a trigger body."""
    return f"INSERT INTO tape_queue_deltas ({DELTA_COLUMNS}) {_lines(None, sign, f'{row}.')};"


SQLITE_UP = [
    f"CREATE TRIGGER tape_queues_insert AFTER INSERT ON files BEGIN {_sqlite_row('NEW', 1)} END",
    f"CREATE TRIGGER tape_queues_delete AFTER DELETE ON files BEGIN {_sqlite_row('OLD', -1)} END",
    "CREATE TRIGGER tape_queues_update AFTER UPDATE OF state, tape, grp, service_class, size_bytes, attempts,"
    f" priority, queued_at ON files BEGIN {_sqlite_row('OLD', -1)} {_sqlite_row('NEW', 1)} END",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS tape_queues_insert",
    "DROP TRIGGER IF EXISTS tape_queues_delete",
    "DROP TRIGGER IF EXISTS tape_queues_update",
]

BACKFILL = f"""
INSERT INTO tape_queues (tape, grp, service_class, kind, files, bytes, retries, oldest, max_priority)
SELECT tape, grp, service_class, {KIND}, count(*), sum(coalesce(size_bytes, 0)),
       sum(CASE WHEN state = 'QUEUED' AND attempts > 0 THEN 1 ELSE 0 END),
       min(CASE WHEN state = 'QUEUED' THEN queued_at END),
       coalesce(max(CASE WHEN state = 'QUEUED' THEN priority END), 0)
FROM files WHERE {COUNTED}
GROUP BY tape, grp, service_class, {KIND}
"""


def upgrade() -> None:
    op.create_table(
        "tape_queues",
        sa.Column("tape", sa.String(length=64), nullable=False),
        sa.Column("grp", sa.String(length=128), nullable=False),
        sa.Column("service_class", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=1), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("oldest", sa.DateTime(timezone=True), nullable=True),
        sa.Column("max_priority", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tape", "grp", "service_class", "kind", name=op.f("pk_tape_queues")),
    )
    op.create_table(
        "tape_queue_deltas",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("tape", sa.String(length=64), nullable=False),
        sa.Column("grp", sa.String(length=128), nullable=False),
        sa.Column("service_class", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=1), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("arriving_oldest", sa.DateTime(timezone=True), nullable=True),
        sa.Column("arriving_priority", sa.Integer(), nullable=True),
        sa.Column("leaving_oldest", sa.DateTime(timezone=True), nullable=True),
        sa.Column("leaving_priority", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tape_queue_deltas")),
    )
    op.create_index("ix_files_not_before", "files", ["not_before"], unique=False)
    op.execute(BACKFILL)
    statements = POSTGRESQL_UP if op.get_bind().dialect.name == "postgresql" else SQLITE_UP
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    statements = POSTGRESQL_DOWN if op.get_bind().dialect.name == "postgresql" else SQLITE_DOWN
    for statement in statements:
        op.execute(statement)
    op.drop_index("ix_files_not_before", table_name="files")
    op.drop_table("tape_queue_deltas")
    op.drop_table("tape_queues")

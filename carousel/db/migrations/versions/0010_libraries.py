"""Several libraries behind one queue (docs/decisions.md §17): a tape is (library, tape). `files`, `mounts`
and `recalls` record the library (existing rows: `default`, the one library of a site that names none); the
tape queues and their deltas are keyed by library first, so the same tape ID in two libraries stays two tapes.

The tape-queue triggers of 0003 are made again with the library in their key. The tape queues are rebuilt
from `files` (as 0003 filled them): deltas not yet folded are already in what the rebuild counts. Going down
drops the column; it fails nothing, but files of libraries other than `default` then mix with its tapes.

Revision ID: 0010
Revises: 0008
Create Date: 2026-11-26 04:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT = "default"
LIBRARY_LENGTH = 32
KIND = "CASE WHEN state = 'QUEUED' THEN 'Q' ELSE 'F' END"
COUNTED = "tape IS NOT NULL AND state IN ('QUEUED', 'CLAIMED', 'SUBMITTED')"
TAPE_TRIGGERS = ("tape_queues_insert", "tape_queues_delete", "tape_queues_update")
TAPE_FUNCTIONS = ("carousel_tape_queues_insert", "carousel_tape_queues_delete", "carousel_tape_queues_update")


def _key(with_library: bool) -> list[str]:
    return (["library"] if with_library else []) + ["tape", "grp", "service_class"]


def _lines(with_library: bool, source: str | None, sign: int, row: str = "") -> str:
    """One line per file of a transition table (PostgreSQL), or of one row (SQLite: row is "NEW." or "OLD."
    and there is no table): its key and what it adds (sign 1) or takes away (-1). As 0003's, keyed by
    library when with_library."""
    c = {name: f"{row}{name}" for name in (*_key(True), "state", "size_bytes", "attempts", "queued_at")}
    c["priority"] = f"{row}priority"
    queued = f"{c['state']} = 'QUEUED'"
    arriving, leaving = (queued, "0 = 1") if sign > 0 else ("0 = 1", queued)
    where = f"{c['tape']} IS NOT NULL AND {c['state']} IN ('QUEUED', 'CLAIMED', 'SUBMITTED')"
    keys = ", ".join(f"{c[k]} AS {k}" for k in _key(with_library))
    return f"""
        SELECT {keys},
               CASE WHEN {queued} THEN 'Q' ELSE 'F' END AS kind, {sign} AS n,
               {sign} * coalesce({c["size_bytes"]}, 0) AS b,
               {sign} * (CASE WHEN {queued} AND {c["attempts"]} > 0 THEN 1 ELSE 0 END) AS r,
               CASE WHEN {arriving} THEN {c["queued_at"]} END AS arriving_oldest,
               CASE WHEN {arriving} THEN {c["priority"]} END AS arriving_priority,
               CASE WHEN {leaving} THEN {c["queued_at"]} END AS leaving_oldest,
               CASE WHEN {leaving} THEN {c["priority"]} END AS leaving_priority
        {f"FROM {source}" if source else ""} WHERE {where}"""


def _delta_columns(with_library: bool) -> str:
    return ", ".join(
        [
            *_key(with_library),
            "kind, files, bytes, retries",
            "arriving_oldest, arriving_priority, leaving_oldest, leaving_priority",
        ]
    )


def _postgresql_function(with_library: bool, name: str, lines: str) -> str:
    key = ", ".join([*_key(with_library), "kind"])
    return f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tape_queue_deltas ({_delta_columns(with_library)})
    SELECT {key}, sum(n), sum(b), sum(r), min(arriving_oldest),
           max(arriving_priority), min(leaving_oldest), max(leaving_priority)
    FROM ({lines}) AS line
    GROUP BY {key}
    HAVING sum(n) <> 0 OR sum(b) <> 0 OR sum(r) <> 0 OR count(arriving_oldest) > 0
        OR count(leaving_oldest) > 0;
    RETURN NULL;
END;
$$;
"""


def _postgresql_up(with_library: bool) -> list[str]:
    def lines(source: str, sign: int) -> str:
        return _lines(with_library, source, sign)

    return [
        _postgresql_function(with_library, "carousel_tape_queues_insert", lines("new_rows", 1)),
        _postgresql_function(with_library, "carousel_tape_queues_delete", lines("old_rows", -1)),
        _postgresql_function(
            with_library,
            "carousel_tape_queues_update",
            lines("old_rows", -1) + " UNION ALL " + lines("new_rows", 1),
        ),
        "CREATE TRIGGER tape_queues_insert AFTER INSERT ON files REFERENCING NEW TABLE AS new_rows"
        " FOR EACH STATEMENT EXECUTE FUNCTION carousel_tape_queues_insert()",
        "CREATE TRIGGER tape_queues_delete AFTER DELETE ON files REFERENCING OLD TABLE AS old_rows"
        " FOR EACH STATEMENT EXECUTE FUNCTION carousel_tape_queues_delete()",
        "CREATE TRIGGER tape_queues_update AFTER UPDATE ON files REFERENCING OLD TABLE AS old_rows"
        " NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION carousel_tape_queues_update()",
    ]


def _sqlite_row(with_library: bool, row: str, sign: int) -> str:
    lines = _lines(with_library, None, sign, f"{row}.")
    return f"INSERT INTO tape_queue_deltas ({_delta_columns(with_library)}) {lines};"


def _sqlite_up(with_library: bool) -> list[str]:
    def row(name: str, sign: int) -> str:
        return _sqlite_row(with_library, name, sign)

    watched = ", ".join([*_key(with_library), "state", "size_bytes", "attempts", "priority", "queued_at"])
    return [
        f"CREATE TRIGGER tape_queues_insert AFTER INSERT ON files BEGIN {row('NEW', 1)} END",
        f"CREATE TRIGGER tape_queues_delete AFTER DELETE ON files BEGIN {row('OLD', -1)} END",
        f"CREATE TRIGGER tape_queues_update AFTER UPDATE OF {watched} ON files"
        f" BEGIN {row('OLD', -1)} {row('NEW', 1)} END",
    ]


def _drop_triggers(postgresql: bool) -> None:
    for trigger in TAPE_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}" + (" ON files" if postgresql else ""))
    if postgresql:
        for function in TAPE_FUNCTIONS:
            op.execute(f"DROP FUNCTION IF EXISTS {function}()")


def _library_column() -> sa.Column[str]:
    return sa.Column("library", sa.String(length=LIBRARY_LENGTH), nullable=False, server_default=DEFAULT)


def _remake_tape_queues(with_library: bool) -> None:
    """Makes tape_queues and tape_queue_deltas again (keyed by library or not), filled from files."""
    op.drop_table("tape_queue_deltas")
    op.drop_table("tape_queues")
    library = [sa.Column("library", sa.String(length=LIBRARY_LENGTH), nullable=False)] if with_library else []
    op.create_table(
        "tape_queues",
        *library,
        sa.Column("tape", sa.String(length=64), nullable=False),
        sa.Column("grp", sa.String(length=128), nullable=False),
        sa.Column("service_class", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=1), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("oldest", sa.DateTime(timezone=True), nullable=True),
        sa.Column("max_priority", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(*_key(with_library), "kind", name=op.f("pk_tape_queues")),
    )
    library = [sa.Column("library", sa.String(length=LIBRARY_LENGTH), nullable=False)] if with_library else []
    op.create_table(
        "tape_queue_deltas",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        *library,
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
    key = ", ".join(_key(with_library))
    op.execute(f"""
INSERT INTO tape_queues ({key}, kind, files, bytes, retries, oldest, max_priority)
SELECT {key}, {KIND}, count(*), sum(coalesce(size_bytes, 0)),
       sum(CASE WHEN state = 'QUEUED' AND attempts > 0 THEN 1 ELSE 0 END),
       min(CASE WHEN state = 'QUEUED' THEN queued_at END),
       coalesce(max(CASE WHEN state = 'QUEUED' THEN priority END), 0)
FROM files WHERE {COUNTED}
GROUP BY {key}, {KIND}
""")


def _make_triggers(postgresql: bool, with_library: bool) -> None:
    for statement in _postgresql_up(with_library) if postgresql else _sqlite_up(with_library):
        op.execute(statement)


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    _drop_triggers(postgresql)
    for table in ("files", "mounts", "recalls"):
        op.add_column(table, _library_column())
    _remake_tape_queues(with_library=True)
    _make_triggers(postgresql, with_library=True)


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    _drop_triggers(postgresql)
    for table in ("recalls", "mounts", "files"):
        # SQLite 3.35 drops a column in place: no batch copy of `files` (which would lose its partial index)
        op.execute(f"ALTER TABLE {table} DROP COLUMN library")
    _remake_tape_queues(with_library=False)
    _make_triggers(postgresql, with_library=False)

"""Migration 0010 (libraries) on both databases: rows made before it belong to the library `default`, the
tape queues are rebuilt with the library in their key, and the same tape ID in two libraries is two tapes to
the triggers and the fold. It goes down again, the tape queues rebuilt without the library."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Integer, String, column, insert, select, table, text
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session

from carousel.db.engine import current_revision, downgrade_to, head_revision, make_engine, upgrade_to_head
from carousel.db.models import Mount, QueuedFileRow, Recall, TapeQueue
from carousel.db.tape_queue_queries import fold_deltas

AT = datetime(2026, 1, 1, tzinfo=UTC)
OLD_QUEUES = table(
    "tape_queues",
    column("tape", String),
    column("grp", String),
    column("kind", String),
    column("files", Integer),
)


def _file(path: str, tape: str, state: str = "QUEUED", **extra: object) -> dict[str, object]:
    return {
        "path": path,
        "state": state,
        "tape": tape,
        "position_bytes": 0,
        "size_bytes": 10,
        "service_class": "default",
        "grp": "g",
        "priority": 0,
        "attempts": 0,
        "queued_at": AT,
        "on_disk": False,
        **extra,
    }


def _queues(session: Session) -> list[tuple[str, str, str, int, int]]:
    rows = session.execute(
        select(TapeQueue.library, TapeQueue.tape, TapeQueue.kind, TapeQueue.files, TapeQueue.bytes)
    )
    return sorted(tuple(r) for r in rows)  # type: ignore[misc]


def test_0010_puts_old_rows_in_the_default_library_and_keys_tapes_by_library(empty_database_url: URL) -> None:
    upgrade_to_head(empty_database_url)
    downgrade_to(empty_database_url, "0008")
    engine = make_engine(empty_database_url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO files (path, state, tape, position_bytes, size_bytes, service_class, grp,"
                    " priority, attempts, queued_at, on_disk) VALUES"
                    " ('/old/1', 'QUEUED', 'T1', 0, 10, 'default', 'g', 0, 0, :at, false),"
                    " ('/old/2', 'SUBMITTED', 'T1', 5, 10, 'default', 'g', 0, 0, :at, false)"
                ),
                {"at": AT},
            )
            connection.execute(
                text("INSERT INTO mounts (tape, mounted_at, files, bytes) VALUES ('T1', :at, 1, 10)"),
                {"at": AT},
            )
        upgrade_to_head(empty_database_url)
        assert current_revision(engine) == head_revision()
        with Session(engine) as session, session.begin():
            assert session.scalars(select(QueuedFileRow.library)).all() == ["default", "default"]
            assert session.scalars(select(Mount.library)).all() == ["default"]
            # rebuilt from files: the queued and the in-flight file of T1, in the library default
            assert _queues(session) == [("default", "T1", "F", 1, 10), ("default", "T1", "Q", 1, 10)]

            # T1 of library b is another tape than T1 of default
            session.execute(
                insert(QueuedFileRow), [_file("/b/1", "T1", library="b"), _file("/b/2", "T1", library="b")]
            )
            session.execute(insert(Recall).values(file_id=1, batch_key="k", tape="T1", submitted_at=AT))
            fold_deltas(session)
            assert _queues(session) == [
                ("b", "T1", "Q", 2, 20),
                ("default", "T1", "F", 1, 10),
                ("default", "T1", "Q", 1, 10),
            ]
            assert session.scalars(select(Recall.library)).all() == ["default"]
            # a file of b leaving the queue changes b's T1 only
            session.execute(
                QueuedFileRow.__table__.update().where(QueuedFileRow.path == "/b/1").values(state="CLAIMED")
            )
            fold_deltas(session)
            assert _queues(session) == [
                ("b", "T1", "F", 1, 10),
                ("b", "T1", "Q", 1, 10),
                ("default", "T1", "F", 1, 10),
                ("default", "T1", "Q", 1, 10),
            ]

        downgrade_to(empty_database_url, "0008")
        with engine.connect() as connection:
            rows = connection.execute(select(OLD_QUEUES.c.tape, OLD_QUEUES.c.kind, OLD_QUEUES.c.files))
            assert sorted(tuple(r) for r in rows) == [("T1", "F", 2), ("T1", "Q", 2)]
        upgrade_to_head(empty_database_url)
    finally:
        engine.dispose()

"""Completion's SQL for many events at once, set-based: the common events of one batch (a mount opened or
closed, a file started, a file on disk) become one statement per kind of change for the whole batch, each
row touched once (carousel.completion.apply merges the events of one row first). On PostgreSQL each
statement takes its rows as arrays (carousel.db.row_sets), so the tape-queue triggers on `files` fire once
per statement and the planner sees one join, keyed on the row's own index: recalls by the partial index of
open recalls (file, batch; migration 0012), files by id, links by file. SQLite runs the same statements row
by row, with the same results.

Each statement keeps the guards of its one-row form in carousel.db.completion_queries (the states a change
may start from), so an event that arrives late or twice changes nothing.

Callers own the transaction; nothing here commits.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any

from sqlalchemy import BigInteger, String, Text, any_, bindparam, exists, func, insert, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from carousel.db.models import Mount, QueuedFileRow, RequestFile, StageRequest, UtcDateTime
from carousel.db.row_sets import Column, execute_over_rows, postgresql
from carousel.db.state_sets import quoted
from carousel.db.webhook_queries import enqueue_deliveries
from carousel.domain.buffer import Pinning
from carousel.domain.completion import FileNow
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.states import FILE_IN_FLIGHT, STAGE, FileState, LinkState, RequestState

F = QueuedFileRow
L = RequestFile


CHUNK = 5_000


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def files_now(session: Session, file_ids: Collection[int]) -> dict[int, FileNow]:
    """What completion needs of each file, in one statement per few thousand files."""
    wanted = exists().where(L.file_id == F.id, L.state == LinkState.PENDING.value)
    found: dict[int, FileNow] = {}
    for chunk in _chunks(sorted(set(file_ids))):
        rows = session.execute(
            select(F.id, F.state, F.batch_key, F.attempts, wanted.label("wanted")).where(F.id.in_(chunk))
        )
        for file_id, state, batch_key, attempts, is_wanted in rows:
            found[file_id] = FileNow(file_id, FileState(state), batch_key, attempts, bool(is_wanted))
    return found


# --- mounts -----------------------------------------------------------------------------------------------

_MOUNTS_OPEN_BEFORE = """
UPDATE mounts SET files = mounts.files + u.files, bytes = mounts.bytes + u.bytes,
                  unmounted_at = coalesce(u.unmounted_at, mounts.unmounted_at)
FROM {rows}
WHERE mounts.library = u.library AND mounts.tape = u.tape AND mounts.drive = u.drive
  AND mounts.unmounted_at IS NULL
"""
_MOUNT_COLUMNS = (
    Column("library", String),
    Column("tape", String),
    Column("drive", String),
    Column("files", BigInteger),
    Column("bytes", BigInteger),
    Column("unmounted_at", UtcDateTime),
)


def mounts_open_before(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """rows: library, tape, drive, files, bytes, unmounted_at (None: still open). The mounts open before this
    batch: the reads counted on them, and closed when the batch closes them."""
    execute_over_rows(session, _MOUNTS_OPEN_BEFORE, _MOUNT_COLUMNS, rows)


def mounts_opened(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """rows: library, tape, drive, mounted_at, unmounted_at, files, bytes. Mounts opened in this batch, with
    what they read and, if they closed in it, when."""
    if rows:
        session.execute(insert(Mount), list(rows))


def mount_reads(
    session: Session,
    tape: str,
    drive: str | None,
    files: int,
    bytes_read: int,
    *,
    library: str = DEFAULT_LIBRARY,
) -> None:
    """Reads of one open mount (of `library`), counted in one statement."""
    clauses = [Mount.library == library, Mount.tape == tape, Mount.unmounted_at.is_(None)]
    if drive is not None:
        clauses.append(Mount.drive == drive)
    session.execute(
        update(Mount).where(*clauses).values(files=Mount.files + files, bytes=Mount.bytes + bytes_read)
    )


# --- recalls ----------------------------------------------------------------------------------------------

# `finished_at IS NULL` alone would let the planner pick ix_recalls_finished_at (every open recall); the
# partial index ix_recalls_open is keyed by file and batch and holds only open recalls.
_RECALLS_CHANGED = """
UPDATE recalls SET
    started_at = coalesce(u.started_at, recalls.started_at),
    finished_at = u.finished_at,
    outcome = coalesce(u.outcome, recalls.outcome),
    bytes = CASE WHEN u.finished_at IS NULL THEN recalls.bytes ELSE u.bytes END,
    reason = CASE WHEN u.finished_at IS NULL THEN recalls.reason ELSE u.reason END,
    drive = coalesce(u.drive, recalls.drive)
FROM {rows}
WHERE recalls.file_id = u.file_id AND recalls.batch_key = u.batch_key AND recalls.finished_at IS NULL
"""
_RECALL_COLUMNS = (
    Column("file_id", BigInteger),
    Column("batch_key", String),
    Column("started_at", UtcDateTime),
    Column("finished_at", UtcDateTime),
    Column("outcome", String),
    Column("bytes", BigInteger),
    Column("drive", String),
    Column("reason", Text),
)


def recalls_changed(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """rows: file_id, batch_key, started_at (None: no start in this batch), finished_at (None: no end),
    outcome, bytes, drive (None keeps the recall's), reason. One row per open recall."""
    execute_over_rows(session, _RECALLS_CHANGED, _RECALL_COLUMNS, rows)


# --- files, links, requests -------------------------------------------------------------------------------

_IN_FLIGHT = quoted(FILE_IN_FLIGHT)
_STAGE_SOURCES = quoted(STAGE.sources)

_FILES_STARTED = f"""
UPDATE files SET started_at = u.started_at
FROM {{rows}}
WHERE files.id = u.file_id AND files.state IN ({_IN_FLIGHT}) AND files.started_at IS NULL
"""
_STARTED_COLUMNS = (Column("file_id", BigInteger), Column("started_at", UtcDateTime))

_REQUESTS_STARTED = f"""
UPDATE requests SET started_at = s.started_at
FROM (SELECT l.request_id AS request_id, min(u.started_at) AS started_at
      FROM {{rows}} JOIN request_files AS l ON l.file_id = u.file_id AND l.state = '{LinkState.PENDING.value}'
      GROUP BY l.request_id) AS s
WHERE requests.id = s.request_id AND requests.started_at IS NULL
"""


def files_started(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """rows: file_id, started_at; one per file, of files not staged in this batch. In-flight files not marked
    started yet are."""
    execute_over_rows(session, _FILES_STARTED, _STARTED_COLUMNS, rows)


def requests_started(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """rows: file_id, started_at; one per file. Requests waiting for these files and not started yet start
    at the earliest of their files' starts."""
    execute_over_rows(session, _REQUESTS_STARTED, _STARTED_COLUMNS, rows)


_STAGED_COLUMNS = (
    Column("file_id", BigInteger),
    Column("started_at", UtcDateTime),
    Column("finished_at", UtcDateTime),
    Column("checksum", String),
)
_DISK_NOW = Column("disk_now", UtcDateTime)
_NOW_S = Column("now_s", BigInteger)
_DEFAULT_LIFETIME_S = Column("default_lifetime_s", BigInteger)


def _files_staged_sql(in_buffer: bool) -> str:
    disk = ", disk_used_at = :disk_now" if in_buffer else ""
    return f"""
UPDATE files SET state = '{STAGE.target.value}', started_at = coalesce(files.started_at, u.started_at),
                 finished_at = u.finished_at, error = NULL, on_disk = TRUE,
                 checksum = coalesce(u.checksum, files.checksum){disk}
FROM {{rows}}
WHERE files.id = u.file_id AND files.state IN ({_STAGE_SOURCES})
"""


def _links_completed_sql(pinned: bool) -> str:
    # the link keeps its recall's start (carousel.db.link_start.recall_started)
    pins = (
        ", pin_until_s = :now_s + coalesce(request_files.lifetime_s, :default_lifetime_s)" if pinned else ""
    )
    return f"""
UPDATE request_files SET state = '{LinkState.COMPLETED.value}', error = NULL, finished_at = u.finished_at,
    started_at = (SELECT coalesce(f.started_at, f.submitted_at, f.claimed_at) FROM files AS f
                  WHERE f.id = request_files.file_id){pins}
FROM {{rows}}
WHERE request_files.file_id = u.file_id AND request_files.state = '{LinkState.PENDING.value}'
"""


def files_staged(
    session: Session,
    rows: Sequence[dict[str, Any]],
    started: Sequence[dict[str, Any]] = (),
    pinning: Pinning | None = None,
) -> None:
    """rows: file_id, started_at (None: no start in this batch), finished_at, checksum (None keeps the
    file's); one per file. In-flight files become STAGED and on disk; the requests waiting for the files of
    `started` (file_id, started_at: every file started in this batch) start, before the links of the staged
    files become COMPLETED; requests with no pending link left DONE, completed when their last file ended.
    With `pinning` (the disk buffer is on) the files' bytes are in the buffer from pinning.now, and each link
    completed holds a pin for its lifetime from then."""
    disk = [] if pinning is None else [(_DISK_NOW, pinning.now)]
    execute_over_rows(session, _files_staged_sql(pinning is not None), _STAGED_COLUMNS, rows, disk)
    requests_started(session, started)
    if not rows:
        return
    request_ids = _requests_waiting_for(session, [row["file_id"] for row in rows])
    pins = (
        []
        if pinning is None
        else [(_NOW_S, pinning.now_s), (_DEFAULT_LIFETIME_S, pinning.default_lifetime_s)]
    )
    execute_over_rows(session, _links_completed_sql(pinning is not None), _STAGED_COLUMNS, rows, pins)
    close_requests_when_done(session, request_ids)


def _requests_waiting_for(session: Session, file_ids: Sequence[int]) -> set[str]:
    """The requests with a pending link to one of these files."""
    pending = L.state == LinkState.PENDING.value
    if postgresql(session):
        ids = any_(bindparam("file_ids", list(file_ids), type_=ARRAY(BigInteger)))
        return set(session.scalars(select(L.request_id).where(L.file_id == ids, pending).distinct()))
    found: set[str] = set()
    for chunk in _chunks(file_ids):
        found.update(session.scalars(select(L.request_id).where(L.file_id.in_(chunk), pending).distinct()))
    return found


def close_requests_when_done(session: Session, request_ids: Collection[str]) -> None:
    """ACTIVE requests with no PENDING link left become DONE, completed when their last link ended."""
    pending = exists().where(L.request_id == StageRequest.id, L.state == LinkState.PENDING.value)
    last_ended = select(func.max(L.finished_at)).where(L.request_id == StageRequest.id).scalar_subquery()
    done: list[str] = []
    for chunk in _chunks(sorted(request_ids)):
        done += session.scalars(
            update(StageRequest)
            .where(StageRequest.id.in_(chunk), StageRequest.state == RequestState.ACTIVE.value, ~pending)
            .values(state=RequestState.DONE.value, completed_at=last_ended)
            .returning(StageRequest.id)
        ).all()
    enqueue_deliveries(session, done)  # their webhooks' notifications, in this same transaction

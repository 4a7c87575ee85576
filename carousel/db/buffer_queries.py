"""The disk buffer's SQL: which files are in it, which are pinned, and the rows of files that leave it.

A file is in the buffer while files.disk_used_at is set (with the buffer on, on_disk follows it). A link pins
its file while it is PENDING or COMPLETED, not released, of a request not DELETED, and its pin_until_s is
after now. Callers own the transaction; nothing here commits.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import NamedTuple, cast

from sqlalchemy import ColumnElement, Table, and_, exists, func, select, update
from sqlalchemy.orm import Session

from carousel.db.models import QueuedFileRow, RequestFile, StageRequest
from carousel.domain.buffer import BufferUsage
from carousel.domain.states import FILE_IN_FLIGHT, FileState, LinkState, RequestState

FILES = cast(Table, QueuedFileRow.__table__)
LINKS = cast(Table, RequestFile.__table__)
REQUESTS = cast(Table, StageRequest.__table__)

PINNING_LINKS = (LinkState.PENDING.value, LinkState.COMPLETED.value)


class ToLand(NamedTuple):
    """What landing needs to know of a file a FILE_STAGED event names."""

    id: int
    path: str
    in_flight: bool
    size_bytes: int | None
    checksum: str | None  # the lookup's, when the library gave one


class InFlight(NamedTuple):
    """A file claimed or handed to the library: where its bytes may already be, and under which batch."""

    id: int
    path: str
    size_bytes: int | None
    checksum: str | None
    batch_key: str | None


class OnDisk(NamedTuple):
    id: int
    path: str
    used_at: datetime
    size_bytes: int
    library: str  # the library the file was read from: it is told of the eviction


def pinned(now_s: int) -> ColumnElement[bool]:
    """The file (a row of FILES) is held by some request's pin at epoch second now_s."""
    return exists().where(
        LINKS.c.file_id == FILES.c.id,
        LINKS.c.state.in_(PINNING_LINKS),
        LINKS.c.released_at.is_(None),
        LINKS.c.pin_until_s > now_s,
        exists().where(REQUESTS.c.id == LINKS.c.request_id, REQUESTS.c.state != RequestState.DELETED.value),
    )


_IN_CHUNK = 2_000  # bound parameters per statement stay well under SQLite's limit


def files_to_land(session: Session, file_ids: Sequence[int]) -> dict[int, ToLand]:
    in_flight = FILES.c.state.in_(sorted(s.value for s in FILE_IN_FLIGHT))
    ids = sorted(set(file_ids))
    found: dict[int, ToLand] = {}
    for start in range(0, len(ids), _IN_CHUNK):
        rows = session.execute(
            select(FILES.c.id, FILES.c.path, in_flight, FILES.c.size_bytes, FILES.c.checksum).where(
                FILES.c.id.in_(ids[start : start + _IN_CHUNK])
            )
        )
        found.update((row[0], ToLand(row[0], row[1], bool(row[2]), row[3], row[4])) for row in rows)
    return found


def in_flight_page(session: Session, after_id: int, limit: int) -> list[InFlight]:
    """Up to `limit` files CLAIMED or SUBMITTED with an id above `after_id`, in id order."""
    rows = session.execute(
        select(FILES.c.id, FILES.c.path, FILES.c.size_bytes, FILES.c.checksum, FILES.c.batch_key)
        .where(FILES.c.state.in_(sorted(s.value for s in FILE_IN_FLIGHT)), FILES.c.id > after_id)
        .order_by(FILES.c.id)
        .limit(limit)
    )
    return [InFlight(*row) for row in rows]


def on_disk_of_path(session: Session, path: str) -> tuple[int, str, bool, str | None] | None:
    """(id, state, in the buffer, checksum) of the file at `path`, or None when carousel does not know it."""
    row = session.execute(
        select(FILES.c.id, FILES.c.state, FILES.c.disk_used_at.is_not(None), FILES.c.checksum).where(
            FILES.c.path == path
        )
    ).first()
    return None if row is None else (row[0], row[1], bool(row[2]), row[3])


def touch(session: Session, file_id: int, now: datetime) -> None:
    """The file's bytes were read: it becomes the most recently used."""
    session.execute(
        update(FILES)
        .where(FILES.c.id == file_id, FILES.c.disk_used_at.is_not(None), FILES.c.disk_used_at < now)
        .values(disk_used_at=now)
    )


# the columns of an OnDisk, in its order
_ON_DISK = (
    FILES.c.id,
    FILES.c.path,
    FILES.c.disk_used_at,
    func.coalesce(FILES.c.size_bytes, 0),
    FILES.c.library,
)


def unpinned_on_disk(session: Session, now_s: int, limit: int) -> list[OnDisk]:
    """Files in the buffer that no pin holds, least recently used first."""
    rows = session.execute(
        select(*_ON_DISK)
        .where(FILES.c.disk_used_at.is_not(None), ~pinned(now_s))
        .order_by(FILES.c.disk_used_at, FILES.c.id)
        .limit(limit)
    )
    return [OnDisk(*row) for row in rows]


def on_disk_page(session: Session, after_id: int, limit: int) -> list[OnDisk]:
    """Files in the buffer in id order after `after_id`: for the check that their bytes are still there."""
    rows = session.execute(
        select(*_ON_DISK)
        .where(FILES.c.disk_used_at.is_not(None), FILES.c.id > after_id)
        .order_by(FILES.c.id)
        .limit(limit)
    )
    return [OnDisk(*row) for row in rows]


def mark_evicted(
    session: Session, files: Sequence[OnDisk], now_s: int, *, unless_pinned: bool
) -> list[OnDisk]:
    """The files leave the buffer (state stays STAGED: "on tape only"; a new request recalls them again).
    A file used since it was read (joined by a request, read by a client: disk_used_at moved) stays, and so
    does a file pinned meanwhile when unless_pinned. Returns those that left."""
    left: list[OnDisk] = []
    for file in files:
        condition: list[ColumnElement[bool]] = [FILES.c.id == file.id, FILES.c.disk_used_at == file.used_at]
        if unless_pinned:
            condition.append(~pinned(now_s))
        result = session.execute(
            update(FILES)
            .where(and_(*condition))
            .values(disk_used_at=None, on_disk=False)
            .returning(FILES.c.id)
        )
        if result.first() is not None:
            left.append(file)
    return left


def mark_missing(session: Session, file_id: int) -> bool:
    """The file's bytes are gone from the buffer behind carousel's back: not on disk any more."""
    result = session.execute(
        update(FILES)
        .where(FILES.c.id == file_id, FILES.c.disk_used_at.is_not(None))
        .values(disk_used_at=None, on_disk=False)
        .returning(FILES.c.id)
    )
    return result.first() is not None


def forget_copies_outside_buffer(session: Session) -> int:
    """With the buffer on, a file is on disk only while its bytes are in the buffer: rows marked on disk from
    before (the buffer off, or a library's own copy) are not. How many were put right."""
    result = session.execute(
        update(FILES).where(FILES.c.on_disk.is_(True), FILES.c.disk_used_at.is_(None)).values(on_disk=False)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def usage(session: Session, now_s: int, libraries: Collection[str]) -> BufferUsage:
    """Bytes in the buffer, pinned among them, and reserved for files in flight in `libraries` (the site's,
    as the settings name them). A file in flight in a library the settings no longer name holds no room: no
    cycle hears of it, so its bytes cannot arrive; it is handed over again, and counts again, once that
    library is named again."""
    size = func.coalesce(func.sum(FILES.c.size_bytes), 0)
    on_disk = FILES.c.disk_used_at.is_not(None)
    total = session.scalar(select(size).where(on_disk)) or 0
    held = session.scalar(select(size).where(on_disk, pinned(now_s))) or 0
    in_flight = FILES.c.state.in_(sorted(s.value for s in FILE_IN_FLIGHT))
    named = FILES.c.library.in_(sorted(libraries))
    reserved = session.scalar(select(size).where(in_flight, named)) or 0
    return BufferUsage(int(total), int(held), int(reserved))


def files_on_disk(session: Session) -> int:
    return int(session.scalar(select(func.count()).where(FILES.c.disk_used_at.is_not(None))) or 0)


def smallest_queued_bytes(session: Session, libraries: Collection[str]) -> int | None:
    """The smallest file queued for one of `libraries` (the site's: a removed library's files are read by no
    cycle): the buffer is full for the queue when less room is left."""
    queued = (FILES.c.state == FileState.QUEUED.value, FILES.c.library.in_(sorted(libraries)))
    size = session.scalar(select(func.min(FILES.c.size_bytes)).where(*queued))
    return None if size is None else int(size)

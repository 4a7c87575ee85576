"""Completion's SQL for many events at once: the common events (a file started, a file on disk) of one batch
of events become a few statements over many rows (executemany, pipelined by psycopg) instead of several round
trips per event. Each statement keeps the guards of its one-row form in carousel.db.completion_queries (the
states a change may start from), so an event that arrives late or twice changes nothing.

Callers own the transaction; nothing here commits.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any

from sqlalchemy import bindparam, exists, func, select, update
from sqlalchemy.orm import Session

from carousel.db.link_start import started_of_ending_recall
from carousel.db.models import Mount, QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.db.state_sets import one_of
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


def _many(session: Session, statement: Any, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        session.connection().execute(statement, list(rows))


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


def recalls_started(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """rows: b_file, b_batch, b_at, b_drive."""
    _many(
        session,
        update(Recall)
        .where(
            Recall.file_id == bindparam("b_file"),
            Recall.batch_key == bindparam("b_batch"),
            Recall.finished_at.is_(None),
        )
        .values(started_at=bindparam("b_at"), drive=bindparam("b_drive")),
        rows,
    )


def files_started(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """rows: b_file, b_at. In-flight files not marked started yet; and the requests waiting for them."""
    _many(
        session,
        update(F)
        .where(F.id == bindparam("b_file"), one_of(F.state, FILE_IN_FLIGHT), F.started_at.is_(None))
        .values(started_at=bindparam("b_at")),
        rows,
    )
    askers = select(L.request_id).where(L.file_id == bindparam("b_file"), L.state == LinkState.PENDING.value)
    _many(
        session,
        update(StageRequest)
        .where(StageRequest.started_at.is_(None), StageRequest.id.in_(askers))
        .values(started_at=bindparam("b_at")),
        rows,
    )


def recalls_finished(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """rows: b_file, b_batch, b_at, b_outcome, b_bytes, b_drive (None keeps the drive), b_reason."""
    _many(
        session,
        update(Recall)
        .where(
            Recall.file_id == bindparam("b_file"),
            Recall.batch_key == bindparam("b_batch"),
            Recall.finished_at.is_(None),
        )
        .values(
            finished_at=bindparam("b_at"),
            outcome=bindparam("b_outcome"),
            bytes=bindparam("b_bytes"),
            reason=bindparam("b_reason"),
            drive=func.coalesce(bindparam("b_drive"), Recall.drive),
        ),
        rows,
    )


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


def files_staged(session: Session, rows: Sequence[dict[str, Any]], pinning: Pinning | None = None) -> None:
    """rows: b_file, b_at, b_checksum (None keeps the file's). In-flight files become STAGED and on disk;
    their pending links COMPLETED; requests with no pending link left DONE, completed when their last file
    ended. With `pinning` (the disk buffer is on) the files' bytes are in the buffer from pinning.now, and
    each link completed holds a pin for its lifetime from then."""
    if not rows:
        return
    in_buffer: dict[str, Any] = {} if pinning is None else {"disk_used_at": pinning.now}
    _many(
        session,
        update(F)
        .where(F.id == bindparam("b_file"), one_of(F.state, STAGE.sources))
        .values(
            state=STAGE.target.value,
            finished_at=bindparam("b_at"),
            error=None,
            on_disk=True,
            checksum=func.coalesce(bindparam("b_checksum"), F.checksum),
            **in_buffer,
        ),
        rows,
    )
    pins: dict[str, Any] = {}
    if pinning is not None:
        pins["pin_until_s"] = pinning.now_s + func.coalesce(L.lifetime_s, pinning.default_lifetime_s)
    _many(
        session,
        update(L)
        .where(L.file_id == bindparam("b_file"), L.state == LinkState.PENDING.value)
        .values(
            state=LinkState.COMPLETED.value,
            error=None,
            finished_at=bindparam("b_at"),
            started_at=started_of_ending_recall(),
            **pins,
        ),
        rows,
    )
    request_ids: set[str] = set()
    for chunk in _chunks([row["b_file"] for row in rows]):
        request_ids.update(session.scalars(select(L.request_id).where(L.file_id.in_(chunk)).distinct()))
    close_requests_when_done(session, request_ids)


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

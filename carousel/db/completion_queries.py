"""Completion's SQL: what the HSM reported, written onto files, links, requests, recalls and mounts.

Every state change names the states it may start from in its WHERE clause, so an event that arrives late or
twice changes nothing. Callers own the transaction; nothing here commits.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from sqlalchemy import ColumnElement, delete, exists, insert, select, tuple_, update
from sqlalchemy.orm import Session

from carousel.db.link_start import started_of_ending_recall
from carousel.db.models import AppliedEvent, Mount, QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.db.state_sets import values
from carousel.db.webhook_queries import enqueue_deliveries
from carousel.domain.completion import FileNow
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.states import REQUEUE, FileMove, FileState, LinkState, RequestState

F = QueuedFileRow

_LINK_FOR_FILE = {
    FileState.STAGED: LinkState.COMPLETED,
    FileState.FAILED: LinkState.FAILED,
    FileState.CANCELLED: LinkState.CANCELLED,
}


# --- idempotence ------------------------------------------------------------------------------------------


def applied_seqs(session: Session, adapter: str, seqs: Collection[int]) -> set[int]:
    if not seqs:
        return set()
    found = session.scalars(
        select(AppliedEvent.seq).where(AppliedEvent.adapter == adapter, AppliedEvent.seq.in_(seqs))
    )
    return set(found)


def record_applied(session: Session, adapter: str, events: Iterable[tuple[int, datetime]]) -> None:
    """Record (seq, event time) pairs of `adapter`'s stream as applied."""
    rows = [{"adapter": adapter, "seq": seq, "event_at": at} for seq, at in events]
    if rows:
        session.execute(insert(AppliedEvent), rows)


def prune_applied(session: Session, before: datetime, limit: int) -> int:
    """Forget up to `limit` applied events that happened before `before`; how many were forgotten."""
    oldest = select(AppliedEvent.adapter, AppliedEvent.seq).where(AppliedEvent.event_at < before).limit(limit)
    result = session.execute(
        delete(AppliedEvent).where(tuple_(AppliedEvent.adapter, AppliedEvent.seq).in_(oldest))
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


# --- files ------------------------------------------------------------------------------------------------


def file_now(session: Session, file_id: int) -> FileNow | None:
    wanted = exists().where(RequestFile.file_id == F.id, RequestFile.state == LinkState.PENDING.value)
    row = session.execute(
        select(F.state, F.batch_key, F.attempts, wanted.label("wanted")).where(F.id == file_id)
    ).first()
    if row is None:
        return None
    return FileNow(
        id=file_id, state=FileState(row[0]), batch_key=row[1], attempts=row[2], wanted=bool(row[3])
    )


def finish_file(
    session: Session,
    file_id: int,
    move: FileMove,
    at: datetime,
    *,
    error: str | None = None,
    attempts: int | None = None,
) -> bool:
    """Ends a recall by `move` (to STAGED, FAILED or CANCELLED) and gives every waiting requester the same
    answer. Returns False when the file was no longer in one of the move's sources (nothing changed)."""
    outcome = move.target
    columns: dict[str, object] = {"state": outcome.value, "finished_at": at, "error": error}
    if outcome is FileState.STAGED:
        columns["on_disk"] = True
    if attempts is not None:
        columns["attempts"] = attempts
    changed = session.execute(
        update(F).where(F.id == file_id, F.state.in_(values(move.sources))).values(**columns)
    ).rowcount  # type: ignore[attr-defined]
    if not changed:
        return False
    finish_links(session, file_id, _LINK_FOR_FILE[outcome], at, error)
    return True


def finish_links(
    session: Session, file_id: int, link_state: LinkState, at: datetime, error: str | None
) -> None:
    """Copies a recall's outcome onto the links still following it, then closes requests left with none."""
    request_ids = session.scalars(
        update(RequestFile)
        .where(RequestFile.file_id == file_id, RequestFile.state == LinkState.PENDING.value)
        .values(state=link_state.value, error=error, finished_at=at, started_at=started_of_ending_recall())
        .returning(RequestFile.request_id)
    ).all()
    close_finished_requests(session, set(request_ids), at)


def close_finished_requests(session: Session, request_ids: Collection[str], at: datetime) -> None:
    if not request_ids:
        return
    pending = exists().where(
        RequestFile.request_id == StageRequest.id, RequestFile.state == LinkState.PENDING.value
    )
    done = session.scalars(
        update(StageRequest)
        .where(
            StageRequest.id.in_(request_ids),
            StageRequest.state == RequestState.ACTIVE.value,
            ~pending,
        )
        .values(state=RequestState.DONE.value, completed_at=at)
        .returning(StageRequest.id)
    ).all()
    enqueue_deliveries(session, done)  # their webhooks' notifications, in this same transaction


def requeue_for_retry(
    session: Session, file_id: int, *, attempts: int, not_before: datetime | None, error: str | None
) -> bool:
    """Back to the queue after a failed or interrupted read; not_before keeps it off the current mount."""
    changed = session.execute(
        update(F)
        .where(F.id == file_id, F.state.in_(values(REQUEUE.sources)))
        .values(
            state=REQUEUE.target.value,
            attempts=attempts,
            not_before=not_before,
            error=error,
            batch_key=None,
            claimed_at=None,
            submitted_at=None,
            started_at=None,
        )
    ).rowcount  # type: ignore[attr-defined]
    return bool(changed)


# --- recalls ----------------------------------------------------------------------------------------------


def recall_finished(
    session: Session,
    file_id: int,
    batch_key: str,
    *,
    at: datetime,
    outcome: FileState,
    bytes_read: int,
    drive: str | None,
    reason: str | None,
) -> None:
    values: dict[str, object] = {
        "finished_at": at,
        "outcome": outcome.value,
        "bytes": bytes_read,
        "reason": reason,
    }
    if drive is not None:
        values["drive"] = drive
    session.execute(
        update(Recall)
        .where(Recall.file_id == file_id, Recall.batch_key == batch_key, Recall.finished_at.is_(None))
        .values(**values)
    )


# --- mounts -----------------------------------------------------------------------------------------------


def _open_mount(tape: str, drive: str | None, library: str) -> list[ColumnElement[bool]]:
    clauses: list[ColumnElement[bool]] = [
        Mount.library == library,
        Mount.tape == tape,
        Mount.unmounted_at.is_(None),
    ]
    if drive is not None:
        clauses.append(Mount.drive == drive)
    return clauses


def mount_opened(
    session: Session, tape: str, drive: str | None, at: datetime, *, library: str = DEFAULT_LIBRARY
) -> None:
    session.execute(
        insert(Mount).values(tape=tape, library=library, drive=drive, mounted_at=at, files=0, bytes=0)
    )


def mount_closed(
    session: Session, tape: str, drive: str | None, at: datetime, *, library: str = DEFAULT_LIBRARY
) -> None:
    session.execute(update(Mount).where(*_open_mount(tape, drive, library)).values(unmounted_at=at))

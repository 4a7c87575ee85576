"""The SQL of tapes and drives as operators set them: tape states (with the library's count of failed mounts),
the states admins want drives in, and the audit trail of both.

Callers own the transaction; nothing here commits.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from carousel.db.completion_queries import finish_file
from carousel.db.lock_order import lock_links_and_files
from carousel.db.models import DriveStateRow, MediaAudit, QueuedFileRow, TapeStateRow
from carousel.domain.media import (
    HELD_STATES,
    DownMode,
    DriveState,
    DriveStatus,
    MediaAuditEntry,
    MediaKind,
    TapeState,
    TapeStatus,
    held_words,
)
from carousel.domain.states import TAPE_BROKEN, FileState

F = QueuedFileRow


# --- tapes ----------------------------------------------------------------------------------------------


def tape_row(session: Session, tape: str, *, for_update: bool = False) -> TapeStateRow | None:
    """The tape's row (None: it was never changed, so it is active). `for_update` makes two changes of one
    tape take turns (PostgreSQL; SQLite has one writer at a time anyway)."""
    statement = select(TapeStateRow).where(TapeStateRow.tape == tape)
    if for_update:
        statement = statement.with_for_update()
    return session.scalars(statement).one_or_none()


def tape_status(session: Session, tape: str) -> TapeStatus:
    row = tape_row(session, tape)
    return _status(row) if row is not None else TapeStatus(tape, TapeState.ACTIVE, None, None, None)


def tape_in_queue(session: Session, tape: str) -> bool:
    """Whether any file the service was asked for is on this tape (in any state)."""
    return session.scalar(select(F.id).where(F.tape == tape).limit(1)) is not None


def files_by_state(session: Session, tape: str) -> dict[str, int]:
    rows = session.execute(select(F.state, func.count()).where(F.tape == tape).group_by(F.state))
    return {state: count for state, count in rows}


def save_tape_state(
    session: Session, tape: str, state: TapeState, *, reason: str, at: datetime, who: str
) -> None:
    """Sets the tape's state; back to active, its count of failed mounts starts again."""
    row = tape_row(session, tape)
    if row is None:
        row = TapeStateRow(tape=tape, failed_mounts=0)
        session.add(row)
    row.state, row.reason, row.changed_at, row.changed_by = state.value, reason, at, who
    if state is TapeState.ACTIVE:
        row.failed_mounts = 0
    session.flush()


def tape_statuses(session: Session) -> list[TapeStatus]:
    """Every tape whose state was ever set or that failed a mount, by name."""
    return [_status(row) for row in session.scalars(select(TapeStateRow).order_by(TapeStateRow.tape))]


def held_tapes(session: Session) -> dict[str, str]:
    """Tapes the plan leaves out (disabled, broken), with the words their waiting files give."""
    rows = session.execute(
        select(TapeStateRow.tape, TapeStateRow.state, TapeStateRow.reason).where(
            TapeStateRow.state.in_(HELD_STATES)
        )
    )
    return {tape: held_words(TapeState(state), reason) for tape, state, reason in rows}


def broken_tapes(session: Session) -> dict[str, str | None]:
    rows = session.execute(
        select(TapeStateRow.tape, TapeStateRow.reason).where(TapeStateRow.state == TapeState.BROKEN.value)
    )
    return dict(rows.all())


def queued_on(session: Session, tapes: Collection[str]) -> list[tuple[int, str, str]]:
    """(file id, path, tape) of the queued files of these tapes."""
    if not tapes:
        return []
    rows = session.execute(
        select(F.id, F.path, F.tape).where(F.tape.in_(list(tapes)), F.state == FileState.QUEUED.value)
    )
    return [(file_id, path, tape) for file_id, path, tape in rows if tape is not None]


def waiting_at_library(session: Session, limit: int, library: str | None = None) -> list[int]:
    """Files of held tapes handed to the library and not started there: to take back before it mounts the
    tape for them. With `library`, that library's files only (its adapter is the one asked)."""
    held = select(TapeStateRow.tape).where(TapeStateRow.state.in_(HELD_STATES))
    query = select(F.id).where(F.state == FileState.SUBMITTED.value, F.started_at.is_(None), F.tape.in_(held))
    if library is not None:
        query = query.where(F.library == library)
    return list(session.scalars(query.order_by(F.id).limit(limit)))


def fail_queued(session: Session, reasons: Mapping[int, str], at: datetime) -> int:
    """QUEUED -> FAILED for these files (file id -> its reason, for every requester); returns how many
    changed."""
    lock_links_and_files(session, list(reasons))
    failed = 0
    for file_id in sorted(reasons):
        failed += finish_file(session, file_id, TAPE_BROKEN, at, error=reasons[file_id])
    return failed


def count_failed_mount(session: Session, tape: str) -> int:
    """One more failed mount of `tape` in a row; returns the count."""
    row = tape_row(session, tape, for_update=True)
    if row is None:
        row = TapeStateRow(tape=tape, state=TapeState.ACTIVE.value, failed_mounts=0)
        session.add(row)
    row.failed_mounts += 1
    session.flush()
    return row.failed_mounts


def count_good_mount(session: Session, tape: str) -> None:
    """The tape mounted: its failed mounts are no longer in a row."""
    row = tape_row(session, tape)
    if row is not None and row.failed_mounts:
        row.failed_mounts = 0
        session.flush()


def _status(row: TapeStateRow) -> TapeStatus:
    return TapeStatus(
        tape=row.tape,
        state=TapeState(row.state),
        reason=row.reason,
        changed_at=row.changed_at,
        changed_by=row.changed_by,
        failed_mounts=row.failed_mounts,
    )


# --- drives ---------------------------------------------------------------------------------------------


def drive_row(session: Session, drive: str, *, for_update: bool = False) -> DriveStateRow | None:
    statement = select(DriveStateRow).where(DriveStateRow.drive == drive)
    if for_update:
        statement = statement.with_for_update()
    return session.scalars(statement).one_or_none()


def drive_status(session: Session, drive: str) -> DriveStatus:
    row = drive_row(session, drive)
    return _drive(row) if row is not None else DriveStatus(drive, DriveState.UP, None, None, None, None)


def drive_statuses(session: Session) -> dict[str, DriveStatus]:
    """Every drive whose state an admin set, by name (the others are up)."""
    return {
        row.drive: _drive(row) for row in session.scalars(select(DriveStateRow).order_by(DriveStateRow.drive))
    }


def save_drive_state(
    session: Session,
    drive: str,
    state: DriveState,
    mode: DownMode | None,
    *,
    reason: str,
    at: datetime,
    who: str,
) -> None:
    row = drive_row(session, drive)
    if row is None:
        row = DriveStateRow(drive=drive)
        session.add(row)
    row.state, row.mode = state.value, mode.value if mode is not None else None
    row.reason, row.changed_at, row.changed_by = reason, at, who
    session.flush()


def _drive(row: DriveStateRow) -> DriveStatus:
    return DriveStatus(
        drive=row.drive,
        state=DriveState(row.state),
        mode=DownMode(row.mode) if row.mode is not None else None,
        reason=row.reason,
        changed_at=row.changed_at,
        changed_by=row.changed_by,
    )


# --- the audit trail ------------------------------------------------------------------------------------


def add_media_audit(
    session: Session,
    *,
    at: datetime,
    who: str,
    kind: MediaKind,
    name: str,
    old_state: str,
    new_state: str,
    reason: str,
) -> MediaAuditEntry:
    row = MediaAudit(
        at=at, who=who, kind=kind.value, name=name, old_state=old_state, new_state=new_state, reason=reason
    )
    session.add(row)
    session.flush()
    return _entry(row)


def media_audit(
    session: Session, *, limit: int, before_id: int | None = None, kind: MediaKind | None = None
) -> list[MediaAuditEntry]:
    """Newest first; `before_id` pages back from an entry."""
    statement = select(MediaAudit).order_by(MediaAudit.id.desc()).limit(limit)
    if before_id is not None:
        statement = statement.where(MediaAudit.id < before_id)
    if kind is not None:
        statement = statement.where(MediaAudit.kind == kind.value)
    return [_entry(row) for row in session.scalars(statement)]


def _entry(row: MediaAudit) -> MediaAuditEntry:
    return MediaAuditEntry(
        id=row.id,
        at=row.at,
        who=row.who,
        kind=MediaKind(row.kind),
        name=row.name,
        old_state=row.old_state,
        new_state=row.new_state,
        reason=row.reason,
    )

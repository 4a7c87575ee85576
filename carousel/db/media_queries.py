"""The SQL of tapes and drives as operators set them: tape states (with the library's count of failed mounts),
the states admins want drives in, and the audit trail of both.

A tape is (library, tape) and a drive (library, drive) (docs/decisions.md §17): every read and write names
the library. Callers own the transaction; nothing here commits.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from sqlalchemy import ColumnElement, and_, exists, func, select, update
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


TapeKey = tuple[str, str]  # (library, tape)


def tape_row(session: Session, library: str, tape: str, *, for_update: bool = False) -> TapeStateRow | None:
    """The tape's row (None: it was never changed, so it is active). `for_update` makes two changes of one
    tape take turns (PostgreSQL; SQLite has one writer at a time anyway)."""
    statement = select(TapeStateRow).where(TapeStateRow.library == library, TapeStateRow.tape == tape)
    if for_update:
        statement = statement.with_for_update()
    return session.scalars(statement).one_or_none()


def tape_status(session: Session, library: str, tape: str) -> TapeStatus:
    row = tape_row(session, library, tape)
    if row is None:
        return TapeStatus(tape, TapeState.ACTIVE, None, None, None, library=library)
    return _status(row)


def tape_in_queue(session: Session, library: str, tape: str) -> bool:
    """Whether any file the service was asked for is on this tape (in any state)."""
    found = select(F.id).where(F.library == library, F.tape == tape).limit(1)
    return session.scalar(found) is not None


def files_by_state(session: Session, library: str, tape: str) -> dict[str, int]:
    rows = session.execute(
        select(F.state, func.count()).where(F.library == library, F.tape == tape).group_by(F.state)
    )
    return {state: count for state, count in rows}


def save_tape_state(
    session: Session, library: str, tape: str, state: TapeState, *, reason: str, at: datetime, who: str
) -> None:
    """Sets the tape's state; back to active, its count of failed mounts starts again."""
    row = tape_row(session, library, tape)
    if row is None:
        row = TapeStateRow(library=library, tape=tape, failed_mounts=0)
        session.add(row)
    row.state, row.reason, row.changed_at, row.changed_by = state.value, reason, at, who
    if state is TapeState.ACTIVE:
        row.failed_mounts = 0
    session.flush()


def tape_statuses(session: Session, library: str | None = None) -> list[TapeStatus]:
    """Every tape whose state was ever set or that failed a mount, by library and name (`library`: its
    tapes only)."""
    statement = select(TapeStateRow).order_by(TapeStateRow.library, TapeStateRow.tape)
    if library is not None:
        statement = statement.where(TapeStateRow.library == library)
    return [_status(row) for row in session.scalars(statement)]


def libraries_with_state(session: Session, tape: str) -> list[str]:
    """The libraries where a tape of this name has a recorded state."""
    found = select(TapeStateRow.library).where(TapeStateRow.tape == tape)
    return list(session.scalars(found))


def libraries_with_files(session: Session, tape: str) -> list[str]:
    """The libraries where a file the service was asked for is on a tape of this name."""
    return list(session.scalars(select(F.library).where(F.tape == tape).distinct()))


def held_tapes(session: Session, library: str | None = None) -> dict[str, str]:
    """Tapes the plan leaves out (disabled, broken), with the words their waiting files give: `library`'s
    (None: every library's, the same name in two taken as one)."""
    statement = select(TapeStateRow.tape, TapeStateRow.state, TapeStateRow.reason).where(
        TapeStateRow.state.in_(HELD_STATES)
    )
    if library is not None:
        statement = statement.where(TapeStateRow.library == library)
    return {tape: held_words(TapeState(state), reason) for tape, state, reason in session.execute(statement)}


def held_tape_statuses(session: Session, limit: int) -> tuple[list[TapeStatus], int]:
    """The latest `limit` tapes held back (disabled, broken), most recently changed first, and how many are
    held in all: what the dashboard shows operators."""
    held = TapeStateRow.state.in_(HELD_STATES)
    statement = (
        select(TapeStateRow)
        .where(held)
        .order_by(TapeStateRow.changed_at.desc(), TapeStateRow.library, TapeStateRow.tape)
        .limit(limit)
    )
    total = session.scalar(select(func.count()).select_from(TapeStateRow).where(held)) or 0
    return [_status(row) for row in session.scalars(statement)], total


def drives_down(session: Session) -> list[DriveStatus]:
    """Every drive an admin took down, by library and name."""
    statement = (
        select(DriveStateRow)
        .where(DriveStateRow.state != DriveState.UP.value)
        .order_by(DriveStateRow.library, DriveStateRow.drive)
    )
    return [_drive(row) for row in session.scalars(statement)]


def on_held_tape() -> ColumnElement[bool]:
    """A file's (library, tape) is held (disabled or broken): the claim's and the take-back's filter."""
    return exists().where(
        and_(
            TapeStateRow.library == F.library,
            TapeStateRow.tape == F.tape,
            TapeStateRow.state.in_(HELD_STATES),
        )
    )


def held_tape_states(session: Session) -> dict[TapeKey, TapeState]:
    """(library, tape) -> the state, of every library's held tapes (disabled, broken): what the site's lookup
    weighs when it chooses among a path's copies."""
    statement = select(TapeStateRow.library, TapeStateRow.tape, TapeStateRow.state).where(
        TapeStateRow.state.in_(HELD_STATES)
    )
    return {(lib, tape): TapeState(state) for lib, tape, state in session.execute(statement)}


def broken_tapes(session: Session, library: str | None = None) -> dict[TapeKey, str | None]:
    """(library, tape) -> the reason, of broken tapes (`library`: its own only)."""
    statement = select(TapeStateRow.library, TapeStateRow.tape, TapeStateRow.reason).where(
        TapeStateRow.state == TapeState.BROKEN.value
    )
    if library is not None:
        statement = statement.where(TapeStateRow.library == library)
    return {(lib, tape): reason for lib, tape, reason in session.execute(statement)}


def queued_on(
    session: Session, tapes: Collection[TapeKey], limit: int | None = None
) -> list[tuple[int, str, str, str]]:
    """(file id, path, library, tape) of the queued files of these tapes (at most `limit`)."""
    found: list[tuple[int, str, str, str]] = []
    for library in sorted({lib for lib, _ in tapes}):
        names = sorted(tape for lib, tape in tapes if lib == library)
        left = None if limit is None else limit - len(found)
        if left is not None and left <= 0:
            break
        rows = session.execute(
            select(F.id, F.path, F.tape)
            .where(F.library == library, F.tape.in_(names), F.state == FileState.QUEUED.value)
            .order_by(F.id)
            .limit(left)
        )
        found.extend((file_id, path, library, tape) for file_id, path, tape in rows if tape is not None)
    return found


def waiting_at_library(session: Session, limit: int, library: str | None = None) -> list[int]:
    """Files of held tapes handed to the library and not started there: to take back before it mounts the
    tape for them. With `library`, that library's files only (its adapter is the one asked)."""
    query = select(F.id).where(F.state == FileState.SUBMITTED.value, F.started_at.is_(None), on_held_tape())
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


def move_to_copy(
    session: Session, file_id: int, *, library: str, tape: str, position_bytes: int, size_bytes: int
) -> int:
    """A queued file of a broken tape read from another copy instead: its library, tape and position, as a
    lookup writes them (the tape queues follow by their triggers). Returns 1 when it moved."""
    result = session.execute(
        update(F)
        .where(F.id == file_id, F.state == FileState.QUEUED.value)
        .values(library=library, tape=tape, position_bytes=position_bytes, size_bytes=size_bytes)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def count_failed_mount(session: Session, library: str, tape: str) -> int:
    """One more failed mount of `tape` in a row; returns the count."""
    row = tape_row(session, library, tape, for_update=True)
    if row is None:
        row = TapeStateRow(library=library, tape=tape, state=TapeState.ACTIVE.value, failed_mounts=0)
        session.add(row)
    row.failed_mounts += 1
    session.flush()
    return row.failed_mounts


def count_good_mount(session: Session, library: str, tape: str) -> None:
    """The tape mounted: its failed mounts are no longer in a row."""
    row = tape_row(session, library, tape)
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
        library=row.library,
    )


# --- drives ---------------------------------------------------------------------------------------------


def drive_row(
    session: Session, library: str, drive: str, *, for_update: bool = False
) -> DriveStateRow | None:
    statement = select(DriveStateRow).where(DriveStateRow.library == library, DriveStateRow.drive == drive)
    if for_update:
        statement = statement.with_for_update()
    return session.scalars(statement).one_or_none()


def drive_status(session: Session, library: str, drive: str) -> DriveStatus:
    row = drive_row(session, library, drive)
    if row is None:
        return DriveStatus(drive, DriveState.UP, None, None, None, None, library=library)
    return _drive(row)


def drive_statuses(session: Session, library: str) -> dict[str, DriveStatus]:
    """Every drive of `library` whose state an admin set, by name (the others are up)."""
    statement = select(DriveStateRow).where(DriveStateRow.library == library).order_by(DriveStateRow.drive)
    return {row.drive: _drive(row) for row in session.scalars(statement)}


def save_drive_state(
    session: Session,
    library: str,
    drive: str,
    state: DriveState,
    mode: DownMode | None,
    *,
    reason: str,
    at: datetime,
    who: str,
) -> None:
    row = drive_row(session, library, drive)
    if row is None:
        row = DriveStateRow(library=library, drive=drive)
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
        library=row.library,
    )


# --- the audit trail ------------------------------------------------------------------------------------


def add_media_audit(
    session: Session,
    *,
    at: datetime,
    who: str,
    kind: MediaKind,
    library: str,
    name: str,
    old_state: str,
    new_state: str,
    reason: str,
) -> MediaAuditEntry:
    row = MediaAudit(
        at=at,
        who=who,
        kind=kind.value,
        library=library,
        name=name,
        old_state=old_state,
        new_state=new_state,
        reason=reason,
    )
    session.add(row)
    session.flush()
    return _entry(row)


def media_audit(
    session: Session,
    *,
    limit: int,
    before_id: int | None = None,
    kind: MediaKind | None = None,
    library: str | None = None,
) -> list[MediaAuditEntry]:
    """Newest first; `before_id` pages back from an entry; `library`: its tapes' and drives' only."""
    statement = select(MediaAudit).order_by(MediaAudit.id.desc()).limit(limit)
    if before_id is not None:
        statement = statement.where(MediaAudit.id < before_id)
    if kind is not None:
        statement = statement.where(MediaAudit.kind == kind.value)
    if library is not None:
        statement = statement.where(MediaAudit.library == library)
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
        library=row.library,
    )

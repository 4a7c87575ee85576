"""A drive taken down (after its current mount, or at once) and up again. The change is recorded here,
audited in the same transaction; the leading scheduler hands it to the library's adapter at its next cycle
(carousel.scheduler.media_states), and the library's capacity then counts the drive out (or in again).

Which drives exist: those each library's adapter names (`ControlsDrives.drive_names`). An adapter that
cannot take drives down names none, and every drive is then a 404. A drive is (library, drive): libraries
may name their drives alike, and naming such a drive then needs the library
(carousel.media_admin.libraries).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from carousel.db import media_queries as m
from carousel.domain.clock import Clock
from carousel.domain.errors import Conflict, InvalidInput, NotFound
from carousel.domain.media import (
    DownMode,
    DriveState,
    DriveStatus,
    MediaAuditEntry,
    MediaKind,
    drive_change_fault,
)
from carousel.media_admin.checks import checked_name, checked_reason
from carousel.media_admin.libraries import known_library, library_of, site_libraries
from hsm_adapters.base import ControlsDrives, HsmAdapter


@dataclass(frozen=True, slots=True)
class DriveChanged:
    status: DriveStatus
    audit: MediaAuditEntry


def drive_names(adapter: HsmAdapter | None) -> tuple[str, ...]:
    return adapter.drive_names() if isinstance(adapter, ControlsDrives) else ()


def known_drive(adapter: HsmAdapter | None, drive: str, library: str | None = None) -> str:
    """The library of the drive, checked; NotFound (field `drive`) for a drive no library names."""
    checked_name(drive, "drive")
    libraries = site_libraries(adapter)
    try:
        return library_of(
            libraries, library, "drive", drive, lambda name: drive in drive_names(libraries[name])
        )
    except NotFound as exc:
        if exc.field != "drive":
            raise
        names = [n for each in libraries.values() for n in drive_names(each)]
        known = f"its drives are {', '.join(names)}" if names else "carousel can take none of its drives down"
        raise NotFound(f"{exc}: {known}", field="drive") from exc


def list_drives(
    session: Session, adapter: HsmAdapter | None, library: str | None = None
) -> list[DriveStatus]:
    """Every drive of the site's libraries (or of `library`), as admins want it (up unless taken down)."""
    libraries = site_libraries(adapter)
    if library is not None:
        known_library(libraries, library)
    listed: list[DriveStatus] = []
    for name, each in libraries.items():
        if library is not None and name != library:
            continue
        wanted = m.drive_statuses(session, name)
        listed.extend(
            wanted.get(drive) or m.drive_status(session, name, drive) for drive in drive_names(each)
        )
    return listed


def change_drive(
    session: Session,
    adapter: HsmAdapter | None,
    clock: Clock,
    *,
    drive: str,
    state: DriveState,
    mode: DownMode | None,
    reason: str,
    who: str,
    library: str | None = None,
) -> DriveChanged:
    where = known_drive(adapter, drive, library)
    if state is DriveState.UP and mode is not None:
        raise InvalidInput("a drive comes up one way: `mode` is for taking it down", field="mode")
    why = checked_reason(reason)
    m.drive_row(session, where, drive, for_update=True)
    old = m.drive_status(session, where, drive)
    fault = drive_change_fault(old.state, state)
    if fault is not None:
        raise Conflict(f"{fault}: nothing changed", field="state")
    down_mode = (mode or DownMode.AFTER_MOUNT) if state is DriveState.DOWN else None
    now = clock.now()
    m.save_drive_state(session, where, drive, state, down_mode, reason=why, at=now, who=who)
    new_words = state.value if down_mode is None else f"{state.value} ({down_mode.value})"
    entry = m.add_media_audit(
        session,
        at=now,
        who=who,
        kind=MediaKind.DRIVE,
        library=where,
        name=drive,
        old_state=old.state.value,
        new_state=new_words,
        reason=why,
    )
    return DriveChanged(m.drive_status(session, where, drive), entry)

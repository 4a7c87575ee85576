"""A drive taken down (after its current mount, or at once) and up again. The change is recorded here,
audited in the same transaction; the leading scheduler hands it to the library's adapter at its next cycle
(carousel.scheduler.media_states), and the library's capacity then counts the drive out (or in again).

Which drives exist: those the adapter names (`ControlsDrives.drive_names`). An adapter that cannot take
drives down names none, and every drive is then a 404.
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
from hsm_adapters.base import ControlsDrives, HsmAdapter


@dataclass(frozen=True, slots=True)
class DriveChanged:
    status: DriveStatus
    audit: MediaAuditEntry


def drive_names(adapter: HsmAdapter | None) -> tuple[str, ...]:
    return adapter.drive_names() if isinstance(adapter, ControlsDrives) else ()


def known_drive(adapter: HsmAdapter | None, drive: str) -> str:
    checked_name(drive, "drive")
    names = drive_names(adapter)
    if drive not in names:
        known = f"its drives are {', '.join(names)}" if names else "carousel can take none of its drives down"
        raise NotFound(f"the library has no drive {drive!r}: {known}", field="drive")
    return drive


def list_drives(session: Session, adapter: HsmAdapter | None) -> list[DriveStatus]:
    """Every drive of the library, as admins want it (up unless taken down)."""
    wanted = m.drive_statuses(session)
    return [wanted.get(name) or m.drive_status(session, name) for name in drive_names(adapter)]


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
) -> DriveChanged:
    known_drive(adapter, drive)
    if state is DriveState.UP and mode is not None:
        raise InvalidInput("a drive comes up one way: `mode` is for taking it down", field="mode")
    why = checked_reason(reason)
    m.drive_row(session, drive, for_update=True)
    old = m.drive_status(session, drive)
    fault = drive_change_fault(old.state, state)
    if fault is not None:
        raise Conflict(f"{fault}: nothing changed", field="state")
    down_mode = (mode or DownMode.AFTER_MOUNT) if state is DriveState.DOWN else None
    now = clock.now()
    m.save_drive_state(session, drive, state, down_mode, reason=why, at=now, who=who)
    new_words = state.value if down_mode is None else f"{state.value} ({down_mode.value})"
    entry = m.add_media_audit(
        session,
        at=now,
        who=who,
        kind=MediaKind.DRIVE,
        name=drive,
        old_state=old.state.value,
        new_state=new_words,
        reason=why,
    )
    return DriveChanged(m.drive_status(session, drive), entry)

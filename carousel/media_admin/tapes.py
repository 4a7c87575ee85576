"""A tape's state read and changed: disabled (its files wait, nothing mounts it), broken (its queued files
fail with the reason, from the next cycle on) or active again. Every change is audited in the transaction
that makes it; a change to the state the tape is in already is refused (409), as contradictory.

Which tapes exist: those the queue has files of, those whose state was ever recorded, and those the library
says it holds (an adapter that `KnowsTapes`). Any other name is a 404: a tape in no library. A tape is
(library, tape): the same ID in two libraries is two tapes, and naming it then needs the library
(carousel.media_admin.libraries).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from carousel.db import media_queries as m
from carousel.domain.clock import Clock
from carousel.domain.errors import Conflict, NotFound
from carousel.domain.media import MediaAuditEntry, MediaKind, TapeState, TapeStatus, tape_change_fault
from carousel.media_admin.checks import checked_name, checked_reason
from carousel.media_admin.libraries import known_library, library_of, site_libraries
from hsm_adapters.base import HsmAdapter, KnowsTapes


@dataclass(frozen=True, slots=True)
class TapeView:
    status: TapeStatus
    files: dict[str, int]  # the service's files on the tape, by state


@dataclass(frozen=True, slots=True)
class TapeChanged:
    status: TapeStatus
    audit: MediaAuditEntry


def known_tape(session: Session, adapter: HsmAdapter | None, tape: str, library: str | None = None) -> str:
    """The library of the tape, checked (see carousel.media_admin.libraries); NotFound (field `tape`) for one
    neither the queue nor the library knows."""
    checked_name(tape, "tape")
    libraries = site_libraries(adapter)

    def holds(name: str) -> bool:
        if m.tape_row(session, name, tape) is not None or m.tape_in_queue(session, name, tape):
            return True
        each = libraries[name]
        return isinstance(each, KnowsTapes) and each.knows_tape(tape)

    try:
        return library_of(libraries, library, "tape", tape, holds)
    except NotFound as exc:
        if exc.field != "tape":
            raise
        if library is not None:
            holds_it = f"library {library} does not hold it"
        elif len(libraries) == 1:
            holds_it = "the library does not hold it"
        else:
            holds_it = "no library of the site holds it"
        raise NotFound(f"no tape {tape!r}: no file of it was asked for and {holds_it}", field="tape") from exc


def show_tape(
    session: Session, adapter: HsmAdapter | None, tape: str, library: str | None = None
) -> TapeView:
    where = known_tape(session, adapter, tape, library)
    return TapeView(m.tape_status(session, where, tape), m.files_by_state(session, where, tape))


def list_tapes(session: Session, adapter: HsmAdapter | None, library: str | None = None) -> list[TapeStatus]:
    """Tapes whose state was ever set (or whose mounts failed), by library; every other tape is active."""
    if library is not None:
        known_library(site_libraries(adapter), library)
    return m.tape_statuses(session, library)


def change_tape(
    session: Session,
    adapter: HsmAdapter | None,
    clock: Clock,
    *,
    tape: str,
    state: TapeState,
    reason: str,
    who: str,
    library: str | None = None,
) -> TapeChanged:
    where = known_tape(session, adapter, tape, library)
    why = checked_reason(reason)
    m.tape_row(session, where, tape, for_update=True)  # two changes of one tape take turns
    old = m.tape_status(session, where, tape)
    fault = tape_change_fault(old.state, state)
    if fault is not None:
        raise Conflict(f"{fault}: nothing changed", field="state")
    now = clock.now()
    m.save_tape_state(session, where, tape, state, reason=why, at=now, who=who)
    entry = m.add_media_audit(
        session,
        at=now,
        who=who,
        kind=MediaKind.TAPE,
        library=where,
        name=tape,
        old_state=old.state.value,
        new_state=state.value,
        reason=why,
    )
    return TapeChanged(m.tape_status(session, where, tape), entry)

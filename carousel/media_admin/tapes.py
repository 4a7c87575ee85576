"""A tape's state read and changed: disabled (its files wait, nothing mounts it), broken (its queued files
fail with the reason, from the next cycle on) or active again. Every change is audited in the transaction
that makes it; a change to the state the tape is in already is refused (409), as contradictory.

Which tapes exist: those the queue has files of, those whose state was ever recorded, and those the library
says it holds (an adapter that `KnowsTapes`). Any other name is a 404: a tape in no library.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from carousel.db import media_queries as m
from carousel.domain.clock import Clock
from carousel.domain.errors import Conflict, NotFound
from carousel.domain.media import MediaAuditEntry, MediaKind, TapeState, TapeStatus, tape_change_fault
from carousel.media_admin.checks import checked_name, checked_reason
from hsm_adapters.base import HsmAdapter, KnowsTapes


@dataclass(frozen=True, slots=True)
class TapeView:
    status: TapeStatus
    files: dict[str, int]  # the service's files on the tape, by state


@dataclass(frozen=True, slots=True)
class TapeChanged:
    status: TapeStatus
    audit: MediaAuditEntry


def known_tape(session: Session, adapter: HsmAdapter | None, tape: str) -> str:
    """The tape's name, checked; NotFound (field `tape`) for one neither the queue nor the library knows."""
    checked_name(tape, "tape")
    if m.tape_row(session, tape) is not None or m.tape_in_queue(session, tape):
        return tape
    if isinstance(adapter, KnowsTapes) and adapter.knows_tape(tape):
        return tape
    raise NotFound(
        f"no tape {tape!r}: no file of it was asked for and the library does not hold it", field="tape"
    )


def show_tape(session: Session, adapter: HsmAdapter | None, tape: str) -> TapeView:
    known_tape(session, adapter, tape)
    return TapeView(m.tape_status(session, tape), m.files_by_state(session, tape))


def list_tapes(session: Session) -> list[TapeStatus]:
    """Tapes whose state was ever set (or whose mounts failed); every other tape is active."""
    return m.tape_statuses(session)


def change_tape(
    session: Session,
    adapter: HsmAdapter | None,
    clock: Clock,
    *,
    tape: str,
    state: TapeState,
    reason: str,
    who: str,
) -> TapeChanged:
    known_tape(session, adapter, tape)
    why = checked_reason(reason)
    m.tape_row(session, tape, for_update=True)  # two changes of one tape take turns
    old = m.tape_status(session, tape)
    fault = tape_change_fault(old.state, state)
    if fault is not None:
        raise Conflict(f"{fault}: nothing changed", field="state")
    now = clock.now()
    m.save_tape_state(session, tape, state, reason=why, at=now, who=who)
    entry = m.add_media_audit(
        session,
        at=now,
        who=who,
        kind=MediaKind.TAPE,
        name=tape,
        old_state=old.state.value,
        new_state=state.value,
        reason=why,
    )
    return TapeChanged(m.tape_status(session, tape), entry)

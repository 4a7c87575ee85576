"""What each library of a site has queued, for the lookup's choice of copy (hsm_adapters.site), and what
waits for a library the settings no longer name, for the warning at start (carousel.cli.strays).

Read from the tape queues as the scheduler's last fold left them: one row per tape and group, no `files`
scan, at most a cycle behind. Callers own the transaction.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import case, func, select, union_all
from sqlalchemy.orm import Session

from carousel.db.models import TapeQueue, TapeQueueDelta, TapeQueueKind


def queued_bytes_by_library(session: Session) -> dict[str, int]:
    rows = session.execute(
        select(TapeQueue.library, func.sum(TapeQueue.bytes))
        .where(TapeQueue.kind == TapeQueueKind.QUEUED.value)
        .group_by(TapeQueue.library)
    )
    return {library: int(total or 0) for library, total in rows}


@dataclass(frozen=True, slots=True)
class StrandedWork:
    """Files whose row names a library the settings no longer name (an admin removed it while they waited):
    queued for it or handed over to it, they wait for nothing, since each library's cycle plans, hands over
    and hears of its own files only (carousel.outlook.site, `library_not_in_settings`)."""

    library: str
    queued: int
    in_flight: int  # CLAIMED or SUBMITTED when the library was removed
    tapes: int

    @property
    def files(self) -> int:
        return self.queued + self.in_flight


def waiting_outside(session: Session, named: Collection[str]) -> list[StrandedWork]:
    """The files and tapes of each library not in `named` that has any, by name: those no cycle of a site of
    `named` reads. One grouped read of the tape queues and the changes not folded into them yet (a handful:
    each cycle folds them), no `files` scan. Files not looked up yet are no library's (their row names
    `default` until the lookup chooses), so they are not counted here."""
    named = sorted(named)
    changes = union_all(
        select(TapeQueue.library, TapeQueue.tape, TapeQueue.kind, TapeQueue.files).where(
            TapeQueue.library.not_in(named)
        ),
        select(TapeQueueDelta.library, TapeQueueDelta.tape, TapeQueueDelta.kind, TapeQueueDelta.files).where(
            TapeQueueDelta.library.not_in(named)
        ),
    ).subquery()
    per_tape = (
        select(changes.c.library, changes.c.tape, changes.c.kind, func.sum(changes.c.files).label("files"))
        .group_by(changes.c.library, changes.c.tape, changes.c.kind)
        .having(func.sum(changes.c.files) > 0)
        .subquery()
    )
    queued = per_tape.c.kind == TapeQueueKind.QUEUED.value
    rows = session.execute(
        select(
            per_tape.c.library,
            func.sum(case((queued, per_tape.c.files), else_=0)),
            func.sum(case((queued, 0), else_=per_tape.c.files)),
            func.count(func.distinct(per_tape.c.tape)),
        )
        .group_by(per_tape.c.library)
        .order_by(per_tape.c.library)
    )
    return [StrandedWork(str(library), int(n), int(flying), int(tapes)) for library, n, flying, tapes in rows]

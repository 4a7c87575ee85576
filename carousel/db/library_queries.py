"""What each library of a site has queued, for the lookup's choice of copy (hsm_adapters.site), and what
waits for a library the settings no longer name, for the warning at start (carousel.cli.strays).

Read from the tape queues as the scheduler's last fold left them: one row per tape and group, no `files`
scan, at most a cycle behind. Callers own the transaction.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import func, select, union_all
from sqlalchemy.orm import Session

from carousel.db.models import TapeQueue, TapeQueueDelta, TapeQueueKind


def queued_bytes_by_library(session: Session) -> dict[str, int]:
    rows = session.execute(
        select(TapeQueue.library, func.sum(TapeQueue.bytes))
        .where(TapeQueue.kind == TapeQueueKind.QUEUED.value)
        .group_by(TapeQueue.library)
    )
    return {library: int(total or 0) for library, total in rows}


def waiting_outside(session: Session, named: Collection[str]) -> dict[str, tuple[int, int]]:
    """(queued, in flight) files of each library not in `named` that has any: those no cycle of a site of
    `named` reads. One grouped read of the tape queues and the changes not folded into them yet (a handful:
    each cycle folds them), no `files` scan."""
    named = sorted(named)
    counted = union_all(
        select(TapeQueue.library, TapeQueue.kind, TapeQueue.files).where(TapeQueue.library.not_in(named)),
        select(TapeQueueDelta.library, TapeQueueDelta.kind, TapeQueueDelta.files).where(
            TapeQueueDelta.library.not_in(named)
        ),
    ).subquery()
    rows = session.execute(
        select(counted.c.library, counted.c.kind, func.sum(counted.c.files)).group_by(
            counted.c.library, counted.c.kind
        )
    )
    found: dict[str, tuple[int, int]] = {}
    for library, kind, files in rows:
        queued, in_flight = found.get(library, (0, 0))
        if kind == TapeQueueKind.QUEUED.value:
            queued += int(files or 0)
        else:
            in_flight += int(files or 0)
        found[library] = (queued, in_flight)
    return {library: found[library] for library in sorted(found) if any(found[library])}

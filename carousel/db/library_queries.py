"""What each library of a site has queued, for the lookup's choice of copy (hsm_adapters.site).

Read from the tape queues as the scheduler's last fold left them: one row per tape and group, no `files`
scan, at most a cycle behind. Callers own the transaction.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from carousel.db.models import TapeQueue, TapeQueueKind


def queued_bytes_by_library(session: Session) -> dict[str, int]:
    rows = session.execute(
        select(TapeQueue.library, func.sum(TapeQueue.bytes))
        .where(TapeQueue.kind == TapeQueueKind.QUEUED.value)
        .group_by(TapeQueue.library)
    )
    return {library: int(total or 0) for library, total in rows}

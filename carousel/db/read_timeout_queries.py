"""Reads that have been going a long time, for the read timeouts (carousel.scheduler.read_timeouts).

Callers own the transaction; nothing here changes a row. Few rows: a file is being read on at most one drive,
and only those started before `started_before` come back.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from carousel.db.models import QueuedFileRow
from carousel.domain.queue import Reading
from carousel.domain.states import FileState

F = QueuedFileRow


def reads_started_before(
    session: Session, started_before: datetime, limit: int, library: str | None = None
) -> list[Reading]:
    """SUBMITTED files whose read started (FILE_STARTED applied) before `started_before`, oldest first (of
    `library`; None: any)."""
    rows = session.execute(
        select(F.id, F.tape, F.size_bytes, F.batch_key, F.started_at)
        .where(
            F.state == FileState.SUBMITTED.value,
            F.started_at.is_not(None),
            F.started_at < started_before,
            F.batch_key.is_not(None),
            *([] if library is None else [F.library == library]),
        )
        .order_by(F.started_at, F.id)
        .limit(limit)
    ).all()
    return [
        Reading(id, tape, int(size or 0), batch_key, started_at)
        for id, tape, size, batch_key, started_at in rows
        if batch_key is not None and started_at is not None
    ]

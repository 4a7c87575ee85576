"""Files in the library's hands, read back to hand them over again (carousel.scheduler.inflight).

Callers own the transaction; nothing here commits or changes a row. Batches are read whole (a page is a set
of batch keys), because the library takes a batch key once: a batch split over two submissions would lose
its second part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, exists, func, select
from sqlalchemy.orm import Session

from carousel.db.models import QueuedFileRow, RequestFile
from carousel.domain.states import FileState, LinkState

F = QueuedFileRow


@dataclass(frozen=True, slots=True)
class SubmittedFile:
    id: int
    path: str
    tape: str
    position_bytes: int
    size_bytes: int
    service_class: str
    batch_key: str


def _wanted_submitted(library: str | None) -> list[ColumnElement[bool]]:
    """SUBMITTED files someone waits for (of `library`, the one whose adapter holds them; None: any)."""
    wanted = exists().where(RequestFile.file_id == F.id, RequestFile.state == LinkState.PENDING.value)
    mine = [] if library is None else [F.library == library]
    return [
        F.state == FileState.SUBMITTED.value,
        F.batch_key.is_not(None),
        F.tape.is_not(None),
        wanted,
        *mine,
    ]


def submitted_batch_keys(
    session: Session,
    *,
    silent_since: datetime | None,
    after: str | None,
    limit: int,
    library: str | None = None,
) -> list[str]:
    """Keys of batches with SUBMITTED files someone still waits for, in key order after `after`; with
    silent_since, only batches with a file that has had no news since then (not handed over or started)."""
    query = select(F.batch_key).where(*_wanted_submitted(library))
    if silent_since is not None:
        query = query.where(func.coalesce(F.started_at, F.submitted_at) < silent_since)
    if after is not None:
        query = query.where(F.batch_key > after)
    keys = session.scalars(query.group_by(F.batch_key).order_by(F.batch_key).limit(limit))
    return [key for key in keys if key is not None]


def submitted_files_of(
    session: Session, batch_keys: Sequence[str], library: str | None = None
) -> list[SubmittedFile]:
    """The wanted SUBMITTED files of these batches, by batch key then position on tape."""
    if not batch_keys:
        return []
    rows = session.execute(
        select(F.id, F.path, F.tape, F.position_bytes, F.size_bytes, F.service_class, F.batch_key)
        .where(*_wanted_submitted(library), F.batch_key.in_(batch_keys))
        .order_by(F.batch_key, F.position_bytes, F.id)
    ).all()
    return [
        SubmittedFile(
            id=r[0],
            path=r[1],
            tape=r[2] or "",
            position_bytes=r[3] or 0,
            size_bytes=r[4] or 0,
            service_class=r[5],
            batch_key=r[6] or "",
        )
        for r in rows
    ]

"""Queue rows written directly, for tests of the scheduler's SQL before (or without) the intake layer."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.engine import transaction
from carousel.db.models import QueuedFileRow, RequestFile, StageRequest
from carousel.domain.states import FileState, LinkState

_ids = itertools.count()


def add_request(
    factory: sessionmaker[Session],
    files: Sequence[QueuedFileRow | int],
    created_at: datetime,
    *,
    grp: str = "default",
) -> str:
    """A request naming the given files (rows are added; ints are ids of existing files)."""
    request_id = f"req-{next(_ids)}"
    with transaction(factory) as session:
        rows = [f for f in files if isinstance(f, QueuedFileRow)]
        session.add_all(rows)
        session.flush()
        ids = [f.id if isinstance(f, QueuedFileRow) else f for f in files]
        paths = dict(
            session.execute(
                select(QueuedFileRow.id, QueuedFileRow.path).where(QueuedFileRow.id.in_(ids))
            ).all()
        )
        session.add(
            StageRequest(
                id=request_id,
                owner="alice",
                grp=grp,
                api="native",
                files_total=len(ids),
                created_at=created_at,
            )
        )
        session.flush()
        session.add_all(
            RequestFile(
                request_id=request_id, ordinal=n, file_id=i, path=paths[i], state=LinkState.PENDING.value
            )
            for n, i in enumerate(ids)
        )
    return request_id


def queued(
    path: str,
    tape: str,
    position: int,
    queued_at: datetime,
    *,
    size: int = 1000,
    grp: str = "default",
    priority: int = 0,
    service_class: str = "default",
    state: FileState = FileState.QUEUED,
    not_before_s: float | None = None,
) -> QueuedFileRow:
    return QueuedFileRow(
        path=path,
        state=state.value,
        tape=tape,
        position_bytes=position,
        size_bytes=size,
        grp=grp,
        priority=priority,
        service_class=service_class,
        queued_at=queued_at,
        not_before=None if not_before_s is None else queued_at + timedelta(seconds=not_before_s),
        attempts=0,
    )

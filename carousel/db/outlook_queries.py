"""A request's pending files as the queue holds them, per tape and kind (queued, in flight, backing off after
a failed read, tape not known yet): what a request's outlook is read from (carousel.outlook.request_outlook).
One grouped query, whatever the request's size."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, case, func, literal, select
from sqlalchemy.orm import Session

from carousel.db.models import QueuedFileRow, RequestFile
from carousel.db.state_sets import values
from carousel.domain.queue import RequestWork
from carousel.domain.states import FILE_ACTIVE, FileState, LinkState

F = QueuedFileRow
L = RequestFile


def request_work(session: Session, request_id: str, now: datetime) -> RequestWork:
    backing_off = case((and_(F.not_before.is_not(None), F.not_before > now), literal(1)), else_=literal(0))
    rows = session.execute(
        select(F.state, F.tape, backing_off, func.count(), func.max(F.not_before), func.min(F.error))
        .select_from(L)
        .join(F, F.id == L.file_id)
        .where(
            L.request_id == request_id,
            L.state == LinkState.PENDING.value,
            F.state.in_(values(FILE_ACTIVE)),
        )
        .group_by(F.state, F.tape, backing_off)
    ).all()
    queued: dict[str, int] = {}
    in_flight: dict[str, int] = {}
    retry_pending = tape_unknown = 0
    retry_due_at: datetime | None = None
    unknown_reason: str | None = None
    for state, tape, backing, files, latest, error in rows:
        count = int(files)
        if state == FileState.UNRESOLVED.value or tape is None:
            tape_unknown += count
            unknown_reason = unknown_reason or error
        elif state == FileState.QUEUED.value and backing:
            retry_pending += count
            retry_due_at = latest if retry_due_at is None else max(retry_due_at, latest)
        elif state == FileState.QUEUED.value:
            queued[tape] = queued.get(tape, 0) + count
        else:
            in_flight[tape] = in_flight.get(tape, 0) + count
    return RequestWork(
        queued=queued,
        in_flight=in_flight,
        retry_pending=retry_pending,
        retry_due_at=retry_due_at,
        tape_unknown=tape_unknown,
        unknown_reason=unknown_reason,
    )

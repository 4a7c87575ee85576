"""A request's pending files as the queue holds them, per tape and kind (queued, in flight, backing off after
a failed read, tape not known yet): what a request's outlook is read from (carousel.outlook.request_outlook).
One grouped query, whatever the request's size; the files
are counted per library too (a tape is (library, tape): docs/decisions.md §17)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
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
        select(
            F.library, F.state, F.tape, backing_off, func.count(), func.max(F.not_before), func.min(F.error)
        )
        .select_from(L)
        .join(F, F.id == L.file_id)
        .where(
            L.request_id == request_id,
            L.state == LinkState.PENDING.value,
            F.state.in_(values(FILE_ACTIVE)),
        )
        .group_by(F.library, F.state, F.tape, backing_off)
    ).all()
    by_library: dict[str, list[tuple[str, str | None, int, int, datetime | None, str | None]]] = {}
    for library, state, tape, backing, files, latest, error in rows:
        by_library.setdefault(library, []).append((state, tape, backing, int(files), latest, error))
    libraries = {name: _work(own) for name, own in sorted(by_library.items())}
    total = _work([row for own in by_library.values() for row in own])
    return replace(total, libraries=libraries)


def _work(rows: Iterable[tuple[str, str | None, int, int, datetime | None, str | None]]) -> RequestWork:
    """The files of `rows` (state, tape, backing off, files, latest not_before, an error), tape by tape."""
    queued: dict[str, int] = {}
    in_flight: dict[str, int] = {}
    retry_pending = tape_unknown = 0
    retry_due_at: datetime | None = None
    unknown_reason: str | None = None
    for state, tape, backing, count, latest, error in rows:
        if state == FileState.UNRESOLVED.value or tape is None:
            tape_unknown += count
            unknown_reason = unknown_reason or error
        elif state == FileState.QUEUED.value and backing:
            retry_pending += count
            if latest is not None:
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

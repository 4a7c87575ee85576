"""The queue at a glance, for the dashboard and the metrics: cheap GROUP BYs over the files not yet ended.

Both statements read only files in the states before an end (UNRESOLVED, QUEUED, CLAIMED, SUBMITTED), found
through the (state, …) indexes; their cost grows with the work waiting, not with the history. Callers own
the transaction.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session

from carousel.db.models import QueuedFileRow
from carousel.db.state_sets import values
from carousel.domain.states import FILE_ACTIVE, FILE_IN_FLIGHT, FILE_TAPE_WORK, FileState

F = QueuedFileRow


@dataclass(frozen=True, slots=True)
class QueueCell:
    """The files of one group in one state."""

    state: FileState
    group: str
    files: int
    bytes: int  # of the files whose size is known (UNRESOLVED files have none yet)
    oldest: datetime  # the earliest queued_at among them


def queue_by_state_and_group(session: Session) -> list[QueueCell]:
    statement = (
        select(F.state, F.grp, func.count(), func.coalesce(func.sum(F.size_bytes), 0), func.min(F.queued_at))
        .where(F.state.in_(values(FILE_ACTIVE)))
        .group_by(F.state, F.grp)
        .order_by(F.grp, F.state)
    )
    return [
        QueueCell(FileState(state), group, files, int(size or 0), oldest)
        for state, group, files, size, oldest in session.execute(statement)
    ]


@dataclass(frozen=True, slots=True)
class TapeWork:
    """One tape with files queued for it or in flight on it: a tape is (library, tape), the same ID in two
    libraries two tapes (docs/decisions.md §17)."""

    library: str
    tape: str
    queued: int
    queued_bytes: int
    in_flight: int  # CLAIMED or SUBMITTED
    oldest_queued: datetime | None  # None when nothing is queued, only in flight


def _has_work(libraries: Collection[str] | None = None) -> tuple[ColumnElement[bool], ...]:
    """Files queued for a tape or in flight on it (of `libraries` only, when given)."""
    of = () if libraries is None else (F.library.in_(sorted(libraries)),)
    return (F.state.in_(values(FILE_TAPE_WORK)), F.tape.is_not(None), *of)


def count_tapes_with_work(session: Session, libraries: Collection[str] | None = None) -> int:
    """Tapes (library, tape) with any file queued or in flight (in `libraries`, when given)."""
    tapes = select(F.library, F.tape).where(*_has_work(libraries)).distinct().subquery()
    total: int | None = session.scalar(select(func.count()).select_from(tapes))
    return total or 0


def busiest_tapes(session: Session, limit: int, libraries: Collection[str] | None = None) -> list[TapeWork]:
    """The `limit` tapes with the most queued files (then by library, label), with their files in flight (of
    `libraries`, when given)."""
    queued = F.state == FileState.QUEUED.value
    queued_files = func.sum(case((queued, 1), else_=0))
    statement = (
        select(
            F.library,
            F.tape,
            queued_files,
            func.coalesce(func.sum(case((queued, F.size_bytes), else_=0)), 0),
            func.sum(case((F.state.in_(values(FILE_IN_FLIGHT)), 1), else_=0)),
            func.min(case((queued, F.queued_at), else_=None)),
        )
        .where(*_has_work(libraries))
        .group_by(F.library, F.tape)
        .order_by(queued_files.desc(), F.library, F.tape)
        .limit(limit)
    )
    return [
        TapeWork(str(library), str(tape), int(n), int(size), int(flying), oldest)
        for library, tape, n, size, flying, oldest in session.execute(statement)
    ]

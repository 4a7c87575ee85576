"""Folding the changes the triggers on `files` appended (tape_queue_deltas) into tape_queues.

Run by the scheduler's snapshot, in its transaction: the deltas it deletes are exactly those it applies (a
delta committed meanwhile by intake or completion waits for the next fold), and only the leader writes
tape_queues, so nobody waits for anybody. Counts and bytes add up; the oldest arrival and the highest priority
take arriving files in at once, and are read again from the tape's queued files (through the tape index)
when a file that may have set them left. The cost grows with the changes since the last fold, not with the
queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from sqlalchemy import delete, func, insert, select, tuple_
from sqlalchemy.orm import Session

from carousel.db.models import QueuedFileRow, TapeQueue, TapeQueueDelta, TapeQueueKind
from carousel.domain.states import FileState

F = QueuedFileRow
TQ = TapeQueue
D = TapeQueueDelta
Key = tuple[str, str, str, str, str]  # library, tape, group, class of service, kind
T = TypeVar("T")
CHUNK = 2_000  # keys per statement: 8,000 bind parameters


@dataclass(slots=True)
class _Change:
    files: int = 0
    bytes: int = 0
    retries: int = 0
    arriving_oldest: datetime | None = None
    arriving_priority: int | None = None
    leaving_oldest: datetime | None = None
    leaving_priority: int | None = None


def fold_deltas(session: Session) -> int:
    """Applies and removes every delta this transaction sees; returns how many."""
    deltas = session.execute(
        delete(D).returning(
            D.library,
            D.tape,
            D.grp,
            D.service_class,
            D.kind,
            D.files,
            D.bytes,
            D.retries,
            D.arriving_oldest,
            D.arriving_priority,
            D.leaving_oldest,
            D.leaving_priority,
        )
    ).all()
    if not deltas:
        return 0
    changes: dict[Key, _Change] = {}
    for library, tape, grp, service_class, kind, files, size, retries, a_old, a_prio, l_old, l_prio in deltas:
        change = changes.setdefault((library, tape, grp, service_class, kind), _Change())
        change.files += files
        change.bytes += size
        change.retries += retries
        change.arriving_oldest = _least(change.arriving_oldest, a_old)
        change.arriving_priority = _greatest(change.arriving_priority, a_prio)
        change.leaving_oldest = _least(change.leaving_oldest, l_old)
        change.leaving_priority = _greatest(change.leaving_priority, l_prio)

    keys = sorted(changes)
    columns = (
        TQ.library,
        TQ.tape,
        TQ.grp,
        TQ.service_class,
        TQ.kind,
        TQ.files,
        TQ.bytes,
        TQ.retries,
        TQ.oldest,
    )
    current = {
        tuple(row[:5]): row[5:]
        for chunk in chunks(keys)
        for row in session.execute(
            select(*columns, TQ.max_priority).where(
                tuple_(TQ.library, TQ.tape, TQ.grp, TQ.service_class, TQ.kind).in_(chunk)
            )
        )
    }
    rows: dict[Key, dict[str, object]] = {}
    recheck: list[Key] = []
    for key in keys:
        change = changes[key]
        files, size, retries, oldest, priority = current.get(key, (0, 0, 0, None, 0))
        files += change.files
        if files <= 0:
            continue
        oldest = _least(oldest, change.arriving_oldest)
        priority = _greatest(priority, change.arriving_priority) or 0
        row = {
            "library": key[0],
            "tape": key[1],
            "grp": key[2],
            "service_class": key[3],
            "kind": key[4],
            "files": files,
            "bytes": size + change.bytes,
            "retries": retries + change.retries,
            "oldest": oldest,
            "max_priority": priority,
        }
        rows[key] = row
        if key[4] == TapeQueueKind.QUEUED and _may_have_set(change, oldest, priority):
            recheck.append(key)
    for key, (oldest, priority) in _queued_extremes(session, recheck).items():
        rows[key]["oldest"], rows[key]["max_priority"] = oldest, priority
    for chunk in chunks(keys):
        session.execute(
            delete(TQ).where(tuple_(TQ.library, TQ.tape, TQ.grp, TQ.service_class, TQ.kind).in_(chunk))
        )
    if rows:
        session.execute(insert(TQ), list(rows.values()))
    return len(deltas)


def _may_have_set(change: _Change, oldest: datetime | None, priority: int) -> bool:
    """A queued file left that was as old as the oldest or as urgent as the most urgent left over."""
    return (change.leaving_oldest is not None and (oldest is None or change.leaving_oldest <= oldest)) or (
        change.leaving_priority is not None and change.leaving_priority >= priority
    )


def _queued_extremes(session: Session, keys: Iterable[Key]) -> dict[Key, tuple[datetime | None, int]]:
    """The oldest arrival and highest priority of the queued files of each key, read from `files`."""
    wanted = {key[:4] for key in keys}
    if not wanted:
        return {}
    tapes = sorted({tape for _, tape, _, _ in wanted})
    found = [
        row
        for chunk in chunks(tapes)
        for row in session.execute(
            select(F.library, F.tape, F.grp, F.service_class, func.min(F.queued_at), func.max(F.priority))
            .where(F.tape.in_(chunk), F.state == FileState.QUEUED.value)
            .group_by(F.library, F.tape, F.grp, F.service_class)
        )
    ]
    return {
        (library, tape or "", grp, service_class, TapeQueueKind.QUEUED.value): (oldest, int(priority or 0))
        for library, tape, grp, service_class, oldest, priority in found
        if (library, tape, grp, service_class) in wanted
    }


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """Bounded lists of bind parameters (PostgreSQL takes at most 65,535 a statement, SQLite 32,766)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _least(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def _greatest(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)

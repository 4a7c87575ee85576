"""Folding the changes the triggers on `files` appended (tape_queue_deltas) into tape_queues.

Run by the snapshot, in its transaction: the deltas it deletes are exactly those it applies (a delta committed
meanwhile by intake or completion waits for the next fold). A fold takes at most `FOLD_LIMIT` deltas, oldest
first, so no cycle folds a backlog's worth at once: after a burst of intake (a million files at once leaves
some 60,000 deltas) the tape queues catch up over the next cycles, in arrival order. On PostgreSQL the fold
is one statement: the deltas are added up per key and upserted (ON CONFLICT ... DO UPDATE: files, bytes and
retries add up, the oldest arrival and the highest priority take arriving files in at once), in key order,
so the cost grows with the keys changed, not with the queue. A fold that finds deltas first takes the next
version of the tape queues (tape_queue_version): folds (the cycle's, an outlook's, a dry run's) run one at a
time, and the fold returns every row it changed, so that a store keeping a copy of the tape queues applies it
(carousel.db.demand_assembly). A row below zero (a departure folded before its arrival) is kept until it
adds up and is not shown by the snapshot; a row is deleted once everything in it is zero. When a file that
may have been a queue's oldest or most urgent left, that queue's oldest arrival and highest priority are read
again from its queued files (through the tape index).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import and_, bindparam, case, delete, func, select, text, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session

from carousel.db.models import QueuedFileRow, TapeQueue, TapeQueueDelta, TapeQueueKind
from carousel.domain.states import FileState

F = QueuedFileRow
TQ = TapeQueue
D = TapeQueueDelta
Key = tuple[str, str, str, str, str]  # library, tape, group, class of service, kind
T = TypeVar("T")
CHUNK = 2_000  # keys per statement: at most 18,000 bind parameters
FOLD_LIMIT = 5_000  # deltas one fold takes: a tenth or two of a second on PostgreSQL
NO_ARRIVAL = -(2**31)  # the priority an upsert carries when no queued file arrived: below any real one


@dataclass(slots=True)
class _Change:
    files: int = 0
    bytes: int = 0
    retries: int = 0
    arriving_oldest: datetime | None = None
    arriving_priority: int | None = None
    leaving_oldest: datetime | None = None
    leaving_priority: int | None = None


QueueRow = tuple[Any, ...]  # tape, kind, class of service, group, files, bytes, oldest, priority, retries


@dataclass(slots=True)
class Folded:
    """What one fold did: the deltas it took, the tape queues' version before and after it (None: it took
    none and left the version alone) and each row it changed, as it is now (None: deleted)."""

    deltas: int = 0
    before: int | None = None
    after: int | None = None
    rows: dict[Key, QueueRow | None] = field(default_factory=dict)


def fold_deltas(session: Session, limit: int = FOLD_LIMIT) -> int:
    """Applies and removes the `limit` oldest deltas this transaction sees; returns how many."""
    return fold(session, limit).deltas


def fold(session: Session, limit: int = FOLD_LIMIT) -> Folded:
    """Applies and removes the `limit` oldest deltas this transaction sees. A fold that finds deltas first
    takes the next version of the tape queues (tape_queue_version, one row: folds run one at a time, and a
    reader that kept a copy of the tape queues knows whether anyone else changed them since)."""
    after = session.execute(TAKE_VERSION).scalar()
    if after is None:
        return Folded()
    if session.get_bind().dialect.name == "postgresql":
        deltas, rows, emptied, recheck = _fold_on_server(session, limit)
    else:
        deltas, rows, emptied, recheck = _fold_here(session, limit)
    extremes = _queued_extremes(session, recheck)
    _set_extremes(session, extremes)
    for key, (oldest, priority) in extremes.items():
        row = rows[key]
        if row is not None:
            rows[key] = (*row[:6], oldest, priority, row[8])
    _delete_emptied(session, emptied)
    for key in emptied:
        rows[key] = None
    return Folded(deltas, int(after) - 1, int(after), rows)


def tape_queues_version(session: Session) -> int:
    return int(session.execute(text("SELECT version FROM tape_queue_version WHERE id = 1")).scalar_one())


TAKE_VERSION = text(
    "UPDATE tape_queue_version SET version = version + 1"
    " WHERE id = 1 AND EXISTS (SELECT 1 FROM tape_queue_deltas) RETURNING version"
)


def _queue_row(key: Key, values: tuple[Any, ...]) -> QueueRow:
    """A tape_queues row (its key; files, bytes, retries, oldest, max_priority) as the snapshot reads it."""
    _, tape, grp, service_class, kind = key
    files, size, retries, oldest, priority = values
    return (tape, kind, service_class, grp, files, size, oldest, priority, retries)


# PostgreSQL: the whole fold in one statement (the deltas never leave the server). Returns one row "N" with
# the deltas folded, then every row it added to as it is now: left empty ("E"), a queue whose extremes may
# have left ("R"), or the others ("U").
FOLD_ON_SERVER = text(
    """
WITH gone AS (
    DELETE FROM tape_queue_deltas
    WHERE id IN (SELECT id FROM tape_queue_deltas ORDER BY id LIMIT :limit FOR UPDATE SKIP LOCKED)
    RETURNING library, tape, grp, service_class, kind, files, bytes, retries,
              arriving_oldest, arriving_priority, leaving_oldest, leaving_priority
), change AS (
    SELECT library, tape, grp, service_class, kind,
           sum(files) AS files, sum(bytes) AS bytes, sum(retries) AS retries,
           min(arriving_oldest) AS arriving_oldest, max(arriving_priority) AS arriving_priority,
           min(leaving_oldest) AS leaving_oldest, max(leaving_priority) AS leaving_priority
    FROM gone GROUP BY library, tape, grp, service_class, kind
), added AS (
    INSERT INTO tape_queues AS q
        (library, tape, grp, service_class, kind, files, bytes, retries, oldest, max_priority)
    SELECT library, tape, grp, service_class, kind, files, bytes, retries, arriving_oldest,
           CASE WHEN kind = 'Q' THEN coalesce(arriving_priority, :no_arrival) ELSE 0 END
    FROM change ORDER BY library, tape, grp, service_class, kind
    ON CONFLICT (library, tape, grp, service_class, kind) DO UPDATE SET
        files = q.files + excluded.files, bytes = q.bytes + excluded.bytes,
        retries = q.retries + excluded.retries, oldest = least(q.oldest, excluded.oldest),
        max_priority = greatest(q.max_priority, excluded.max_priority)
    RETURNING q.library, q.tape, q.grp, q.service_class, q.kind, q.files, q.bytes, q.retries, q.oldest,
              q.max_priority
)
SELECT 'N' AS what, NULL AS library, NULL AS tape, NULL AS grp, NULL AS service_class, NULL AS kind,
       (SELECT count(*) FROM gone) AS files, NULL::bigint AS bytes, NULL::int AS retries,
       NULL::timestamptz AS oldest, NULL::int AS max_priority
UNION ALL
SELECT CASE
         WHEN a.files = 0 AND a.bytes = 0 AND a.retries = 0 THEN 'E'
         WHEN a.kind = 'Q' AND a.files > 0 AND (
              a.max_priority = :no_arrival
              OR (c.leaving_oldest IS NOT NULL AND (a.oldest IS NULL OR c.leaving_oldest <= a.oldest))
              OR c.leaving_priority >= a.max_priority) THEN 'R'
         ELSE 'U'
       END,
       a.library, a.tape, a.grp, a.service_class, a.kind, a.files, a.bytes, a.retries, a.oldest,
       a.max_priority
FROM added AS a JOIN change AS c USING (library, tape, grp, service_class, kind)
"""
)


Outcome = tuple[int, dict[Key, QueueRow | None], list[Key], list[Key]]  # deltas, rows, emptied, recheck


def _fold_on_server(session: Session, limit: int) -> Outcome:
    deltas = 0
    rows: dict[Key, QueueRow | None] = {}
    emptied: list[Key] = []
    recheck: list[Key] = []
    for what, library, tape, grp, service_class, kind, *values in session.execute(
        FOLD_ON_SERVER, {"limit": limit, "no_arrival": NO_ARRIVAL}
    ):
        if what == "N":
            deltas = int(values[0])  # the files column carries the count of deltas folded
            continue
        key = (library, tape, grp, service_class, kind)
        rows[key] = _queue_row(key, tuple(values))
        if what == "E":
            emptied.append(key)
        elif what == "R":
            recheck.append(key)
    return deltas, rows, emptied, recheck


def _fold_here(session: Session, limit: int) -> Outcome:
    """SQLite (no data-modifying WITH): the deltas added up here, then one upsert a key."""
    oldest_first = select(D.id).order_by(D.id).limit(limit)
    deltas = session.execute(
        delete(D)
        .where(D.id.in_(oldest_first.scalar_subquery()))
        .returning(
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
    rows: dict[Key, QueueRow | None] = {}
    emptied: list[Key] = []
    recheck: list[Key] = []
    if not changes:
        return 0, rows, emptied, recheck
    upserts = [_row(key, changes[key]) for key in sorted(changes)]
    for library, tape, grp, service_class, kind, *values in session.connection().execute(
        _adding(sqlite.insert(TQ)), upserts
    ):
        key = (library, tape, grp, service_class, kind)
        files, size, retries, oldest, priority = values
        rows[key] = _queue_row(key, (files, size, retries, oldest, priority))
        if files == 0 and size == 0 and retries == 0:
            emptied.append(key)
        elif kind == TapeQueueKind.QUEUED and files > 0 and _may_have_set(changes[key], oldest, priority):
            recheck.append(key)
    return len(deltas), rows, emptied, recheck


def _adding(insert: Any) -> Any:
    """The insert made an upsert that adds to the row already there (SQLite's two-argument min and max are
    NULL when either is, hence the CASEs)."""
    new = insert.excluded
    return insert.on_conflict_do_update(
        index_elements=[TQ.library, TQ.tape, TQ.grp, TQ.service_class, TQ.kind],
        set_={
            "files": TQ.files + new.files,
            "bytes": TQ.bytes + new.bytes,
            "retries": TQ.retries + new.retries,
            "oldest": case(
                (and_(new.oldest.is_not(None), TQ.oldest.is_(None) | (new.oldest < TQ.oldest)), new.oldest),
                else_=TQ.oldest,
            ),
            "max_priority": case(
                (new.max_priority > TQ.max_priority, new.max_priority), else_=TQ.max_priority
            ),
        },
    ).returning(
        TQ.library,
        TQ.tape,
        TQ.grp,
        TQ.service_class,
        TQ.kind,
        TQ.files,
        TQ.bytes,
        TQ.retries,
        TQ.oldest,
        TQ.max_priority,
    )


def _row(key: Key, change: _Change) -> dict[str, Any]:
    queued = key[4] == TapeQueueKind.QUEUED
    arriving = change.arriving_priority if change.arriving_priority is not None else NO_ARRIVAL
    return {
        "library": key[0],
        "tape": key[1],
        "grp": key[2],
        "service_class": key[3],
        "kind": key[4],
        "files": change.files,
        "bytes": change.bytes,
        "retries": change.retries,
        "oldest": change.arriving_oldest,
        "max_priority": arriving if queued else 0,
    }


def _may_have_set(change: _Change, oldest: datetime | None, priority: int) -> bool:
    """A queued file left that was as old as the oldest or as urgent as the most urgent left over (or the
    queue never saw an arrival: a fold that met the departures first)."""
    return (
        priority == NO_ARRIVAL
        or (change.leaving_oldest is not None and (oldest is None or change.leaving_oldest <= oldest))
        or (change.leaving_priority is not None and change.leaving_priority >= priority)
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


def _by_key() -> Any:
    return and_(
        TQ.library == bindparam("k_library"),
        TQ.tape == bindparam("k_tape"),
        TQ.grp == bindparam("k_grp"),
        TQ.service_class == bindparam("k_class"),
        TQ.kind == bindparam("k_kind"),
    )


def _key_params(key: Key) -> dict[str, str]:
    return {"k_library": key[0], "k_tape": key[1], "k_grp": key[2], "k_class": key[3], "k_kind": key[4]}


def _set_extremes(session: Session, extremes: dict[Key, tuple[datetime | None, int]]) -> None:
    if not extremes:
        return
    statement = (
        update(TQ)
        .where(_by_key())
        .values(oldest=bindparam("v_oldest", type_=TQ.oldest.type), max_priority=bindparam("v_priority"))
    )
    session.connection().execute(
        statement,
        [
            {**_key_params(key), "v_oldest": oldest, "v_priority": priority}
            for key, (oldest, priority) in sorted(extremes.items())
        ],
    )


def _delete_emptied(session: Session, keys: Sequence[Key]) -> None:
    """Rows with nothing left in them go (unless another fold has added to them since)."""
    if not keys:
        return
    statement = delete(TQ).where(_by_key(), TQ.files == 0, TQ.bytes == 0, TQ.retries == 0)
    session.connection().execute(statement, [_key_params(key) for key in sorted(keys)])


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

"""The scheduler's SQL: the per-tape snapshot, claims, hand-over records, stale-claim recovery, cancels to
push and lookups to retry. Every statement is set-based; none reads the queued files one by one.

Callers own the transaction (carousel.db.engine.transaction); nothing here commits. Statements that change
several files lock them first in path order (carousel.db.lock_order), as intake does, so that they wait for
an intake transaction instead of deadlocking with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    DateTime,
    Select,
    String,
    any_,
    bindparam,
    case,
    exists,
    func,
    insert,
    or_,
    select,
    type_coerce,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import InstrumentedAttribute, Session

from carousel.db.demand_assembly import DemandAssembly
from carousel.db.lock_order import lock_files
from carousel.db.media_queries import on_held_tape
from carousel.db.models import (
    QueuedFileRow,
    Recall,
    RequestFile,
    StageRequest,
    TapeQueue,
    TapeQueueKind,
    UtcDateTime,
)
from carousel.db.state_sets import one_of, values
from carousel.db.tape_queue_queries import chunks, fold, tape_queues_version
from carousel.domain.buffer import fitting
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.planning import ReadOrder, Selection
from carousel.domain.queue import ClaimedFile, HandedOver, QueueDemand
from carousel.domain.states import (
    CANCEL_READ,
    CLAIM,
    FILE_IN_FLIGHT,
    GIVE_BACK,
    HAND_OVER,
    REQUEUE,
    RESOLVE,
    FileState,
    LinkState,
)

F = QueuedFileRow
TQ = TapeQueue


def _due(now: datetime) -> ColumnElement[bool]:
    return or_(F.not_before.is_(None), F.not_before <= now)


def _has_pending_link() -> ColumnElement[bool]:
    return exists().where(RequestFile.file_id == F.id, RequestFile.state == LinkState.PENDING.value)


# --- snapshot ---------------------------------------------------------------------------------------------


def read_demand(
    session: Session, now: datetime, assembly: DemandAssembly | None = None, library: str | None = None
) -> QueueDemand:
    """The queue per tape, from the tape queues (carousel.db.models.TapeQueue, brought up to date first by
    folding in the changes the triggers on `files` appended): rows grow with tapes (times groups), not with
    queued files. Files backing off after a failed read are counted there; the tapes that have some (few)
    are read again from `files`, due files only. Writes the fold: run it in the snapshot's transaction.
    `assembly`: the copy of the tape queues the last snapshot of this store left (carousel.db.
    demand_assembly): its own fold is applied to it, and the table read again only when someone else folded
    since. The caller forgets it when the transaction fails. With `library`, that library's tapes only
    (docs/decisions.md §17; the assembly is that library's); None: every library's."""
    assembly = assembly if assembly is not None else DemandAssembly(library)
    folded = fold(session)
    if folded.after is not None and folded.before is not None:
        assembly.share(folded.rows, folded.before, folded.after)
    if folded.after is not None and folded.before == assembly.version:
        changed = assembly.apply(folded.rows, folded.after)
    elif folded.after is None and assembly.version == tape_queues_version(session):
        changed = set()
    else:
        version = folded.after if folded.after is not None else tape_queues_version(session)
        changed = assembly.reload(_every_queue_row(session, library), version)
    return assembly.assemble(changed, _backing_off(session, now, library))


def _every_queue_row(session: Session, library: str | None) -> list[tuple[str, tuple[Any, ...]]]:
    """Every row of the tape queues (of `library`), each with its library, as DemandAssembly keeps them."""
    return [
        (row[0], tuple(row[1:]))
        for row in session.connection().execute(
            select(
                TQ.library,
                TQ.tape,
                TQ.kind,
                TQ.service_class,
                TQ.grp,
                TQ.files,
                TQ.bytes,
                # as the driver gives it: made aware UTC only for the tapes whose objects are built again
                type_coerce(TQ.oldest, DateTime(timezone=True)),
                TQ.max_priority,
                TQ.retries,
            ).where(*_of_library(TQ.library, library))
        )
    ]


def _backing_off(session: Session, now: datetime, library: str | None) -> dict[str, list[tuple[Any, ...]]]:
    """The queued rows of the tapes with files backing off after a failed read (few), due files only, read
    from `files`: they stand for those tapes' queued rows in this snapshot."""
    connection = session.connection()
    tapes = sorted(
        tape
        for tape in connection.scalars(
            select(F.tape)
            .where(F.not_before > now, F.state == FileState.QUEUED.value, F.tape.is_not(None))
            .where(*_of_library(F.library, library))
            .distinct()
        )
        if tape is not None
    )
    rows: dict[str, list[tuple[Any, ...]]] = {tape: [] for tape in tapes}
    for chunk in chunks(tapes):
        for tape, *rest in connection.execute(
            select(
                F.tape,
                F.service_class,
                F.grp,
                func.count(),
                func.coalesce(func.sum(F.size_bytes), 0),
                func.min(F.queued_at),
                func.max(F.priority),
                func.sum(case((F.attempts > 0, 1), else_=0)),
            )
            .where(F.tape.in_(chunk), F.state == FileState.QUEUED.value, _due(now))
            .where(*_of_library(F.library, library))
            .group_by(F.tape, F.service_class, F.grp)
        ):
            rows[tape].append((tape, TapeQueueKind.QUEUED, *rest))
    return rows


def _of_library(column: InstrumentedAttribute[str], library: str | None) -> list[ColumnElement[bool]]:
    """The clause keeping one library's rows (none: every library's)."""
    return [] if library is None else [column == library]


# --- claims -----------------------------------------------------------------------------------------------


def _candidates(
    selection: Selection, now: datetime, library: str | None, *columns: InstrumentedAttribute[Any]
) -> Select[Any]:
    query = select(*columns).where(F.state.in_(values(CLAIM.sources)), F.tape.is_not(None), _due(now))
    # never a file of a tape an admin holds back, whatever the plan said (the state may have changed since)
    query = query.where(~on_held_tape())
    query = query.where(*_of_library(F.library, library))  # a selection of any tape stays in the library
    if selection.tape is not None:
        query = query.where(F.tape == selection.tape)
    if selection.service_class is not None:
        query = query.where(F.service_class == selection.service_class)
    if selection.group is not None:
        query = query.where(F.grp == selection.group)
    if selection.first_attempts_only:
        query = query.where(F.attempts == 0)
    if selection.order is ReadOrder.POSITION:
        query = query.order_by(F.tape, F.position_bytes, F.id)
    else:
        query = query.order_by(F.queued_at, F.id)
    # SKIP LOCKED: a claim never waits for, nor takes, rows another transaction holds (PostgreSQL; SQLite
    # has one writer at a time and SQLAlchemy leaves the clause out there).
    return query.limit(selection.max_files).with_for_update(skip_locked=True)


def claim(
    session: Session,
    selection: Selection,
    claim_key: str,
    now: datetime,
    *,
    byte_budget: int | None = None,
    library: str | None = None,
) -> list[ClaimedFile]:
    """Moves up to selection.max_files due QUEUED files to CLAIMED under claim_key; the selection's order.
    `byte_budget` (the disk buffer's room) is hard: the claim stops at the first file that does not fit.
    `library`: files of that library only (None: any)."""
    if selection.max_files <= 0 or (byte_budget is not None and byte_budget <= 0):
        return []
    returning = (F.id, F.path, F.tape, F.position_bytes, F.size_bytes, F.service_class, F.queued_at)
    stamp = update(F).values(state=CLAIM.target.value, batch_key=claim_key, claimed_at=now)
    if selection.max_bytes is None and byte_budget is None:
        wanted = _candidates(selection, now, library, F.id).scalar_subquery()
        rows = session.execute(stamp.where(F.id.in_(wanted)).returning(*returning)).all()
    else:
        # A byte budget needs a running sum, which PostgreSQL refuses beside FOR UPDATE: lock the candidates,
        # cut the list here, then stamp what fits.
        locked = session.execute(_candidates(selection, now, library, F.id, F.size_bytes)).all()
        ids = [file_id for file_id, _ in locked]
        if selection.max_bytes is not None:
            ids = _within_bytes(locked, selection.max_bytes)
        if byte_budget is not None:
            ids = ids[: fitting(locked[: len(ids)], byte_budget)]
        rows = session.execute(stamp.where(F.id.in_(ids)).returning(*returning)).all() if ids else []
    files = [
        ClaimedFile(
            id=r[0],
            path=r[1],
            tape=r[2] or "",
            position_bytes=r[3] or 0,
            size_bytes=r[4] or 0,
            service_class=r[5],
            queued_at=r[6],
        )
        for r in rows
    ]
    # RETURNING has no order: restore the selection's
    if selection.order is ReadOrder.POSITION:
        files.sort(key=lambda f: (f.tape, f.position_bytes, f.id))
    else:
        files.sort(key=lambda f: (f.queued_at, f.id))
    return files


def _within_bytes(locked: Iterable[tuple[int, int | None]], max_bytes: int) -> list[int]:
    ids: list[int] = []
    total = 0
    for file_id, size in locked:
        total += size or 0
        if ids and total > max_bytes:
            break
        ids.append(file_id)
    return ids


def mark_requests_started(session: Session, file_ids: Sequence[int], now: datetime) -> None:
    """A request has started when the first of its files is taken by a cycle."""
    if not file_ids:
        return
    if session.get_bind().dialect.name == "postgresql":  # one array parameter, however many files
        claimed = RequestFile.file_id == any_(bindparam("claimed", list(file_ids), type_=ARRAY(BigInteger)))
    else:
        claimed = RequestFile.file_id.in_(file_ids)
    askers = select(RequestFile.request_id).where(claimed, RequestFile.state == LinkState.PENDING.value)
    session.execute(
        update(StageRequest)
        .where(StageRequest.started_at.is_(None), StageRequest.id.in_(askers))
        .values(started_at=now)
    )


def record_handed_over(
    session: Session, batches: Sequence[HandedOver], now: datetime, library: str = DEFAULT_LIBRARY
) -> int:
    """CLAIMED -> SUBMITTED under each batch's key, and one recalls row per file (of `library`, whose adapter
    took the batches). Returns files marked.
    PostgreSQL: two statements whatever the files (one array a column, unnested), so the trigger on `files`
    runs once, not once a file."""
    ids = [fid for b in batches for fid in b.file_ids]
    if not ids:
        return 0
    keys = [b.batch_key for b in batches for _ in b.file_ids]
    tapes = [b.tape for b in batches for _ in b.file_ids]
    lock_files(session, ids)
    if session.get_bind().dialect.name == "postgresql":
        return _record_on_server(session, ids, keys, tapes, now, library=library)
    mark = (
        update(F)
        .where(F.id == bindparam("b_id"), one_of(F.state, HAND_OVER.sources))
        .values(state=HAND_OVER.target.value, batch_key=bindparam("b_key"), submitted_at=now)
    )
    params = [{"b_id": fid, "b_key": key} for fid, key in zip(ids, keys, strict=True)]
    marked = session.connection().execute(mark, params).rowcount
    recalls = [
        {"file_id": fid, "batch_key": key, "tape": tape, "library": library, "submitted_at": now}
        for fid, key, tape in zip(ids, keys, tapes, strict=True)
    ]
    session.execute(insert(Recall), recalls)
    return int(marked)


def _record_on_server(
    session: Session, ids: list[int], keys: list[str], tapes: list[str], now: datetime, *, library: str
) -> int:
    handed = (
        func.unnest(
            bindparam("h_ids", ids, type_=ARRAY(BigInteger)),
            bindparam("h_keys", keys, type_=ARRAY(String)),
            bindparam("h_tapes", tapes, type_=ARRAY(String)),
        )
        .table_valued("id", "batch_key", "tape")
        .render_derived()
    )
    connection = session.connection()
    marked = connection.execute(
        update(F)
        .where(F.id == handed.c.id, F.state.in_(values(HAND_OVER.sources)))
        .values(state=HAND_OVER.target.value, batch_key=handed.c.batch_key, submitted_at=now)
    ).rowcount
    connection.execute(
        insert(Recall).from_select(
            ["file_id", "batch_key", "tape", "library", "submitted_at"],
            select(
                handed.c.id,
                handed.c.batch_key,
                handed.c.tape,
                bindparam("h_library", library, type_=String()),
                bindparam("h_now", now, type_=UtcDateTime()),
            ),
        )
    )
    return int(marked)


def return_to_queue(session: Session, file_ids: Sequence[int]) -> int:
    """CLAIMED files the adapter did not take go back to the queue as they were."""
    if not file_ids:
        return 0
    lock_files(session, file_ids)
    result = session.execute(
        update(F)
        .where(F.id.in_(file_ids), F.state.in_(values(GIVE_BACK.sources)))
        .values(state=GIVE_BACK.target.value, batch_key=None, claimed_at=None)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def recover_stale_claims(session: Session, claimed_before: datetime) -> int:
    """Claims a crashed cycle left behind (CLAIMED since before claimed_before) go back to the queue."""
    stale = F.state.in_(values(GIVE_BACK.sources)), F.claimed_at < claimed_before
    file_ids = list(session.scalars(select(F.id).where(*stale)))
    if not file_ids:
        return 0
    lock_files(session, file_ids)
    result = session.execute(
        update(F).where(*stale).values(state=GIVE_BACK.target.value, batch_key=None, claimed_at=None)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


# --- cancels ----------------------------------------------------------------------------------------------


def unwanted_in_flight(session: Session, limit: int, library: str | None = None) -> list[int]:
    """Files with the HSM (or about to be) that no requester waits for any more: their cancel must reach
    the HSM (`library`'s, whose adapter holds them; None: any)."""
    return list(
        session.scalars(
            select(F.id)
            .where(F.state.in_(values(FILE_IN_FLIGHT)), ~_has_pending_link())
            .where(*_of_library(F.library, library))
            .order_by(F.id)
            .limit(limit)
        )
    )


def settle_cancelled(session: Session, file_ids: Sequence[int], now: datetime) -> tuple[int, int]:
    """Files the HSM will not read: CANCELLED, unless a new requester came meanwhile, who gets them queued
    again. Returns (cancelled, requeued)."""
    if not file_ids:
        return 0, 0
    lock_files(session, file_ids)
    mine = F.id.in_(file_ids)
    requeued = session.execute(
        update(F)
        .where(mine, F.state.in_(values(REQUEUE.sources)), _has_pending_link())
        .values(state=REQUEUE.target.value, batch_key=None, claimed_at=None, submitted_at=None)
    ).rowcount  # type: ignore[attr-defined]
    cancelled = session.execute(
        update(F)
        .where(mine, F.state.in_(values(CANCEL_READ.sources)), ~_has_pending_link())
        .values(state=CANCEL_READ.target.value, finished_at=now, error="cancelled by every requester")
    ).rowcount  # type: ignore[attr-defined]
    return int(cancelled), int(requeued)


# --- lookups to retry -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unresolved:
    id: int
    path: str


def unresolved_due(session: Session, limit: int) -> list[Unresolved]:
    """UNRESOLVED files, least recently asked about first (not_before records the last attempt)."""
    rows = session.execute(
        select(F.id, F.path)
        .where(F.state == FileState.UNRESOLVED.value)
        .order_by(F.not_before.is_not(None), F.not_before, F.queued_at, F.id)
        .limit(limit)
    ).all()
    return [Unresolved(id=r[0], path=r[1]) for r in rows]


def resolve_to_tape(
    session: Session,
    file_id: int,
    *,
    tape: str,
    position_bytes: int,
    size_bytes: int,
    library: str = DEFAULT_LIBRARY,
) -> bool:
    """UNRESOLVED -> QUEUED on `library`'s tape; queued_at stays the arrival, so the wait for the lookup
    counts as waiting."""
    result = session.execute(
        update(F)
        .where(F.id == file_id, F.state.in_(values(RESOLVE.sources)))
        .values(
            state=RESOLVE.target.value,
            tape=tape,
            library=library,
            position_bytes=position_bytes,
            size_bytes=size_bytes,
            error=None,
            not_before=None,
        )
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def still_unresolved(session: Session, file_id: int, reason: str, now: datetime) -> None:
    session.execute(
        update(F)
        .where(F.id == file_id, F.state == FileState.UNRESOLVED.value)
        .values(error=reason, not_before=now)
    )

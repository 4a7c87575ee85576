"""The intake's SQL: set-based statements over requests, files and request_files.

Files are upserted in path order, and cancels lock files in path order, so that concurrent intakes that
share files always take row locks in the same order (no deadlocks between them on PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    and_,
    case,
    exists,
    false,
    func,
    literal_column,
    null,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm import Session

from carousel.db.models import LinkState, QueuedFileRow, RequestFile, RequestState, StageRequest
from carousel.domain.states import FileState, TapeRestState

FILES = cast(Table, QueuedFileRow.__table__)
LINKS = cast(Table, RequestFile.__table__)
REQUESTS = cast(Table, StageRequest.__table__)

_FINAL = [FileState.STAGED.value, FileState.FAILED.value, FileState.CANCELLED.value]

# Bound parameters per statement stay well under SQLite's limit of 32,766.
_IN_CHUNK = 2_000


def _chunks(items: Sequence[Any], size: int = _IN_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --- submit -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewFile:
    """A path as a new recall would start, from the library's answer."""

    path: str
    state: FileState  # QUEUED, STAGED (on disk already), FAILED (not on tape) or UNRESOLVED
    tape: str | None
    position_bytes: int | None
    size_bytes: int | None
    error: str | None
    on_disk: bool


@dataclass(frozen=True, slots=True)
class UpsertedFile:
    id: int
    path: str
    state: FileState
    on_disk: bool
    error: str | None


def insert_request(
    session: Session,
    *,
    request_id: str,
    owner: str,
    group: str,
    activity: str,
    priority: int,
    api: str,
    files_total: int,
    client_info: str | None,
    now: datetime,
) -> None:
    session.execute(
        REQUESTS.insert().values(
            id=request_id,
            owner=owner,
            grp=group,
            activity=activity,
            priority=priority,
            api=api,
            state=RequestState.ACTIVE.value,
            files_total=files_total,
            client_info=client_info,
            created_at=now,
        )
    )


def _insert_for(session: Session) -> Any:
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        return postgresql.insert
    if dialect == "sqlite":
        return sqlite.insert
    raise RuntimeError(f"carousel supports PostgreSQL and SQLite, not {dialect}")


def upsert_files(
    session: Session, files: Sequence[NewFile], *, group: str, priority: int, now: datetime
) -> dict[str, UpsertedFile]:
    """Insert new recalls; join active ones (raising their priority to ours); re-queue final ones that are
    not on disk. Returns every path's row as it is now.

    A re-queue goes to QUEUED when the library knows the tape, else to UNRESOLVED with the library's reason
    (the scheduler retries the lookup and fails the file if it stays unknown): the transition table allows a
    final recall no other way back.
    """
    insert = _insert_for(session)
    c = FILES.c
    stmt = insert(FILES)
    new = stmt.excluded
    # Constants are written into the SQL (no bound parameters), so the statement runs as one executemany.
    requeue: ColumnElement[bool] = literal_column(
        "(files.state IN ('FAILED', 'CANCELLED') OR (files.state = 'STAGED' AND files.on_disk = false))"
    )
    active: ColumnElement[bool] = literal_column("(files.state NOT IN ('STAGED', 'FAILED', 'CANCELLED'))")

    def const(value: str | int) -> ColumnElement[Any]:
        return literal_column(f"'{value}'" if isinstance(value, str) else str(value))

    def on_requeue(value: Any, column: Any) -> ColumnElement[Any]:
        return case((requeue, value), else_=column)

    requeued_state = case(
        (new.state == const(FileState.FAILED.value), const(FileState.UNRESOLVED.value)),
        (new.state == const(FileState.STAGED.value), const(FileState.QUEUED.value)),
        else_=new.state,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[c.path],
        set_={
            "state": on_requeue(requeued_state, c.state),
            "tape": on_requeue(new.tape, c.tape),
            "position_bytes": on_requeue(new.position_bytes, c.position_bytes),
            "size_bytes": on_requeue(new.size_bytes, c.size_bytes),
            "grp": on_requeue(new.grp, c.grp),
            "priority": case(
                (requeue, new.priority),
                (and_(active, new.priority > c.priority), new.priority),
                else_=c.priority,
            ),
            "attempts": on_requeue(const(0), c.attempts),
            "error": on_requeue(new.error, c.error),
            "batch_key": on_requeue(null(), c.batch_key),
            "queued_at": on_requeue(new.queued_at, c.queued_at),
            "not_before": on_requeue(null(), c.not_before),
            "claimed_at": on_requeue(null(), c.claimed_at),
            "submitted_at": on_requeue(null(), c.submitted_at),
            "started_at": on_requeue(null(), c.started_at),
            "finished_at": on_requeue(null(), c.finished_at),
            "on_disk": on_requeue(false(), c.on_disk),
        },
    ).returning(c.id, c.path, c.state, c.on_disk, c.error)

    final_at_once = {FileState.STAGED, FileState.FAILED}
    rows = [
        {
            "path": f.path,
            "state": f.state.value,
            "tape": f.tape,
            "position_bytes": f.position_bytes,
            "size_bytes": f.size_bytes,
            "service_class": "default",
            "grp": group,
            "priority": priority,
            "attempts": 0,
            "error": f.error,
            "queued_at": now,
            "finished_at": now if f.state in final_at_once else None,
            "on_disk": f.on_disk,
        }
        for f in sorted(files, key=lambda f: f.path)
    ]
    result: dict[str, UpsertedFile] = {}
    if not rows:
        return result
    for row in session.execute(stmt, rows):
        result[row.path] = UpsertedFile(row.id, row.path, FileState(row.state), bool(row.on_disk), row.error)
    return result


def insert_links(session: Session, links: Sequence[dict[str, Any]]) -> None:
    """Rows of request_files: request_id, ordinal, file_id, path, state, error, finished_at."""
    if links:
        session.execute(LINKS.insert(), list(links))


# --- requests ---------------------------------------------------------------------------------------------


def get_request(session: Session, request_id: str) -> StageRequest | None:
    return session.get(StageRequest, request_id)


def finish_request_if_done(session: Session, request_id: str, now: datetime) -> bool:
    """ACTIVE -> DONE when no link of the request is PENDING any more. True if it became DONE."""
    no_pending = ~exists().where(LINKS.c.request_id == request_id, LINKS.c.state == LinkState.PENDING.value)
    result = session.execute(
        update(REQUESTS)
        .where(REQUESTS.c.id == request_id, REQUESTS.c.state == RequestState.ACTIVE.value, no_pending)
        .values(state=RequestState.DONE.value, completed_at=now)
    )
    return bool(cast(CursorResult[Any], result).rowcount)


def mark_request_deleted(session: Session, request_id: str, now: datetime) -> None:
    session.execute(
        update(REQUESTS)
        .where(REQUESTS.c.id == request_id)
        .values(
            state=RequestState.DELETED.value,
            deleted_at=now,
            completed_at=func.coalesce(REQUESTS.c.completed_at, now),
        )
    )


# --- cancel -----------------------------------------------------------------------------------------------


def paths_in_request(session: Session, request_id: str, paths: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(paths):
        found.update(
            session.scalars(
                select(LINKS.c.path).where(LINKS.c.request_id == request_id, LINKS.c.path.in_(chunk))
            )
        )
    return found


def cancel_links(session: Session, request_id: str, paths: Sequence[str] | None, now: datetime) -> list[int]:
    """The request's PENDING links (of `paths`, or all) become CANCELLED. Returns the file ids touched."""
    base = LINKS.c.request_id == request_id
    pending = LINKS.c.state == LinkState.PENDING.value
    file_ids: list[int] = []
    chunks: Iterable[Sequence[str] | None] = [None] if paths is None else _chunks(paths)
    for chunk in chunks:
        condition = and_(base, pending) if chunk is None else and_(base, pending, LINKS.c.path.in_(chunk))
        result = session.execute(
            update(LINKS)
            .where(condition)
            .values(state=LinkState.CANCELLED.value, finished_at=now)
            .returning(LINKS.c.file_id)
        )
        file_ids.extend(result.scalars())
    return sorted(set(file_ids))


def _no_pending_link() -> ColumnElement[bool]:
    return ~exists().where(LINKS.c.file_id == FILES.c.id, LINKS.c.state == LinkState.PENDING.value)


def settle_abandoned_files(session: Session, file_ids: Sequence[int], now: datetime) -> None:
    """After links were cancelled: a file nobody waits for any more is cancelled if the scheduler has not
    taken it (claimed and submitted ones are the scheduler's to cancel); a file others still wait for gets
    the highest priority of those still waiting."""
    if not file_ids:
        return
    c = FILES.c
    for chunk in _chunks(file_ids):
        if session.get_bind().dialect.name == "postgresql":
            # Lock in path order (as submit does) before a fresh statement reads the links: a submit that
            # joined one of these files meanwhile is then seen, and its file is not cancelled under it.
            session.execute(select(c.id).where(c.id.in_(chunk)).order_by(c.path).with_for_update())
        session.execute(
            update(FILES)
            .where(
                c.id.in_(chunk),
                c.state.in_([FileState.UNRESOLVED.value, FileState.QUEUED.value]),
                _no_pending_link(),
            )
            .values(state=FileState.CANCELLED.value, finished_at=now)
        )
        highest = (
            select(func.max(REQUESTS.c.priority))
            .select_from(LINKS.join(REQUESTS, REQUESTS.c.id == LINKS.c.request_id))
            .where(LINKS.c.file_id == c.id, LINKS.c.state == LinkState.PENDING.value)
            .scalar_subquery()
        )
        session.execute(
            update(FILES)
            .where(c.id.in_(chunk), c.state.notin_(_FINAL), ~_no_pending_link())
            .values(priority=highest)
        )


# --- release ----------------------------------------------------------------------------------------------


def release_links(
    session: Session, *, owner: str, request_id: str | None, paths: Sequence[str] | None, now: datetime
) -> list[int]:
    """Set released_at on the owner's unreleased links of `paths` (None: every link) in one request, or in
    all the owner's requests when request_id is None. Returns the file ids touched."""
    if request_id is not None:
        scope: ColumnElement[bool] = LINKS.c.request_id == request_id
    else:
        scope = LINKS.c.request_id.in_(select(REQUESTS.c.id).where(REQUESTS.c.owner == owner))
    file_ids: list[int] = []
    chunks: Iterable[Sequence[str] | None] = [None] if paths is None else _chunks(paths)
    for chunk in chunks:
        condition = and_(scope, LINKS.c.released_at.is_(None))
        if chunk is not None:
            condition = and_(condition, LINKS.c.path.in_(chunk))
        result = session.execute(
            update(LINKS).where(condition).values(released_at=now).returning(LINKS.c.file_id)
        )
        file_ids.extend(result.scalars())
    return sorted(set(file_ids))


def drop_unwanted_disk_copies(session: Session, file_ids: Sequence[int]) -> None:
    """A staged file that no unreleased PENDING or COMPLETED link still wants may leave the disk buffer."""
    c = FILES.c
    wanted = exists().where(
        LINKS.c.file_id == c.id,
        LINKS.c.state.in_([LinkState.PENDING.value, LinkState.COMPLETED.value]),
        LINKS.c.released_at.is_(None),
    )
    for chunk in _chunks(file_ids):
        session.execute(
            update(FILES)
            .where(c.id.in_(chunk), c.state == FileState.STAGED.value, c.on_disk.is_(True), ~wanted)
            .values(on_disk=False)
        )


# --- status -----------------------------------------------------------------------------------------------


def client_state_expression() -> ColumnElement[str]:
    """What the client sees for one link (carousel.domain.states.client_state, in SQL)."""
    link = LINKS.c.state
    file_state = FILES.c.state
    return case(
        (link == LinkState.COMPLETED.value, TapeRestState.COMPLETED.value),
        (link == LinkState.FAILED.value, TapeRestState.FAILED.value),
        (link == LinkState.CANCELLED.value, TapeRestState.CANCELLED.value),
        (file_state == FileState.STAGED.value, TapeRestState.COMPLETED.value),
        (file_state == FileState.FAILED.value, TapeRestState.FAILED.value),
        (file_state == FileState.CANCELLED.value, TapeRestState.CANCELLED.value),
        (
            file_state.in_([FileState.CLAIMED.value, FileState.SUBMITTED.value]),
            TapeRestState.STARTED.value,
        ),
        else_=TapeRestState.SUBMITTED.value,
    )


def link_status_query(request_id: str) -> Select[Any]:
    """One row per file of the request, in the client's order."""
    pending = LINKS.c.state == LinkState.PENDING.value
    return (
        select(
            LINKS.c.ordinal,
            LINKS.c.path,
            client_state_expression().label("client_state"),
            case((pending, FILES.c.error), else_=LINKS.c.error).label("error"),
            case(
                (pending, func.coalesce(FILES.c.started_at, FILES.c.submitted_at, FILES.c.claimed_at)),
                else_=None,
            ).label("started_at"),
            case((pending, FILES.c.finished_at), else_=LINKS.c.finished_at).label("finished_at"),
            and_(FILES.c.state == FileState.STAGED.value, FILES.c.on_disk).label("on_disk"),
        )
        .select_from(LINKS.join(FILES, FILES.c.id == LINKS.c.file_id))
        .where(LINKS.c.request_id == request_id)
        .order_by(LINKS.c.ordinal)
    )


def link_status_rows(session: Session, request_id: str) -> Sequence[Any]:
    return session.execute(link_status_query(request_id)).all()


def link_status_page(
    session: Session, request_id: str, *, after_ordinal: int, limit: int, state: TapeRestState | None
) -> Sequence[Any]:
    query = link_status_query(request_id).where(LINKS.c.ordinal > after_ordinal).limit(limit)
    if state is not None:
        query = query.where(client_state_expression() == state.value)
    return session.execute(query).all()


def client_state_counts(session: Session, request_id: str) -> dict[str, int]:
    state = client_state_expression().label("client_state")
    rows = session.execute(
        select(state, func.count())
        .select_from(LINKS.join(FILES, FILES.c.id == LINKS.c.file_id))
        .where(LINKS.c.request_id == request_id)
        .group_by(state)
    ).all()
    return {row[0]: int(row[1]) for row in rows}


def list_requests(
    session: Session,
    *,
    owner: str,
    before: tuple[datetime, str] | None,
    limit: int,
    states: Sequence[str],
) -> Sequence[StageRequest]:
    """The owner's requests, newest first; `before` is the (created_at, id) of the last one already seen."""
    query = select(StageRequest).where(StageRequest.owner == owner, StageRequest.state.in_(states))
    if before is not None:
        created_at, request_id = before
        query = query.where(
            or_(
                StageRequest.created_at < created_at,
                and_(StageRequest.created_at == created_at, StageRequest.id < request_id),
            )
        )
    query = query.order_by(StageRequest.created_at.desc(), StageRequest.id.desc()).limit(limit)
    return session.scalars(query).all()


# --- archive info -----------------------------------------------------------------------------------------


def disk_copies(session: Session, paths: Sequence[str]) -> set[str]:
    """The paths among `paths` that carousel has staged and keeps on disk."""
    found: set[str] = set()
    c = FILES.c
    for chunk in _chunks(paths):
        found.update(
            session.scalars(
                select(c.path).where(c.path.in_(chunk), c.state == FileState.STAGED.value, c.on_disk)
            )
        )
    return found

"""The intake's SQL: set-based statements over requests, files and request_files.

Files are upserted in path order, and cancels lock files in path order, so that concurrent intakes that
share files always take row locks in the same order (no deadlocks between them on PostgreSQL).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Integer,
    Select,
    String,
    Table,
    Text,
    and_,
    bindparam,
    case,
    exists,
    extract,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy import cast as cast_
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import BindParameter, TextClause

from carousel.db.link_start import recall_started, started_of_recall_in_flight
from carousel.db.models import QueuedFileRow, RequestAlias, RequestFile, StageRequest, UtcDateTime
from carousel.db.state_sets import quoted, values
from carousel.db.webhook_queries import enqueue_deliveries
from carousel.domain.buffer import epoch_s
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.states import (
    ABANDON,
    ASK_AGAIN,
    FILE_IN_FLIGHT,
    FILE_TAPE_WORK,
    FILE_TERMINAL,
    FileState,
    LinkState,
    RequestState,
    TapeRestState,
)

FILES = cast(Table, QueuedFileRow.__table__)
LINKS = cast(Table, RequestFile.__table__)
REQUESTS = cast(Table, StageRequest.__table__)
ALIASES = cast(Table, RequestAlias.__table__)

# Bound parameters per statement stay well under SQLite's limit of 32,766.
_IN_CHUNK = 2_000


def _chunks(items: Sequence[Any], size: int = _IN_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --- submit -----------------------------------------------------------------------------------------------


class NewFile(NamedTuple):
    """A path of a request, with the library's answer: how a new recall of it would start. A tuple, in the
    column order of the row source below, so a hundred thousand of them are cheap to make and to send."""

    path: str
    ordinal: int  # position in the request
    state: FileState  # QUEUED, STAGED (on disk already), FAILED (not on tape) or UNRESOLVED
    tape: str | None
    position_bytes: int | None
    size_bytes: int | None
    error: str | None
    on_disk: bool
    checksum: str | None = None  # adler32 the library gave in its lookup
    lifetime_s: int | None = None  # how long the request wants the file kept on disk once staged
    library: str = DEFAULT_LIBRARY  # the library holding the copy chosen (docs/decisions.md §17)


# Built once: a submit is on every stage call, and building an insert costs more than running it.
_INSERT_REQUEST = REQUESTS.insert()


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
    colocation: str | None = None,
) -> None:
    session.execute(
        _INSERT_REQUEST,
        {
            "id": request_id,
            "owner": owner,
            "grp": group,
            "activity": activity,
            "priority": priority,
            "api": api,
            "state": RequestState.ACTIVE.value,
            "files_total": files_total,
            "client_info": client_info,
            "colocation": colocation,
            "created_at": now,
        },
    )


def insert_alias(session: Session, owner: str, alias: str, request_id: str) -> bool:
    """Give the owner's request an alias; False when the owner already has that alias (a submit racing
    this one took it), with nothing written."""
    try:
        with session.begin_nested():
            session.execute(ALIASES.insert().values(owner=owner, alias=alias, request_id=request_id))
    except IntegrityError:
        return False
    return True


def requests_of_alias(
    session: Session, alias: str, *, owner: str, groups: Sequence[str] = ()
) -> list[StageRequest]:
    """The requests an alias names among the owner's own and, with `groups`, those of these groups (whose
    owners each have aliases of their own): the owner's own first, then the newest."""
    visible = ALIASES.c.owner == owner
    if groups:
        visible = or_(visible, StageRequest.grp.in_(groups))
    return list(
        session.scalars(
            select(StageRequest)
            .join(ALIASES, ALIASES.c.request_id == StageRequest.id)
            .where(ALIASES.c.alias == alias, visible)
            .order_by((ALIASES.c.owner == owner).desc(), StageRequest.created_at.desc())
        )
    )


# The request's files as a table `t`, from one JSON array of rows (one parameter, parsed by the database:
# far cheaper than binding a hundred thousand values one by one).
_SOURCE = {
    "postgresql": """(SELECT r->>0 AS path, CAST(r->>1 AS integer) AS ordinal, r->>2 AS state, r->>3 AS tape,
        CAST(r->>4 AS bigint) AS position_bytes, CAST(r->>5 AS bigint) AS size_bytes, r->>6 AS error,
        CAST(r->>7 AS boolean) AS on_disk, r->>8 AS checksum, CAST(r->>9 AS integer) AS lifetime_s,
        r->>10 AS library
        FROM json_array_elements(CAST(:rows AS json)) AS e(r)) AS t""",
    "sqlite": """(SELECT json_extract(value, '$[0]') AS path, json_extract(value, '$[1]') AS ordinal,
        json_extract(value, '$[2]') AS state, json_extract(value, '$[3]') AS tape,
        json_extract(value, '$[4]') AS position_bytes, json_extract(value, '$[5]') AS size_bytes,
        json_extract(value, '$[6]') AS error, json_extract(value, '$[7]') AS on_disk,
        json_extract(value, '$[8]') AS checksum, json_extract(value, '$[9]') AS lifetime_s,
        json_extract(value, '$[10]') AS library
        FROM json_each(:rows)) AS t""",
}

# A final recall that is not on disk is queued anew (ASK_AGAIN, or ASK_AGAIN_UNRESOLVED when the library does
# not know the tape now); an active one is joined.
_REQUEUE = (
    f"(files.state IN ({quoted(ASK_AGAIN.sources)})"  # ASK_AGAIN_UNRESOLVED's sources too
    " AND NOT (files.state = 'STAGED' AND files.on_disk))"
)
_ACTIVE = f"(files.state NOT IN ({quoted(FILE_TERMINAL)}))"


def _on_requeue(column: str, value: str) -> str:
    return f"{column} = CASE WHEN {_REQUEUE} THEN {value} ELSE files.{column} END"


_UPSERT_FILES = f"""
INSERT INTO files (path, state, tape, position_bytes, size_bytes, service_class, grp, priority, attempts,
                   error, queued_at, finished_at, on_disk, checksum, library)
SELECT t.path, t.state, t.tape, t.position_bytes, t.size_bytes, 'default', :grp, :priority, 0,
       t.error, :now, CASE WHEN t.state IN ({quoted(FILE_TERMINAL)}) THEN :now END, t.on_disk, t.checksum,
       t.library
FROM {{source}}
WHERE true
ORDER BY t.path
ON CONFLICT (path) DO UPDATE SET
    {
    _on_requeue(
        "state",
        "CASE excluded.state WHEN 'FAILED' THEN 'UNRESOLVED' "
        "WHEN 'STAGED' THEN 'QUEUED' ELSE excluded.state END",
    )
},
    {_on_requeue("tape", "excluded.tape")},
    {_on_requeue("library", "excluded.library")},
    {_on_requeue("position_bytes", "excluded.position_bytes")},
    {_on_requeue("size_bytes", "excluded.size_bytes")},
    {_on_requeue("grp", "excluded.grp")},
    priority = CASE WHEN {_REQUEUE} THEN excluded.priority
                    WHEN {_ACTIVE} AND excluded.priority > files.priority THEN excluded.priority
                    ELSE files.priority END,
    {_on_requeue("attempts", "0")},
    {_on_requeue("error", "excluded.error")},
    {_on_requeue("batch_key", "NULL")},
    {_on_requeue("queued_at", "excluded.queued_at")},
    {_on_requeue("not_before", "NULL")},
    {_on_requeue("claimed_at", "NULL")},
    {_on_requeue("submitted_at", "NULL")},
    {_on_requeue("started_at", "NULL")},
    {_on_requeue("finished_at", "NULL")},
    {_on_requeue("on_disk", "false")},
    {_on_requeue("checksum", "COALESCE(excluded.checksum, files.checksum)")}
"""

# Each link starts from its file as the upsert left it: on disk -> COMPLETED (its pin from now), not on tape
# -> FAILED.
_LINK_COLUMNS = """
SELECT :request_id, t.ordinal, f.id, t.path,
       CASE WHEN f.state = 'STAGED' AND f.on_disk THEN 'COMPLETED'
            WHEN f.state = 'FAILED' THEN 'FAILED' ELSE 'PENDING' END,
       CASE WHEN f.state = 'FAILED' THEN f.error END,
       CASE WHEN (f.state = 'STAGED' AND f.on_disk) OR f.state = 'FAILED' THEN :now END,
       t.lifetime_s,
       CASE WHEN f.state = 'STAGED' AND f.on_disk THEN :now_s + t.lifetime_s END
"""
_INSERT_LINKS = (
    "INSERT INTO request_files (request_id, ordinal, file_id, path, state, error, finished_at, lifetime_s,"
    " pin_until_s)"
)

# PostgreSQL does both in one statement: the upsert's RETURNING feeds the links (no second parse, no
# second index lookup per path), and it answers how many links wait (none: the submit finishes the request).
_RETURNING = "RETURNING files.id, files.path, files.state, files.on_disk, files.error"
_QUEUE_POSTGRESQL = f"""
WITH t AS MATERIALIZED (SELECT * FROM {_SOURCE["postgresql"]}),
f AS ({_UPSERT_FILES.format(source="t")} {_RETURNING}),
links AS ({_INSERT_LINKS} {_LINK_COLUMNS} FROM f JOIN t ON t.path = f.path RETURNING state)
SELECT count(*) FROM links WHERE state = 'PENDING'
"""
_QUEUE_SQLITE = (
    _UPSERT_FILES.format(source=_SOURCE["sqlite"]),
    f"{_INSERT_LINKS} {_LINK_COLUMNS} FROM {_SOURCE['sqlite']} JOIN files AS f ON f.path = t.path"
    " RETURNING state",
)
# Sorting this many rows by path in the upsert wants more than the default work_mem to stay in memory.
_BIG_SUBMIT = 10_000


@functools.cache
def _queue_statements(dialect: str) -> tuple[TextClause, ...]:
    """The statements of queue_files, parsed once per dialect (each is long, and a submit is on every stage
    call)."""
    timestamp = bindparam("now", type_=UtcDateTime())
    if dialect == "postgresql":
        return (text(_QUEUE_POSTGRESQL).bindparams(timestamp),)
    if dialect == "sqlite":
        return tuple(text(statement).bindparams(timestamp) for statement in _QUEUE_SQLITE)
    raise RuntimeError(f"carousel supports PostgreSQL and SQLite, not {dialect}")


def _source_rows(files: Sequence[NewFile]) -> str:
    return json.dumps(files, separators=(",", ":"))


def queue_files(
    session: Session,
    request_id: str,
    files: Sequence[NewFile],
    *,
    group: str,
    priority: int,
    now: datetime,
) -> bool:
    """Upsert the request's files and link them to it, in two set-based statements; True when a link is
    left PENDING (the request cannot be done yet).

    New paths start as the library answered; active recalls are joined (their priority raised to ours);
    final recalls not on disk are queued anew: to QUEUED when the library knows the tape, else to UNRESOLVED
    with the library's reason (the scheduler retries the lookup and fails the file if it stays unknown),
    since the transition table allows a final recall no other way back. Paths must be distinct.
    """
    if not files:
        return False
    dialect = session.get_bind().dialect.name
    statements = _queue_statements(dialect)
    params = {"rows": _source_rows(files), "grp": group, "priority": priority, "now": now}
    now_s = epoch_s(now)
    if dialect == "postgresql":
        if len(files) >= _BIG_SUBMIT:
            session.execute(text("SET LOCAL work_mem = '64MB'"))
        pending = session.execute(statements[0], {**params, "request_id": request_id, "now_s": now_s})
        return bool(pending.scalar_one())
    upsert, link = statements
    session.execute(upsert, params)
    states = session.execute(
        link, {"rows": params["rows"], "request_id": request_id, "now": now, "now_s": now_s}
    )
    return LinkState.PENDING.value in states.scalars().all()


def touch_files_of_request(session: Session, request_id: str, now: datetime) -> None:
    """The request's files already in the disk buffer become the most recently used (eviction takes the
    least recently used first)."""
    session.execute(
        update(FILES)
        .where(
            FILES.c.id.in_(select(LINKS.c.file_id).where(LINKS.c.request_id == request_id)),
            FILES.c.disk_used_at.is_not(None),
        )
        .values(disk_used_at=now)
    )


# --- requests ---------------------------------------------------------------------------------------------


def get_request(session: Session, request_id: str) -> StageRequest | None:
    return session.get(StageRequest, request_id)


_FINISH_IF_DONE = (
    update(REQUESTS)
    .where(
        REQUESTS.c.id == bindparam("request_id"),
        REQUESTS.c.state == RequestState.ACTIVE.value,
        ~exists().where(
            LINKS.c.request_id == bindparam("request_id"), LINKS.c.state == LinkState.PENDING.value
        ),
    )
    .values(state=RequestState.DONE.value, completed_at=bindparam("now", type_=UtcDateTime()))
)


def finish_request_if_done(session: Session, request_id: str, now: datetime) -> bool:
    """ACTIVE -> DONE when no link of the request is PENDING any more. True if it became DONE."""
    result = session.execute(_FINISH_IF_DONE, {"request_id": request_id, "now": now})
    done = bool(cast(CursorResult[Any], result).rowcount)
    if done:  # its webhooks' notifications, in this same transaction
        enqueue_deliveries(session, [request_id])
    return done


def mark_request_deleted(session: Session, request_id: str, now: datetime) -> None:
    session.execute(
        update(REQUESTS)
        .where(REQUESTS.c.id == request_id)
        .values(
            state=RequestState.DELETED.value,
            deleted_at=now,
            completed_at=func.coalesce(REQUESTS.c.completed_at, now),
            status_version=REQUESTS.c.status_version + 1,
        )
    )


def bump_status_version(session: Session, request_id: str) -> None:
    """The request's status changed by intake's hand (a cancel): every API process's cached document of
    it is stale from this commit on (carousel.api.status_cache). Rows of requests are locked last
    (db/lock_order.py), as here: after the links and files the cancel touched."""
    session.execute(
        update(REQUESTS)
        .where(REQUESTS.c.id == request_id)
        .values(status_version=REQUESTS.c.status_version + 1)
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


def request_paths(session: Session, request_id: str) -> list[str]:
    """Every path the request names, in the client's order."""
    return list(
        session.scalars(
            select(LINKS.c.path).where(LINKS.c.request_id == request_id).order_by(LINKS.c.ordinal)
        )
    )


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
            .values(
                state=LinkState.CANCELLED.value, finished_at=now, started_at=started_of_recall_in_flight()
            )
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
                c.state.in_(values(ABANDON.sources)),
                _no_pending_link(),
            )
            .values(state=ABANDON.target.value, finished_at=now)
        )
        highest = (
            select(func.max(REQUESTS.c.priority))
            .select_from(LINKS.join(REQUESTS, REQUESTS.c.id == LINKS.c.request_id))
            .where(LINKS.c.file_id == c.id, LINKS.c.state == LinkState.PENDING.value)
            .scalar_subquery()
        )
        session.execute(
            update(FILES)
            .where(c.id.in_(chunk), c.state.notin_(values(FILE_TERMINAL)), ~_no_pending_link())
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
            file_state.in_(values(FILE_IN_FLIGHT)),
            TapeRestState.STARTED.value,
        ),
        else_=TapeRestState.SUBMITTED.value,
    )


def link_status_query(request_id: str | BindParameter[str]) -> Select[Any]:
    """One row per file of the request, in the client's order."""
    pending = LINKS.c.state == LinkState.PENDING.value
    return (
        select(
            LINKS.c.ordinal,
            LINKS.c.path,
            client_state_expression().label("client_state"),
            case((pending, FILES.c.error), else_=LINKS.c.error).label("error"),
            # A pending link follows its file's recall; an ended one keeps when its recall started (links
            # ended before that was kept: the file's, while it still holds the recall that ended them).
            case(
                (pending, recall_started()),
                else_=func.coalesce(
                    LINKS.c.started_at,
                    case((LINKS.c.finished_at == FILES.c.finished_at, recall_started())),
                ),
            ).label("started_at"),
            case((pending, FILES.c.finished_at), else_=LINKS.c.finished_at).label("finished_at"),
            and_(FILES.c.state == FileState.STAGED.value, FILES.c.on_disk).label("on_disk"),
            FILES.c.checksum,
        )
        .select_from(LINKS.join(FILES, FILES.c.id == LINKS.c.file_id))
        .where(LINKS.c.request_id == request_id)
        .order_by(LINKS.c.ordinal)
    )


def _epoch(dialect: str, column: ColumnElement[Any]) -> ColumnElement[int]:
    if dialect == "postgresql":
        return cast_(func.floor(extract("epoch", column)), BigInteger)
    return cast_(func.strftime("%s", column), Integer)  # SQLite keeps UTC text


def status_files_json(session: Session, request_id: str) -> str:
    """The request's files as the Tape REST API lists them, a JSON array rendered by the database in one
    query: {"path", "state", "error" (FAILED only), "startedAt", "finishedAt" (epoch seconds, when known)}.
    Big requests are polled often; this keeps the work out of the service's Python (and its GIL)."""
    statement = _status_json_statement(session.get_bind().dialect.name)
    return session.scalar(statement, {"request_id": request_id}) or "[]"


@functools.cache
def _status_json_statement(dialect: str) -> Select[Any]:
    """status_files_json's statement, built once per dialect with the request id bound at execution:
    building it took longer than running it (SQLAlchemy caches the compiled SQL, not the Python construct,
    and a 100-file status is polled every second by every client)."""
    rows = link_status_query(bindparam("request_id", type_=String)).subquery()
    state = rows.c.client_state
    final = [TapeRestState.COMPLETED.value, TapeRestState.FAILED.value, TapeRestState.CANCELLED.value]
    members = (
        "path",
        rows.c.path,
        "state",
        state,
        "error",
        case((state == TapeRestState.FAILED.value, func.coalesce(rows.c.error, "failed"))),
        "startedAt",
        case((state != TapeRestState.SUBMITTED.value, _epoch(dialect, rows.c.started_at))),
        "finishedAt",
        case((state.in_(final), _epoch(dialect, rows.c.finished_at))),
    )
    document: ColumnElement[str]
    if dialect == "postgresql":
        entry = func.json_strip_nulls(func.json_build_object(*members))
        document = cast_(func.json_agg(aggregate_order_by(entry, rows.c.ordinal)), Text)
    else:
        # json_patch drops the members whose value is null; the subquery is already in the client's order.
        document = func.json_group_array(func.json_patch("{}", func.json_object(*members)))
    return select(func.coalesce(document, "[]"))


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
    groups: Sequence[str] = (),
) -> Sequence[StageRequest]:
    """The owner's requests and those of `groups`, newest first; `before` is the (created_at, id) of the
    last one already seen."""
    whose = StageRequest.owner == owner
    if groups:
        whose = or_(whose, StageRequest.grp.in_(sorted(groups)))
    query = select(StageRequest).where(whose, StageRequest.state.in_(states))
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


def waiting_outside_of(session: Session, paths: Sequence[str], libraries: Iterable[str]) -> dict[str, str]:
    """The paths among `paths` queued or in flight for a library not in `libraries` (one the settings no
    longer name), each with that library: a new request for one joins its waiting row."""
    found: dict[str, str] = {}
    c = FILES.c
    named = sorted(libraries)
    for chunk in _chunks(paths):
        rows = session.execute(
            select(c.path, c.library).where(
                c.path.in_(chunk), c.state.in_(values(FILE_TAPE_WORK)), c.library.not_in(named)
            )
        )
        found.update({str(path): str(library) for path, library in rows})
    return found


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

"""The reports' SQL: the recorded history (recalls, mounts, requests) read for a time window.

Reads are the bulk of the history, so they are summed in the database wherever a read lies inside one bucket
of the window; only the reads that cross a bucket edge or an edge of the window come back row by row, to be
shared between buckets by the caller. Mount sessions are few (one row per mount) and come back as rows.

Times are compared as seconds since the Unix epoch. PostgreSQL has them exactly; SQLite keeps
`YYYY-MM-DD HH:MM:SS.ffffff` text: `strftime('%s')` of its first 19 characters gives the whole seconds and the
text after them the fraction, so both back-ends give the same seconds to the microsecond. Callers own the
transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, Float, Integer, String, and_, case, func, literal, or_, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from carousel.db.models import Mount, QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.domain.states import LinkState

# What a throughput figure is broken down by: nothing (the whole library), the drive (library, drive), the
# tape (library, tape), the group of the file read (`files.grp`, the group of its oldest asker).
Dimension = Literal["library", "drive", "tape", "group"]

NO_DRIVE = ""  # the key of reads and mounts an adapter reported without a drive

# A tape is (library, tape) and a drive (library, drive) (docs/decisions.md §17): a key joins the two with a
# separator no library name holds (carousel.domain.libraries), so the first one splits them again whatever
# the tape ID or the drive name holds.
TAPE_KEY_SEPARATOR = "/"
DRIVE_KEY_SEPARATOR = TAPE_KEY_SEPARATOR


def tape_key(library: str, tape: str) -> str:
    return f"{library}{TAPE_KEY_SEPARATOR}{tape}"


def split_tape_key(key: str) -> tuple[str, str]:
    """(library, tape) of a tape key."""
    library, _, tape = key.partition(TAPE_KEY_SEPARATOR)
    return library, tape


def drive_key(library: str, drive: str) -> str:
    return f"{library}{DRIVE_KEY_SEPARATOR}{drive}"


def split_drive_key(key: str) -> tuple[str, str]:
    """(library, drive) of a drive key (drive NO_DRIVE when the adapter named none)."""
    library, _, drive = key.partition(DRIVE_KEY_SEPARATOR)
    return library, drive


# --- portable epoch seconds --------------------------------------------------------------------------------


class epoch_seconds(FunctionElement[float]):  # noqa: N801 (a SQL function, named as one)
    """Seconds since 1970-01-01T00:00:00Z of a UtcDateTime column, microseconds included."""

    type = Float()
    inherit_cache = True
    name = "epoch_seconds"


class epoch_bucket(FunctionElement[int]):  # noqa: N801
    """The index of the width-second bucket (aligned on the epoch) holding a UtcDateTime: floor(t / width)."""

    type = Integer()
    inherit_cache = True
    name = "epoch_bucket"


@compiles(epoch_seconds, "postgresql")
def _epoch_seconds_pg(element: epoch_seconds, compiler: SQLCompiler, **kw: Any) -> str:
    # date_part gives double precision directly; EXTRACT's numeric is twice as slow over a big history
    return f"date_part('epoch', {compiler.process(element.clauses, **kw)})"


@compiles(epoch_seconds, "sqlite")
def _epoch_seconds_sqlite(element: epoch_seconds, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.clauses, **kw)
    # whole seconds of the first 19 characters only: strftime rounds a fraction to milliseconds first, so
    # 17.9999 s would become 18 s and, with the fraction added again, 18.9999
    return f"(CAST(strftime('%s', substr({column}, 1, 19)) AS REAL) + CAST(substr({column}, 20) AS REAL))"


@compiles(epoch_bucket, "postgresql")
def _epoch_bucket_pg(element: epoch_bucket, compiler: SQLCompiler, **kw: Any) -> str:
    column, width = list(element.clauses)
    seconds = f"date_part('epoch', {compiler.process(column, **kw)})"
    return f"CAST(FLOOR({seconds} / {compiler.process(width, **kw)}) AS BIGINT)"


@compiles(epoch_bucket, "sqlite")
def _epoch_bucket_sqlite(element: epoch_bucket, compiler: SQLCompiler, **kw: Any) -> str:
    # whole seconds divided by a whole width: integer division, the floor for times after 1970
    column, width = list(element.clauses)
    text = compiler.process(column, **kw)
    seconds = f"CAST(strftime('%s', substr({text}, 1, 19)) AS INTEGER)"
    return f"({seconds} / {compiler.process(width, **kw)})"


def _bucket(column: Any, width_s: int) -> epoch_bucket:
    return epoch_bucket(column, literal(width_s, Integer()))


def _reads(by: Dimension) -> Any:
    """The FROM of a read query: recalls, with their files when broken down by group."""
    if by == "group":
        return Recall.__table__.join(QueuedFileRow.__table__, QueuedFileRow.id == Recall.file_id)
    return Recall.__table__


def _key(by: Dimension) -> ColumnElement[str]:
    if by == "drive":
        # drive_key in SQL
        return Recall.library + DRIVE_KEY_SEPARATOR + func.coalesce(Recall.drive, NO_DRIVE)
    if by == "tape":
        return Recall.library + TAPE_KEY_SEPARATOR + Recall.tape  # tape_key in SQL
    if by == "group":
        return QueuedFileRow.grp.expression
    return literal("", String())


# --- reads ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FinishedCount:
    """Recalls of one key that ended in one bucket with one outcome (STAGED, FAILED or CANCELLED)."""

    key: str
    bucket: int
    outcome: str
    recalls: int


@dataclass(frozen=True, slots=True)
class ReadTotal:
    """Reads of one key lying inside one bucket and inside the window: their time on the drive and bytes."""

    key: str
    bucket: int
    reads: int
    seconds: float
    bytes: int


@dataclass(frozen=True, slots=True)
class ReadSpan:
    """One read that crosses a bucket edge or an edge of the window."""

    key: str
    started: float  # epoch seconds
    finished: float
    bytes: int


def _of_library(column: Any, library: str | None) -> list[ColumnElement[bool]]:
    """One library's rows (docs/decisions.md §17), or (None) the whole site's."""
    return [] if library is None else [column == library]


def finished_counts(
    session: Session,
    since: datetime,
    until: datetime,
    width_s: int,
    by: Dimension,
    *,
    library: str | None = None,
) -> list[FinishedCount]:
    """Recalls that ended in [since, until), counted per key, bucket of their end and outcome."""
    key = _key(by).label("key")
    bucket = _bucket(Recall.finished_at, width_s).label("bucket")
    statement = (
        select(key, bucket, Recall.outcome, func.count())
        .select_from(_reads(by))
        .where(Recall.finished_at >= since, Recall.finished_at < until, Recall.outcome.is_not(None))
        .where(*_of_library(Recall.library, library))
        .group_by(key, bucket, Recall.outcome)
    )
    return [FinishedCount(k, int(b), str(o), int(n)) for k, b, o, n in session.execute(statement)]


def _read_started_and_finished() -> ColumnElement[bool]:
    return and_(Recall.started_at.is_not(None), Recall.finished_at.is_not(None))


def _inside(since: datetime, until: datetime, width_s: int) -> ColumnElement[bool]:
    return and_(
        Recall.started_at >= since,
        Recall.finished_at <= until,
        _bucket(Recall.started_at, width_s) == _bucket(Recall.finished_at, width_s),
    )


def read_totals(
    session: Session,
    since: datetime,
    until: datetime,
    width_s: int,
    by: Dimension,
    *,
    library: str | None = None,
) -> list[ReadTotal]:
    """Reads (FILE_STARTED to their end, whatever the outcome) inside one bucket and the window, summed."""
    key = _key(by).label("key")
    bucket = _bucket(Recall.started_at, width_s).label("bucket")
    seconds = func.sum(epoch_seconds(Recall.finished_at) - epoch_seconds(Recall.started_at))
    statement = (
        select(key, bucket, func.count(), seconds, func.sum(Recall.bytes))
        .select_from(_reads(by))
        .where(_read_started_and_finished(), _inside(since, until, width_s))
        .where(*_of_library(Recall.library, library))
        .group_by(key, bucket)
    )
    return [
        ReadTotal(k, int(b), int(n), float(s or 0.0), int(nbytes or 0))
        for k, b, n, s, nbytes in session.execute(statement)
    ]


def read_spans(
    session: Session,
    since: datetime,
    until: datetime,
    width_s: int,
    by: Dimension,
    *,
    library: str | None = None,
) -> list[ReadSpan]:
    """The reads overlapping [since, until) that `read_totals` leaves out, one row each."""
    statement = (
        select(_key(by), epoch_seconds(Recall.started_at), epoch_seconds(Recall.finished_at), Recall.bytes)
        .select_from(_reads(by))
        .where(
            _read_started_and_finished(),
            Recall.started_at < until,
            Recall.finished_at > since,
            ~_inside(since, until, width_s),
            *_of_library(Recall.library, library),
        )
    )
    return [ReadSpan(k, float(s), float(f), int(n)) for k, s, f, n in session.execute(statement)]


# --- mounts -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MountSession:
    """One mount as the adapter reported it, with the reads that started while it lasted."""

    id: int
    library: str
    tape: str
    drive: str  # NO_DRIVE when the adapter named none
    mounted_at: datetime
    unmounted_at: datetime | None  # None: still mounted
    files: int  # files staged from it (counted by completion)
    bytes: int
    reads: int  # reads started while it was mounted, whatever their outcome
    reading_s: float  # their time from FILE_STARTED to their end (reads still going: not counted)
    first_submitted_at: datetime | None  # earliest hand-over to the library of a file it read


def mount_sessions(
    session: Session, since: datetime, until: datetime, library: str | None = None
) -> list[MountSession]:
    """Mounts overlapping [since, until) (of `library`), oldest first, each with the reads that started
    during it."""
    overlaps = and_(
        Mount.mounted_at < until,
        or_(Mount.unmounted_at.is_(None), Mount.unmounted_at > since),
        *_of_library(Mount.library, library),
    )
    earliest = select(func.min(Mount.mounted_at)).where(overlaps).scalar_subquery()
    read_s = case(
        (
            Recall.finished_at.is_not(None),
            epoch_seconds(Recall.finished_at) - epoch_seconds(Recall.started_at),
        ),
        else_=0.0,
    )
    during = and_(
        Recall.library == Mount.library,  # a tape is (library, tape): docs/decisions.md §17
        Recall.tape == Mount.tape,
        or_(Mount.drive.is_(None), Recall.drive == Mount.drive),
        Recall.started_at >= Mount.mounted_at,
        or_(Mount.unmounted_at.is_(None), Recall.started_at <= Mount.unmounted_at),
        # keeps the join to the recalls of the window's mounts (and lets PostgreSQL use the index)
        or_(Recall.finished_at.is_(None), Recall.finished_at >= earliest),
    )
    # the reads summed per mount id alone (a narrow row to sort or hash), then joined to the mounts' columns
    per_mount = (
        select(
            Mount.id.label("mount_id"),
            func.count(Recall.id).label("reads"),
            func.sum(read_s).label("reading_s"),
            func.min(Recall.submitted_at).label("first_submitted_at"),
        )
        .join(Recall, during)
        .where(overlaps)
        .group_by(Mount.id)
        .subquery()
    )
    statement = (
        select(
            Mount.id,
            Mount.library,
            Mount.tape,
            func.coalesce(Mount.drive, NO_DRIVE),
            Mount.mounted_at,
            Mount.unmounted_at,
            Mount.files,
            Mount.bytes,
            func.coalesce(per_mount.c.reads, 0),
            func.coalesce(per_mount.c.reading_s, 0.0),
            per_mount.c.first_submitted_at,
        )
        .outerjoin(per_mount, per_mount.c.mount_id == Mount.id)
        .where(overlaps)
        .order_by(Mount.mounted_at, Mount.id)
    )
    return [
        MountSession(
            id=int(row[0]),
            library=row[1],
            tape=row[2],
            drive=row[3],
            mounted_at=row[4],
            unmounted_at=row[5],
            files=int(row[6]),
            bytes=int(row[7]),
            reads=int(row[8]),
            reading_s=float(row[9]),
            first_submitted_at=row[10],
        )
        for row in session.execute(statement)
    ]


def history_began(session: Session) -> datetime | None:
    """When the recorded tape history begins: the first mount, or the first read's end when that is earlier
    (an adapter that reports reads but no mounts). One statement of two index look-ups (`mounts.mounted_at`,
    `recalls.finished_at`), whatever the history's length; None before any."""
    first_mount = select(func.min(Mount.mounted_at)).scalar_subquery()
    first_read = select(func.min(Recall.finished_at)).scalar_subquery()
    moments = session.execute(select(first_mount, first_read)).one()
    return min((moment for moment in moments if moment is not None), default=None)


# --- requests ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestedFile:
    """One requester's file: its request's group and arrival, and when that requester got its answer."""

    group: str
    created: float  # epoch seconds
    finished: float | None  # None: still waiting
    state: str  # the link's state: PENDING, COMPLETED, FAILED, CANCELLED


def requested_files(
    session: Session, since: datetime, until: datetime, library: str | None = None
) -> list[RequestedFile]:
    """Every requester's files that were waiting at some time in [since, until) (of `library`'s files)."""
    statement = (
        select(
            StageRequest.grp,
            epoch_seconds(StageRequest.created_at),
            epoch_seconds(RequestFile.finished_at),
            RequestFile.state,
        )
        .join(StageRequest, StageRequest.id == RequestFile.request_id)
        .where(
            *(
                []
                if library is None
                else [
                    RequestFile.file_id.in_(select(QueuedFileRow.id).where(QueuedFileRow.library == library))
                ]
            )
        )
        .where(
            StageRequest.created_at < until,
            or_(RequestFile.finished_at.is_(None), RequestFile.finished_at >= since),
            # a pending link has no end yet; an ended one always has its time
            or_(RequestFile.finished_at.is_not(None), RequestFile.state == LinkState.PENDING.value),
        )
    )
    return [
        RequestedFile(g, float(c), None if f is None else float(f), s)
        for g, c, f, s in session.execute(statement)
    ]

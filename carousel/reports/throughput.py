"""Throughput and efficiency per bucket: of the whole library, per drive and per tape (each named with its
library), per group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from carousel.db import report_queries as q
from carousel.domain.planning import LibraryCosts
from carousel.reports.table import Column, Report, Value
from carousel.reports.tally import Tally, tally
from carousel.reports.window import Window

BOUNDS = (
    Column("start", "UTC time", "start of the bucket (the window's start for the first)"),
    Column("end", "UTC time", "end of the bucket, excluded (the window's end for the last)"),
)
COUNTS = (
    Column("mounts", "count", "MOUNTED events in the bucket"),
    Column("files", "count", "recalls that ended on disk (STAGED) in the bucket"),
    Column("failed", "count", "recalls that ended FAILED in the bucket (each failed read of a retried file)"),
)
BYTES = (
    Column("bytes", "bytes", "bytes read in the bucket; a read over a bucket edge is shared by time"),
    Column("bytes_per_s", "bytes/s", "bytes / length of the bucket"),
)
DRIVE_TIME = (
    Column("mounted_s", "s", "drive time with a tape mounted (MOUNTED to UNMOUNTED), summed over drives"),
    Column(
        "reading_s", "s", "drive time reading: each read from FILE_STARTED (positioning begins) to its end"
    ),
    Column(
        "idle_mounted_s",
        "s",
        "mounted_s - reading_s: mounted but not reading (waiting for work, rewind, unload)",
    ),
    Column("efficiency", "ratio", "drive efficiency: reading_s / mounted_s"),
    Column(
        "reading_bytes_per_s", "bytes/s", "bytes / reading_s: the rate while reading, positioning included"
    ),
    Column("files_per_mount", "count", "files staged by the mounts of the bucket / mounts"),
    Column(
        "mount_wait_s", "s", "mean over the bucket's mounts of: first hand-over of a file it read -> MOUNTED"
    ),
)
ESTIMATES = (
    Column("transfer_s", "s", "estimated: bytes / the library's published native rate"),
    Column("positioning_s", "s", "estimated: reading_s - transfer_s (locate and per-file overhead)"),
    Column(
        "transfer_efficiency",
        "ratio",
        "estimated: transfer_s / (mounted_s + mounts x the published mount time)",
    ),
)
# the library holding a tape: the same tape ID in two libraries is two tapes (docs/decisions.md §17)
LIBRARY_COLUMN = Column("library", "", "the library holding the tape (default: the one library of a site)")
# and a drive: the same drive name in two libraries is two drives
DRIVE_LIBRARY_COLUMN = Column(
    "library", "", "the library holding the drive (default: the one library of a site)"
)
GROUP_READS = (
    Column("files", "count", "recalls of the group's files that ended on disk in the bucket"),
    Column("failed", "count", "recalls of the group's files that ended FAILED in the bucket"),
    Column("cancelled", "count", "recalls of the group's files that ended CANCELLED in the bucket"),
    *BYTES,
    Column("reading_s", "s", "drive time reading the group's files"),
    Column("reading_share", "ratio", "reading_s / the library's reading_s in the bucket"),
    Column("reading_bytes_per_s", "bytes/s", "bytes / reading_s"),
)

COST_NOTE = (
    "transfer_s, positioning_s and transfer_efficiency are estimates from the library's published costs; "
    "the history records when a read started positioning and when it ended, not when the transfer began"
)
NO_COST_NOTE = "the library publishes no costs: transfer and positioning cannot be told apart (columns empty)"


def _ratio(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _drive_time(one: Tally, costs: LibraryCosts | None) -> tuple[Value, ...]:
    transfer = one.bytes / costs.rate_bytes_per_s if costs is not None else None
    busy = one.mounted_s + one.mounts * costs.mount_s if costs is not None else 0.0
    return (
        round(one.mounted_s, 3),
        round(one.reading_s, 3),
        round(one.mounted_s - one.reading_s, 3) if one.mounted_s > 0 else None,
        _round(_ratio(one.reading_s, one.mounted_s), 4),
        _round(_ratio(one.bytes, one.reading_s), 1),
        _round(_ratio(one.files_of_mounts, one.mounts), 2),
        _round(_ratio(one.mount_wait_s, one.mounts_waited), 3),
        _round(transfer, 3),
        _round(max(one.reading_s - transfer, 0.0) if transfer is not None else None, 3),
        _round(_ratio(transfer, busy) if transfer is not None else None, 4),
    )


def _bytes(one: Tally, span_s: float) -> tuple[Value, ...]:
    return (round(one.bytes), round(one.bytes / span_s, 1))


def _notes(costs: LibraryCosts | None) -> tuple[str, ...]:
    return (COST_NOTE,) if costs is not None else (NO_COST_NOTE,)


@dataclass(frozen=True, slots=True)
class Cell:
    """One bucket of one key: what a row is made from."""

    index: int
    start: datetime
    end: datetime
    key: str
    tally: Tally

    @property
    def span_s(self) -> float:
        return (self.end - self.start).total_seconds()


def _rows(
    window: Window,
    tallies: dict[tuple[str, int], Tally],
    keys: list[str],
    row: Callable[[Cell], tuple[Value, ...]],
) -> list[tuple[Value, ...]]:
    """A row per bucket and key that saw anything; with one key (the library), a row per bucket."""
    out: list[tuple[Value, ...]] = []
    for index, (start, end) in enumerate(window.bucket_bounds()):
        for key in keys:
            one = tallies.get((key, index))
            if one is not None or len(keys) == 1:
                out.append(row(Cell(index, start, end, key, one or Tally())))
    return out


def library_report(session: Session, window: Window, now: datetime, costs: LibraryCosts | None) -> Report:
    tallies = tally(session, window, now, "library")

    def row(cell: Cell) -> tuple[Value, ...]:
        one = cell.tally
        counts = (one.mounts, one.files, one.failed)
        return (cell.start, cell.end, *counts, *_bytes(one, cell.span_s), *_drive_time(one, costs))

    return Report(
        kind="library",
        title="Library throughput and drive efficiency",
        window=window,
        generated_at=now,
        columns=(*BOUNDS, *COUNTS, *BYTES, *DRIVE_TIME, *ESTIMATES),
        rows=_rows(window, tallies, [""], row),
        notes=_notes(costs),
    )


def _keyed_report(
    session: Session,
    window: Window,
    now: datetime,
    costs: LibraryCosts | None,
    *,
    by: q.Dimension,
    key_columns: tuple[Column, ...],
    title: str,
) -> Report:
    tallies = tally(session, window, now, by)
    remounts = by == "tape"
    # a tape or a drive: its library, then its ID or name (the rows sorted so)
    key_cells = q.split_tape_key if remounts else q.split_drive_key
    keys = sorted({key for key, _ in tallies}, key=key_cells)

    def row(cell: Cell) -> tuple[Value, ...]:
        one = cell.tally
        counts: tuple[Value, ...] = (one.mounts, one.files, one.failed)
        if remounts:
            counts = (*counts, max(one.mounts - 1, 0))
        cells = (*key_cells(cell.key), *counts, *_bytes(one, cell.span_s), *_drive_time(one, costs))
        return (cell.start, cell.end, *cells)

    counts = (*COUNTS, Column("remounts", "count", "mounts of the tape in the bucket beyond the first"))
    return Report(
        kind=f"{by}s",
        title=title,
        window=window,
        generated_at=now,
        columns=(*BOUNDS, *key_columns, *(counts if remounts else COUNTS), *BYTES, *DRIVE_TIME, *ESTIMATES),
        rows=_rows(window, tallies, keys, row),
        notes=_notes(costs),
    )


def drives_report(session: Session, window: Window, now: datetime, costs: LibraryCosts | None) -> Report:
    """A row per bucket and drive, a drive being (library, drive): the same name in two libraries is two
    rows."""
    columns = (
        DRIVE_LIBRARY_COLUMN,
        Column("drive", "", "the drive, as the library names it (empty: the library named none)"),
    )
    return _keyed_report(
        session,
        window,
        now,
        costs,
        by="drive",
        key_columns=columns,
        title="Throughput and efficiency per drive",
    )


def tapes_report(session: Session, window: Window, now: datetime, costs: LibraryCosts | None) -> Report:
    """A row per bucket and tape, a tape being (library, tape): the same ID in two libraries is two rows."""
    columns = (LIBRARY_COLUMN, Column("tape", "", "the tape's label"))
    return _keyed_report(
        session, window, now, costs, by="tape", key_columns=columns, title="Throughput and remounts per tape"
    )


def groups_report(session: Session, window: Window, now: datetime, costs: LibraryCosts | None) -> Report:
    tallies = tally(session, window, now, "group")
    library: dict[int, float] = {}
    for (_, index), one in tallies.items():
        library[index] = library.get(index, 0.0) + one.reading_s
    keys = sorted({key for key, _ in tallies})

    def row(cell: Cell) -> tuple[Value, ...]:
        one = cell.tally
        return (
            cell.start,
            cell.end,
            cell.key,
            one.files,
            one.failed,
            one.cancelled,
            *_bytes(one, cell.span_s),
            round(one.reading_s, 3),
            _round(_ratio(one.reading_s, library.get(cell.index, 0.0)), 4),
            _round(_ratio(one.bytes, one.reading_s), 1),
        )

    return Report(
        kind="groups",
        title="Reads per group",
        window=window,
        generated_at=now,
        columns=(
            *BOUNDS,
            Column("group", "", "the group of the file read (its oldest asker's)"),
            *GROUP_READS,
        ),
        rows=_rows(window, tallies, keys, row),
        notes=("groups share mounts, so a group has reading time but no mounts or mounted time of its own",),
    )

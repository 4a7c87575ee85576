"""Drive time, reads and mounts added up per bucket and key (drive, tape, group, or the whole library), from
the history the database returns. A tape's key and a drive's name their library too
(`report_queries.tape_key`, `drive_key`): the same tape ID in two libraries is two tapes, the same drive name
two drives. The definitions are in docs/operations.md; in short:

- a read is the time from its FILE_STARTED event (the drive starts positioning) to its end; its time and its
  bytes are shared between the buckets it overlaps in proportion to its time in each;
- files, failures and cancels count in the bucket where the recall ended;
- a mount session runs from its MOUNTED event to its UNMOUNTED one (a tape still mounted: to the end of the
  window or now, whichever comes first), shared between buckets the same way;
- a mount, and the files it read, count in the bucket where it was mounted; its mount wait is the time from
  the earliest hand-over to the library of a file it read to its MOUNTED event.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from carousel.db import report_queries as q
from carousel.reports.window import Window, epoch, spread


@dataclass(slots=True)
class Tally:
    files: int = 0  # recalls that ended STAGED
    failed: int = 0
    cancelled: int = 0
    reading_s: float = 0.0
    bytes: float = 0.0
    mounts: int = 0
    mounted_s: float = 0.0
    files_of_mounts: int = 0  # files staged by the mounts counted here
    mount_wait_s: float = 0.0  # summed over the mounts that have one
    mounts_waited: int = 0

    def add(self, other: Tally) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


Tallies = dict[tuple[str, int], Tally]  # (key, bucket) -> tally


def tally_reads(session: Session, window: Window, by: q.Dimension, tallies: Tallies) -> None:
    since, until, width = window.since, window.until, window.width_s
    library = window.library
    for count in q.finished_counts(session, since, until, width, by, library=library):
        tally = tallies[(count.key, window.row_of(count.bucket))]
        if count.outcome == "STAGED":
            tally.files += count.recalls
        elif count.outcome == "FAILED":
            tally.failed += count.recalls
        elif count.outcome == "CANCELLED":
            tally.cancelled += count.recalls
    for total in q.read_totals(session, since, until, width, by, library=library):
        tally = tallies[(total.key, window.row_of(total.bucket))]
        tally.reading_s += total.seconds
        tally.bytes += total.bytes
    edges = window.edges
    for span in q.read_spans(session, since, until, width, by, library=library):
        duration = span.finished - span.started
        if duration <= 0:  # an instant read: all of it where it ended
            row = window.row_at(span.finished)
            if row is not None:
                tallies[(span.key, row)].bytes += span.bytes
            continue
        for row, seconds in spread(span.started, span.finished, edges):
            tally = tallies[(span.key, row)]
            tally.reading_s += seconds
            tally.bytes += span.bytes * seconds / duration


def mount_key(mount: q.MountSession, by: q.Dimension) -> str:
    if by == "tape":
        return q.tape_key(mount.library, mount.tape)
    return q.drive_key(mount.library, mount.drive) if by == "drive" else ""


def tally_mounts(
    mounts: list[q.MountSession], window: Window, now: datetime, by: q.Dimension, tallies: Tallies
) -> None:
    edges = window.edges
    open_until = epoch(min(now, window.until))
    for mount in mounts:
        key = mount_key(mount, by)
        start = epoch(mount.mounted_at)
        end = epoch(mount.unmounted_at) if mount.unmounted_at is not None else open_until
        for row, seconds in spread(start, end, edges):
            tallies[(key, row)].mounted_s += seconds
        mounted_in = window.row_at(start)
        if mounted_in is None:
            continue
        tally = tallies[(key, mounted_in)]
        tally.mounts += 1
        tally.files_of_mounts += mount.files
        wait = mount_wait_s(mount)
        if wait is not None:
            tally.mount_wait_s += wait
            tally.mounts_waited += 1


def mount_wait_s(mount: q.MountSession) -> float | None:
    """From the earliest hand-over of a file it read to the MOUNTED event; None when it read nothing, or
    when that file was handed over after the mount (the tape was mounted for other work)."""
    if mount.first_submitted_at is None or mount.first_submitted_at > mount.mounted_at:
        return None
    return (mount.mounted_at - mount.first_submitted_at).total_seconds()


def tally(session: Session, window: Window, now: datetime, by: q.Dimension) -> Tallies:
    """Everything the throughput reports need, per (key, bucket); a group has no mounts of its own."""
    tallies: Tallies = defaultdict(Tally)
    tally_reads(session, window, by, tallies)
    if by != "group":
        mounts = q.mount_sessions(session, window.since, window.until, window.library)
        tally_mounts(mounts, window, now, by, tallies)
    return tallies


def totals_by_key(tallies: Tallies) -> dict[str, Tally]:
    """The window's totals per key (every bucket added up)."""
    out: dict[str, Tally] = defaultdict(Tally)
    for (key, _), one in tallies.items():
        out[key].add(one)
    return dict(out)

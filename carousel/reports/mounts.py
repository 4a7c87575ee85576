"""Mount sessions one by one, and remounts: the same tape mounted again within a bucket (a day by default)."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime

from sqlalchemy.orm import Session

from carousel.db import report_queries as q
from carousel.domain.planning import LibraryCosts
from carousel.reports.table import Column, Report, Value
from carousel.reports.tally import mount_wait_s
from carousel.reports.throughput import BOUNDS, COST_NOTE, LIBRARY_COLUMN, NO_COST_NOTE
from carousel.reports.window import Window

MOUNT_COLUMNS = (
    Column("mount", "", "the mount's id in the history"),
    LIBRARY_COLUMN,
    Column("tape", "", "the tape's label"),
    Column("drive", "", "the drive (empty: the library named none)"),
    Column("mounted_at", "UTC time", "the MOUNTED event: the tape is loaded and ready"),
    Column("unmounted_at", "UTC time", "the UNMOUNTED event (empty: still mounted)"),
    Column("mounted_s", "s", "unmounted_at - mounted_at (still mounted: until now)"),
    Column("files", "count", "files staged from this mount"),
    Column("bytes", "bytes", "bytes staged from this mount"),
    Column("reads", "count", "reads started while mounted, whatever their outcome"),
    Column("reading_s", "s", "their time from FILE_STARTED to their end (positioning included)"),
    Column("idle_mounted_s", "s", "mounted_s - reading_s: waiting for work, rewind and unload"),
    Column("efficiency", "ratio", "reading_s / mounted_s"),
    Column("mount_wait_s", "s", "first hand-over to the library of a file it read -> MOUNTED"),
    Column("transfer_s", "s", "estimated: bytes / the library's published native rate"),
    Column("positioning_s", "s", "estimated: reading_s - transfer_s (locate and per-file overhead)"),
)

REMOUNT_COLUMNS = (
    *BOUNDS,
    Column("tapes_mounted", "count", "distinct tapes (library, tape) with a MOUNTED event in the bucket"),
    Column("mounts", "count", "MOUNTED events in the bucket"),
    Column("remounts", "count", "mounts beyond each tape's first in the bucket: mounts - tapes_mounted"),
    Column("tapes_remounted", "count", "tapes mounted more than once in the bucket"),
    Column("most_mounts", "count", "the most mounts of one tape in the bucket"),
    Column("most_mounted_tape", "", "that tape (the first label of a tie, by library then label)"),
    Column("most_mounted_library", "", "the library holding that tape"),
)


def _seconds(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def mounts_report(session: Session, window: Window, now: datetime, costs: LibraryCosts | None) -> Report:
    rows: list[tuple[Value, ...]] = []
    for mount in q.mount_sessions(session, window.since, window.until, window.library):
        end = mount.unmounted_at or now
        mounted_s = max((end - mount.mounted_at).total_seconds(), 0.0)
        transfer = mount.bytes / costs.rate_bytes_per_s if costs is not None else None
        rows.append(
            (
                mount.id,
                mount.library,
                mount.tape,
                mount.drive,
                mount.mounted_at,
                mount.unmounted_at,
                round(mounted_s, 3),
                mount.files,
                mount.bytes,
                mount.reads,
                round(mount.reading_s, 3),
                round(mounted_s - mount.reading_s, 3),
                round(mount.reading_s / mounted_s, 4) if mounted_s > 0 else None,
                _seconds(mount_wait_s(mount)),
                _seconds(transfer),
                _seconds(max(mount.reading_s - transfer, 0.0) if transfer is not None else None),
            )
        )
    return Report(
        kind="mounts",
        title="Mount sessions",
        window=window,
        generated_at=now,
        columns=MOUNT_COLUMNS,
        rows=rows,
        notes=(
            "one row per mount overlapping the window, with its whole session",
            COST_NOTE if costs is not None else NO_COST_NOTE,
        ),
    )


def remounts_report(session: Session, window: Window, now: datetime, costs: LibraryCosts | None) -> Report:
    per_bucket: dict[int, Counter[tuple[str, str]]] = defaultdict(Counter)  # (library, tape) -> mounts
    for mount in q.mount_sessions(session, window.since, window.until, window.library):
        row = window.row_at(mount.mounted_at.timestamp())
        if row is not None:
            per_bucket[row][(mount.library, mount.tape)] += 1
    rows: list[tuple[Value, ...]] = []
    for index, (start, end) in enumerate(window.bucket_bounds()):
        tapes = per_bucket.get(index, Counter())
        mounts = sum(tapes.values())
        # most_common keeps first-seen order on ties; sort the labels first so a tie names the first label
        top = Counter(dict(sorted(tapes.items()))).most_common(1)
        rows.append(
            (
                start,
                end,
                len(tapes),
                mounts,
                mounts - len(tapes),
                sum(1 for n in tapes.values() if n > 1),
                top[0][1] if top else 0,
                top[0][0][1] if top else None,
                top[0][0][0] if top else None,
            )
        )
    return Report(
        kind="remounts",
        title="Remounts of the same tape",
        window=window,
        generated_at=now,
        columns=REMOUNT_COLUMNS,
        rows=rows,
        notes=("a mount counts in the bucket of its MOUNTED event",),
    )

"""The reports by name, and the one way to build any of them: `build_report(kind, session, window, …)`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from carousel.domain.errors import NotFound
from carousel.domain.planning import LibraryCosts
from carousel.reports.mounts import mounts_report, remounts_report
from carousel.reports.queue_age import queue_age_report
from carousel.reports.table import Report
from carousel.reports.throughput import drives_report, groups_report, library_report, tapes_report
from carousel.reports.window import Bucket, Window

Builder = Callable[[Session, Window, datetime, LibraryCosts | None], Report]


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    description: str
    build: Builder
    default_bucket: Bucket = Bucket.HOUR


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            "library",
            "per bucket: mounts, files, bytes/s, drive time, efficiency, files per mount",
            library_report,
        ),
        Kind("drives", "per bucket and drive: the library's figures, drive by drive", drives_report),
        Kind("tapes", "per bucket and tape: mounts, remounts, files per mount, bytes", tapes_report),
        Kind("groups", "per bucket and group: files, bytes, reading time and its share", groups_report),
        Kind(
            "mounts",
            "per mount session: times, files, bytes, reading and idle time, mount wait",
            mounts_report,
        ),
        Kind("remounts", "per bucket: tapes mounted more than once", remounts_report, Bucket.DAY),
        Kind("queue-age", "per bucket and group: age percentiles of waiting files, waits", queue_age_report),
    )
}


def kind_named(name: str) -> Kind:
    kind = KINDS.get(name)
    if kind is None:
        raise NotFound(f"no report {name!r}: the reports are {', '.join(KINDS)}", field="kind")
    return kind


def build_report(
    name: str, session: Session, window: Window, now: datetime, costs: LibraryCosts | None = None
) -> Report:
    """Report `name` over the window. `costs` (published by the library) adds the transfer and positioning
    estimates; `now` closes the sessions of tapes still mounted."""
    return kind_named(name).build(session, window, now, costs)

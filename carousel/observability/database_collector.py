"""Figures read from the database when Prometheus scrapes: the queue by state and group (one GROUP BY over
the files not yet ended), the tapes the site's libraries have work on, the files that wait for a library the
settings no longer name (no cycle reads them: carousel.cli.strays) and the drive efficiency over the last
hour (the reports' own arithmetic over that hour's reads and mounts). A database that does not answer gives
`carousel_database_up 0` and no queue figures, never a failed scrape."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from datetime import timedelta

import structlog
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.library_queries import StrandedWork, waiting_outside
from carousel.db.overview_queries import QueueCell, count_tapes_with_work, queue_by_state_and_group
from carousel.db.report_queries import split_drive_key
from carousel.domain.clock import Clock
from carousel.domain.states import FILE_WAITING
from carousel.reports.tally import Tally, tally, totals_by_key
from carousel.reports.window import Bucket, make_window

log = structlog.get_logger(__name__)

EFFICIENCY_WINDOW = timedelta(hours=1)


def _families() -> dict[str, GaugeMetricFamily]:
    return {
        "up": GaugeMetricFamily("carousel_database_up", "1 when the database answered this scrape, else 0"),
        "files": GaugeMetricFamily(
            "carousel_queue_files", "Files not yet ended, by state and group", labels=["state", "group"]
        ),
        "bytes": GaugeMetricFamily(
            "carousel_queue_bytes",
            "Bytes of the files not yet ended (known sizes), by state and group",
            labels=["state", "group"],
        ),
        "oldest": GaugeMetricFamily(
            "carousel_queue_oldest_age_seconds",
            "Age of the oldest file waiting for the scheduler (UNRESOLVED or QUEUED), by group",
            labels=["group"],
        ),
        "tapes": GaugeMetricFamily(
            "carousel_tapes_with_work", "Tapes of the site's libraries with files queued or in flight"
        ),
        "stranded": GaugeMetricFamily(
            "carousel_stranded_files",
            "Files queued or in flight for a library the settings no longer name: no cycle reads them",
            labels=["library", "kind"],
        ),
        "drive": GaugeMetricFamily(
            "carousel_drive_efficiency_ratio",
            "Reading time / mounted time over the last hour, by library and drive",
            labels=["library", "drive"],
        ),
        "library": GaugeMetricFamily(
            "carousel_library_efficiency_ratio", "Reading time / mounted time over the last hour, all drives"
        ),
    }


class DatabaseCollector(Collector):
    def __init__(
        self, session_factory: sessionmaker[Session], clock: Clock, libraries: Collection[str] | None = None
    ) -> None:
        """`libraries`: the site's library names (None: every library's tapes, no stranded files)."""
        self._session_factory = session_factory
        self._clock = clock
        self._libraries = libraries

    def describe(self) -> Iterable[Metric]:
        return list(_families().values())

    def collect(self) -> Iterator[Metric]:
        families = _families()
        now = self._clock.now()
        try:
            with self._session_factory() as session:
                cells = queue_by_state_and_group(session)
                tapes = count_tapes_with_work(session, self._libraries)
                stranded = [] if self._libraries is None else waiting_outside(session, self._libraries)
                window = make_window(now - EFFICIENCY_WINDOW, now, Bucket.HOUR, now)
                drives = totals_by_key(tally(session, window, now, "drive"))
        except SQLAlchemyError as exc:
            log.warning("metrics: the database did not answer", error=str(exc))
            families["up"].add_metric([], 0)
            yield families["up"]
            return
        families["up"].add_metric([], 1)
        self._queue(families, cells, now.timestamp())
        families["tapes"].add_metric([], tapes)
        self._stranded(families["stranded"], stranded)
        library = Tally()
        for key, one in sorted(drives.items(), key=lambda item: split_drive_key(item[0])):
            library.add(one)
            if one.mounted_s > 0:  # a drive is (library, drive): the same name in two libraries is two
                families["drive"].add_metric(list(split_drive_key(key)), one.reading_s / one.mounted_s)
        if library.mounted_s > 0:
            families["library"].add_metric([], library.reading_s / library.mounted_s)
        yield from families.values()

    @staticmethod
    def _stranded(family: GaugeMetricFamily, stranded: list[StrandedWork]) -> None:
        for library in stranded:
            family.add_metric([library.library, "queued"], library.queued)
            family.add_metric([library.library, "in_flight"], library.in_flight)

    @staticmethod
    def _queue(families: dict[str, GaugeMetricFamily], cells: list[QueueCell], now_s: float) -> None:
        oldest: dict[str, float] = {}
        for cell in cells:
            labels = [cell.state.value, cell.group]
            families["files"].add_metric(labels, cell.files)
            families["bytes"].add_metric(labels, cell.bytes)
            if cell.state in FILE_WAITING:
                oldest[cell.group] = min(oldest.get(cell.group, now_s), cell.oldest.timestamp())
        for group, since in sorted(oldest.items()):
            families["oldest"].add_metric([group], max(now_s - since, 0.0))

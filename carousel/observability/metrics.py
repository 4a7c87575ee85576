"""The service's Prometheus metrics, in a registry of their own per process (or per app in tests), never the
client library's global default registry: several apps in one process keep apart.

`carousel api --workers N` runs N processes behind one port, and a scrape reaches one of them: each worker
writes its figures to files in a directory of the supervisor's (prometheus-client's multiprocess mode,
`PROMETHEUS_MULTIPROC_DIR`), and `/metrics` answers every worker's added up (counters and histograms summed,
gauges the one last set), so no scrape sees a counter go back.

Two kinds of figures:
- counted by this process as things happen: submissions (from the API), HTTP requests (from the request
  middleware) and, where a cycle runs, the cycles' figures (carousel.observability.cycle_metrics);
- read from the database at scrape time (`DatabaseCollector`): the queue by state and group, the tapes with
  work, the files waiting for a library the settings no longer name, and the drive efficiency over the last
  hour. These are the same whichever process is scraped.

Names and meanings are listed in docs/operations.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy.orm import Session, sessionmaker

from carousel.domain.clock import Clock
from carousel.observability.cycle_metrics import CycleMetrics
from carousel.observability.database_collector import DatabaseCollector
from carousel.scheduler.cycle import CycleReport
from carousel.webhooks.deliverer import DeliveryReport

MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus-client's: where processes write their figures
HTTP_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ServiceMetrics:
    def __init__(self, *, cycles: bool = True, libraries: Iterable[str] = ()) -> None:
        """`cycles`: this process runs the scheduler's cycle, and counts its figures (carousel.observability.
        cycle_metrics); an API process of its own does not. `libraries`: the site's library names."""
        self.registry = CollectorRegistry()
        r = self.registry
        self.connections_cut = Counter(
            "carousel_http_connections_cut",
            "Client connections the server answered and closed before any request reached the application",
            ["reason"],
            registry=r,
        )
        self.submissions = Counter(
            "carousel_submissions", "Stage requests accepted, by API", ["api"], registry=r
        )
        self.submitted_files = Counter(
            "carousel_submitted_files",
            "Distinct files named by accepted stage requests, by API",
            ["api"],
            registry=r,
        )
        self.http_requests = Counter(
            "carousel_http_requests", "HTTP requests answered", ["method", "route", "status"], registry=r
        )
        self.http_seconds = Histogram(
            "carousel_http_request_duration_seconds",
            "Time to answer an HTTP request",
            ["method", "route"],
            buckets=HTTP_BUCKETS_S,
            registry=r,
        )
        self._libraries = tuple(libraries)
        self.cycle = CycleMetrics(r, self._libraries) if cycles else None
        self._database: DatabaseCollector | None = None

    def watch_database(self, session_factory: sessionmaker[Session], clock: Clock) -> None:
        """Add the figures read from the database at scrape time (once; later calls change nothing)."""
        if self._database is None:
            self._database = DatabaseCollector(session_factory, clock, self._libraries or None)
            self.registry.register(self._database)

    def exposition(self) -> CollectorRegistry:
        """What a scrape answers: this registry; in multiprocess mode every process's figures, read from
        their files, and the database's."""
        directory = os.environ.get(MULTIPROCESS_DIR_ENV)
        if not directory:
            return self.registry
        every_process = CollectorRegistry()
        MultiProcessCollector(every_process, path=directory)  # type: ignore[no-untyped-call]
        if self._database is not None:
            every_process.register(self._database)
        return every_process

    def submitted(self, api: str, files: int) -> None:
        self.submissions.labels(api=api).inc()
        self.submitted_files.labels(api=api).inc(files)

    def observe_webhooks(self, report: DeliveryReport) -> None:
        if self.cycle is not None:
            self.cycle.observe_webhooks(report)

    def observe_cycle(self, report: CycleReport) -> None:
        if self.cycle is not None:
            self.cycle.observe_cycle(report)

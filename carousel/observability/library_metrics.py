"""Each library's figures, labelled `library` (docs/decisions.md §17): what its cycle handed over, the reads
its events ended, its mounts and bytes, its health and whether it stalled. A site of one library reports it
as `default`; the service-wide families (carousel.observability.metrics) keep the site's totals."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge

from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.scheduler.cycle import CycleReport
from hsm_adapters.base import Health

COMPLETION_OUTCOMES = ("staged", "failed", "cancelled")


class LibraryMetrics:
    def __init__(self, registry: CollectorRegistry, libraries: Iterable[str] = ()) -> None:
        """`libraries`: the site's library names, whose counters start at 0 (a series that first appears at
        its first count hides that count from Prometheus' rate and increase)."""
        r = registry
        self.handed_over = Counter(
            "carousel_library_files_handed_over",
            "Files handed to each library by the cycles",
            ["library"],
            registry=r,
        )
        self.completions = Counter(
            "carousel_library_completions",
            "Reads each library's events ended: staged (on disk), failed (for good), cancelled",
            ["library", "outcome"],
            registry=r,
        )
        self.mounts = Counter(
            "carousel_library_mounts",
            "Tapes each library mounted (MOUNTED events applied)",
            ["library"],
            registry=r,
        )
        self.bytes_read = Counter(
            "carousel_library_bytes_read",
            "Bytes each library staged (FILE_STAGED events)",
            ["library"],
            registry=r,
        )
        self.health = Gauge(
            "carousel_library_health",
            "Each library's health at the last cycle: 1 for its state, 0 for the others",
            ["library", "state"],
            registry=r,
            multiprocess_mode="mostrecent",
        )
        self.stalled = Gauge(
            "carousel_library_stalled",
            "1 while the library holds work and has made no progress for longer than its physics explain",
            ["library"],
            registry=r,
            multiprocess_mode="mostrecent",
        )
        for library in libraries:
            self.handed_over.labels(library=library)
            self.mounts.labels(library=library)
            self.bytes_read.labels(library=library)
            for outcome in COMPLETION_OUTCOMES:
                self.completions.labels(library=library, outcome=outcome)

    def observe(self, report: CycleReport) -> None:
        """A cycle this process led: each library's own report (a single library's is the report itself)."""
        for library, own in (report.libraries or {DEFAULT_LIBRARY: report}).items():
            self.handed_over.labels(library=library).inc(own.files_submitted)
            events = own.events
            if events is not None:
                self.completions.labels(library=library, outcome="staged").inc(events.staged)
                self.completions.labels(library=library, outcome="failed").inc(events.failed)
                self.completions.labels(library=library, outcome="cancelled").inc(events.cancelled)
                self.mounts.labels(library=library).inc(events.mounts)
                self.bytes_read.labels(library=library).inc(events.bytes_staged)
            self.stalled.labels(library=library).set(1 if own.stalled_since is not None else 0)
            if own.health is not None:
                for state in Health:
                    self.health.labels(library=library, state=state.value).set(
                        1 if state is own.health else 0
                    )

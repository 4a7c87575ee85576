"""The scheduler's figures: cycles, what they handed to the library and what came back, the library's health,
the disk buffer and webhook deliveries. Counted only in a process that runs a cycle (`carousel serve`,
`carousel scheduler`): an API process of its own would export them as zeros, which read as "nothing mounted".
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from carousel.observability.library_metrics import LibraryMetrics
from carousel.scheduler.cycle import CycleReport
from carousel.webhooks.deliverer import DeliveryReport
from hsm_adapters.base import Health

CYCLE_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class CycleMetrics:
    def __init__(self, registry: CollectorRegistry, libraries: Iterable[str] = ()) -> None:
        """`libraries`: the site's library names (their series start at 0)."""
        r = registry
        self.cycle_seconds = Histogram(
            "carousel_cycle_duration_seconds",
            "Wall time of one scheduling cycle this process led",
            buckets=CYCLE_BUCKETS_S,
            registry=r,
        )
        self.cycles = Counter(
            "carousel_cycles",
            "Scheduling cycles run, by whether this process held the leader lock",
            ["leader"],
            registry=r,
        )
        self.cycle_errors = Counter(
            "carousel_cycle_errors",
            "Library calls that failed during cycles (each is also logged)",
            registry=r,
        )
        self.handed_over = Counter(
            "carousel_files_handed_over", "Files handed to the library by the cycles", registry=r
        )
        self.completions = Counter(
            "carousel_completions",
            "Recalls that reached an end: staged (on disk), failed (for good), cancelled",
            ["outcome"],
            registry=r,
        )
        self.read_failures = Counter(
            "carousel_read_failures", "Failed reads the library reported, retried ones included", registry=r
        )
        self.mounts = Counter("carousel_mounts", "Tapes mounted (MOUNTED events applied)", registry=r)
        self.bytes_read = Counter(
            "carousel_bytes_read", "Bytes staged from tape (FILE_STAGED events)", registry=r
        )
        self.hsm_health = Gauge(
            "carousel_hsm_health",
            "The library's health at the last cycle: 1 for its state, 0 for the others",
            ["state"],
            registry=r,
            multiprocess_mode="mostrecent",
        )
        self.hsm_stalled = Gauge(
            "carousel_hsm_stalled",
            "1 while the library holds work and has made no progress for longer than its physics explain"
            " (carousel.scheduler.liveness), else 0",
            registry=r,
            multiprocess_mode="mostrecent",
        )
        self.read_timeouts = Counter(
            "carousel_read_timeouts",
            "Reads cancelled for running far longer than their physics (their attempt failed)",
            registry=r,
        )
        self.webhook_deliveries = Counter(
            "carousel_webhook_deliveries",
            "Webhook delivery attempts by outcome: delivered (2xx), retrying (failed, another to come), "
            "failed (for good), lost_lease (taken again by another deliverer meanwhile)",
            ["outcome"],
            registry=r,
        )
        self.buffer_bytes = Gauge(
            "carousel_buffer_bytes",
            "The disk buffer at the last cycle's snapshot: capacity, on_disk (pinned or not), pinned,"
            " reserved (files claimed or with the library), free (below the high watermark, now)",
            ["kind"],
            registry=r,
            multiprocess_mode="mostrecent",
        )
        self.buffer_waiting_files = Gauge(
            "carousel_buffer_waiting_files",
            "Queued files of tapes waiting for space in the disk buffer at the last cycle (buffer_full)",
            registry=r,
            multiprocess_mode="mostrecent",
        )
        self.buffer_evictions = Counter(
            "carousel_buffer_evictions",
            "Files evicted from the disk buffer: unpinned, least recently used first, to make room for a"
            " hand-over or at once on release (evict_on_release)",
            registry=r,
        )
        for outcome in ("delivered", "retrying", "failed", "lost_lease"):
            self.webhook_deliveries.labels(outcome=outcome)  # every series from the start, at 0
        self.libraries = LibraryMetrics(r, libraries)  # the same figures per library, labelled `library`

    def observe_webhooks(self, report: DeliveryReport) -> None:
        self.webhook_deliveries.labels(outcome="delivered").inc(report.delivered)
        self.webhook_deliveries.labels(outcome="retrying").inc(report.retrying)
        self.webhook_deliveries.labels(outcome="failed").inc(report.failed)
        self.webhook_deliveries.labels(outcome="lost_lease").inc(report.lost_lease)

    def observe_cycle(self, report: CycleReport) -> None:
        self.cycles.labels(leader=str(report.leader).lower()).inc()
        if not report.leader:
            return
        self.cycle_seconds.observe(report.elapsed_s)
        self.cycle_errors.inc(len(report.errors))
        self.handed_over.inc(report.files_submitted)
        staged = failed = cancelled = retried = mounts = 0
        bytes_read = 0
        if report.events is not None:
            events = report.events
            staged, failed, cancelled, retried = (
                events.staged,
                events.failed,
                events.cancelled,
                events.retried,
            )
            mounts, bytes_read = events.mounts, events.bytes_staged
        self.completions.labels(outcome="staged").inc(staged)
        # files the library said it does not hold fail in the cycle's lookups, not through events
        self.completions.labels(outcome="failed").inc(failed + report.not_on_tape)
        self.completions.labels(outcome="cancelled").inc(cancelled + report.cancelled)
        self.read_failures.inc(failed + retried)
        self.mounts.inc(mounts)
        self.bytes_read.inc(bytes_read)
        self.read_timeouts.inc(report.read_timeouts)
        self.hsm_stalled.set(1 if report.stalled_since is not None else 0)
        self._observe_buffer(report)
        self.libraries.observe(report)
        if report.health is not None:
            for state in Health:
                self.hsm_health.labels(state=state.value).set(1 if state is report.health else 0)

    def _observe_buffer(self, report: CycleReport) -> None:
        if report.buffer is not None:  # the upkeep's evictions: on release, or lifetimes over
            self.buffer_evictions.inc(report.buffer.evicted)
        buffer = report.buffer_space
        if buffer is None:
            return
        for kind, value in (
            ("capacity", buffer.capacity_bytes),
            ("on_disk", buffer.on_disk_bytes),
            ("pinned", buffer.pinned_bytes),
            ("reserved", buffer.reserved_bytes),
            ("free", buffer.free_bytes),
        ):
            self.buffer_bytes.labels(kind=kind).set(value)
        self.buffer_waiting_files.set(report.waiting_for_space)
        self.buffer_evictions.inc(report.evicted_files)

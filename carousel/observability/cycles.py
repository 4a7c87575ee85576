"""Each scheduling cycle with an id of its own in every log record it writes, its summary logged, and its
report counted in the metrics. Wraps `Cycle.run_once` for the runner; the cycle itself knows none of this."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

import structlog

from carousel.observability.metrics import ServiceMetrics
from carousel.scheduler.cycle import CycleReport

# The standard library's logger: silent below WARNING until configure_logging routes it (tests, embedding).
log = logging.getLogger(__name__)


def new_cycle_id() -> str:
    return uuid.uuid4().hex[:16]


def observed(run_once: Callable[[], CycleReport], metrics: ServiceMetrics) -> Callable[[], CycleReport]:
    """run_once, with `cycle_id` bound to its log records and its report counted and logged."""

    def run() -> CycleReport:
        with structlog.contextvars.bound_contextvars(cycle_id=new_cycle_id()):
            report = run_once()
            metrics.observe_cycle(report)
            _log(report)
        return report

    return run


def _log(report: CycleReport) -> None:
    if not report.leader:
        log.debug("cycle skipped: another instance holds the leader lock")
        return
    events = report.events
    fields = {
        "health": report.health.value if report.health is not None else None,
        "events": events.applied if events is not None else 0,
        "staged": events.staged if events is not None else 0,
        "failed": events.failed if events is not None else 0,
        "tapes_with_work": report.tapes_with_work,
        "claimed": report.claimed,
        "submitted": report.files_submitted,
        "batches": report.batches_submitted,
        "errors": len(report.errors),
        "elapsed_ms": round(report.elapsed_s * 1000, 1),
    }
    busy = report.claimed or report.files_submitted or report.errors or fields["events"]
    log.log(logging.INFO if busy else logging.DEBUG, "cycle", extra=fields)

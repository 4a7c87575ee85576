"""Runs the cycle on an interval in a background thread (APScheduler).

One run at a time (max_instances=1); runs missed while one was still going are folded into one (coalesce).
A cycle that raises is logged and the next one runs as planned: the scheduler outlives a bad cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import structlog
from apscheduler.schedulers.background import BackgroundScheduler

log = structlog.get_logger(__name__)

JOB_ID = "carousel-cycle"


class CycleRunner:
    def __init__(self, run_once: Callable[[], object], interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        self._run_once = run_once
        self.interval_s = interval_s
        self._scheduler: BackgroundScheduler | None = None

    @property
    def running(self) -> bool:
        return self._scheduler is not None and bool(self._scheduler.running)

    def start(self) -> None:
        if self.running:
            return
        scheduler = BackgroundScheduler(timezone=UTC)
        scheduler.add_job(
            self._tick,
            "interval",
            seconds=self.interval_s,
            id=JOB_ID,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,
            next_run_time=datetime.now(UTC),  # the first cycle at once, not one interval later
        )
        scheduler.start()
        self._scheduler = scheduler
        log.info("scheduler started", interval_s=self.interval_s)

    def stop(self, wait: bool = True) -> None:
        """Stops scheduling; with wait, returns after a cycle in progress has finished."""
        if self._scheduler is None:
            return
        self._scheduler.shutdown(wait=wait)
        self._scheduler = None
        log.info("scheduler stopped")

    def _tick(self) -> None:
        try:
            self._run_once()
        except Exception:
            log.exception("scheduling cycle failed")

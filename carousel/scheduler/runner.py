"""Runs the cycle on an interval in a background thread of its own.

A cycle starts every interval; one that outlasts it is followed at once by the next, the starts it missed
folded into that one (one line at INFO says so, instead of a "skipped" warning from a timer per missed
start). A cycle that raises is logged and the next one runs as planned: the scheduler outlives a bad cycle.
Side jobs (the webhook deliverer) run on intervals of their own (APScheduler), in threads of their own:
never in the cycle's way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from apscheduler.schedulers.background import BackgroundScheduler

log = structlog.get_logger(__name__)

JOB_ID = "carousel-cycle"


@dataclass(frozen=True, slots=True)
class SideJob:
    """Work beside the cycle, on its own interval: one run at a time, a failing run logged."""

    job_id: str
    run_once: Callable[[], object]
    interval_s: float
    close: Callable[[], None] | None = None  # called once the runner has stopped
    run_at_start: bool = False  # first run when the runner starts, not one interval later
    # True: a thread of its own runs the job again interval_s after each run ends, instead of APScheduler's
    # fixed interval (a job that may outlast a short interval then waits, with no "skipped" warnings)
    loop: bool = False


class CycleRunner:
    def __init__(
        self,
        run_once: Callable[[], object],
        interval_s: float,
        side_jobs: Sequence[SideJob] = (),
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`monotonic`: the clock the cycle's starts are kept by (a test's, to outlast an interval)."""
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        for job in side_jobs:
            if job.interval_s <= 0:
                raise ValueError(f"{job.job_id}: interval_s must be positive, got {job.interval_s}")
        self._run_once = run_once
        self.interval_s = interval_s
        self.side_jobs = tuple(side_jobs)
        self._monotonic = monotonic
        self.overruns = 0  # cycles that outlasted the interval
        self._scheduler: BackgroundScheduler | None = None
        self._loops: list[threading.Thread] = []
        self._stop_loops = threading.Event()

    @property
    def running(self) -> bool:
        return self._scheduler is not None and bool(self._scheduler.running)

    def start(self) -> None:
        if self.running:
            return
        scheduler = BackgroundScheduler(timezone=UTC)
        self._stop_loops.clear()
        cycles = threading.Thread(target=self._cycle_loop, name=JOB_ID, daemon=True)
        cycles.start()
        self._loops.append(cycles)
        for job in self.side_jobs:
            if job.loop:
                self._start_loop(job)
                continue
            first: dict[str, datetime] = {"next_run_time": datetime.now(UTC)} if job.run_at_start else {}
            scheduler.add_job(
                _logged(job),
                "interval",
                seconds=job.interval_s,
                id=job.job_id,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=None,
                **first,
            )
        scheduler.start()
        self._scheduler = scheduler
        log.info("scheduler started", interval_s=self.interval_s)

    def stop(self) -> None:
        """Stops scheduling; returns after a cycle (and side job) in progress has finished."""
        if self._scheduler is None:
            return
        self._scheduler.shutdown(wait=True)
        self._scheduler = None
        self._stop_loops.set()
        for thread in self._loops:
            thread.join()
        self._loops.clear()
        for job in self.side_jobs:
            if job.close is not None:
                job.close()
        log.info("scheduler stopped")

    def _start_loop(self, job: SideJob) -> None:
        run = _logged(job)

        def loop() -> None:
            if job.run_at_start:
                run()
            while not self._stop_loops.wait(job.interval_s):
                run()

        thread = threading.Thread(target=loop, name=job.job_id, daemon=True)
        thread.start()
        self._loops.append(thread)

    def _cycle_loop(self) -> None:
        due = self._monotonic()  # the first cycle at once, not one interval later
        while not self._stop_loops.wait(max(0.0, due - self._monotonic())):
            started = self._monotonic()
            self._tick()
            ended = self._monotonic()
            due = started + self.interval_s
            if ended > due:
                self.overruns += 1
                log.info("cycle outlasted its interval", elapsed_s=round(ended - started, 3))
                due = ended

    def _tick(self) -> None:
        try:
            self._run_once()
        except Exception:
            log.exception("scheduling cycle failed")


def _logged(job: SideJob) -> Callable[[], None]:
    def run() -> None:
        try:
            job.run_once()
        except Exception:
            log.exception("side job failed", job=job.job_id)

    return run

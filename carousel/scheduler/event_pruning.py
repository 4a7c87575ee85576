"""Keeps applied_events from growing without end: completion records every event it applies (three or so per
file), and a busy site applies millions a day.

A row is needed only while its event could be delivered again: a poll whose commit was lost and is applied
anew, moments later, by the same process (each process has a stream of its own, carousel.scheduler.cycle).
Rows of events older than the retention (a week by default) are deleted in bounded batches, so one run holds
no lock for long and a backlog of months is worked off over a few runs. Run beside the cycle, hourly; every
instance may run it (a delete of rows already gone deletes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.db import completion_queries as q
from carousel.db.engine import run_transaction
from carousel.domain.clock import Clock

log = structlog.get_logger(__name__)

INTERVAL_S = 3600.0  # how often the job runs beside the cycle
BATCH_ROWS = 10_000  # rows deleted per transaction
BATCHES_PER_RUN = 20  # at most 200,000 rows a run; more wait for the next run


@dataclass(frozen=True, slots=True)
class PruneReport:
    deleted: int
    more_left: bool  # stopped at BATCHES_PER_RUN with old rows still there


class AppliedEventsPruner:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        clock: Clock,
        retention_s: float,
        *,
        batch_rows: int = BATCH_ROWS,
        batches_per_run: int = BATCHES_PER_RUN,
    ) -> None:
        self.session_factory = session_factory
        self.clock = clock
        self.retention = timedelta(seconds=retention_s)
        self.batch_rows = batch_rows
        self.batches_per_run = batches_per_run

    def run_once(self) -> PruneReport:
        before = self.clock.now() - self.retention
        deleted = 0
        for _ in range(self.batches_per_run):
            batch = run_transaction(
                self.session_factory, lambda session: q.prune_applied(session, before, self.batch_rows)
            )
            deleted += batch
            if batch < self.batch_rows:
                more_left = False
                break
        else:
            more_left = True
        if deleted:
            log.info("applied events pruned", deleted=deleted, before=before.isoformat(), more_left=more_left)
        return PruneReport(deleted, more_left)

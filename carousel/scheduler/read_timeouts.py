"""Reads that hang are ended: a file whose read started (FILE_STARTED applied) and has run far longer than its
physics says is cancelled at the HSM, and its attempt fails with "read timed out after N s".

A read may take `factor` × its size at the library's rate (the published cost figures) plus `margin_s`
(locate, overhead, a slow drive). Past that, the cycle asks the HSM to cancel it. Where the HSM let the file
go (cancelled, or never had it), the attempt fails as a read failure the library might have reported:
completion applies a FILE_FAILED event of our own (its own event stream, recorded once like any other). It
counts the attempt, retries the file after the back-off on a later mount while attempts remain, then fails
it with the reason. Where the HSM answers that the read goes on, the file stays with it (a new attempt under
a new batch key must wait until the HSM let the old one go: carousel.scheduler.inflight) and is asked about
again at the next check.

Checked at most once in every slot of `margin_s / 10` seconds (on the epoch's grid). Without cost figures (a
back-end that publishes none) there is no read time to measure against, and reads are not timed out.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.completion.apply import apply_events
from carousel.db.engine import run_transaction
from carousel.db.read_timeout_queries import reads_started_before
from carousel.domain.clock import Clock
from carousel.domain.completion import RetryRule
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.planning import LibraryCosts
from carousel.domain.queue import Reading
from hsm_adapters.base import Event, EventKind, HsmAdapter

log = structlog.get_logger(__name__)

CHECKED_PER_RUN = 1_000
STREAM_SUFFIX = ":rt"  # applied_events.adapter of the timeouts' own events (at most 64 characters)


@dataclass(slots=True)
class TimedOut:
    failed: int = 0  # attempts ended with "read timed out" (retried or failed for good)
    still_reading: int = 0  # overdue, but the HSM says the read goes on
    errors: list[str] = field(default_factory=list)


def read_limit_s(size_bytes: int, costs: LibraryCosts, factor: float, margin_s: float) -> float:
    return factor * costs.read_s(size_bytes) + margin_s


def timed_out_reason(elapsed_s: float, limit_s: float) -> str:
    return f"read timed out after {elapsed_s:.0f} s (its limit was {limit_s:.0f} s)"


ReadsStartedBefore = Callable[[datetime, int], list[Reading]]  # (started before, at most) -> oldest first
FailAttempts = Callable[[list[Event]], int]  # applies FILE_FAILED events; how many attempts they ended


class ReadTimeouts:
    """The check, over any queue: the service's database (`database_queue`) or the replay's memory store."""

    def __init__(
        self,
        reads_started_before: ReadsStartedBefore,
        fail_attempts: FailAttempts,
        adapter: HsmAdapter,
        clock: Clock,
        *,
        costs: LibraryCosts | None,
        factor: float,
        margin_s: float,
    ) -> None:
        if factor < 1 or margin_s <= 0:
            raise ValueError(f"bad read timeout: factor={factor} (>= 1), margin_s={margin_s} (> 0)")
        self.reads_started_before = reads_started_before
        self.fail_attempts = fail_attempts
        self.adapter = adapter
        self.clock = clock
        self.costs = costs
        self.factor = factor
        self.margin = timedelta(seconds=margin_s)
        self.check_every_s = margin_s / 10
        self._seq = itertools.count(1)
        self._checked_slot: int | None = None

    def limit_s(self, size_bytes: int) -> float | None:
        """How long a read of this size may take (None: the back-end publishes no costs to judge by)."""
        if self.costs is None:
            return None
        return read_limit_s(size_bytes, self.costs, self.factor, self.margin.total_seconds())

    def slot(self, at: datetime) -> int:
        """Checks run at most once per slot of check_every_s (on the epoch's grid, so a replay that skips
        quiet ticks checks in the same slots as the service)."""
        return math.floor(at.timestamp() / self.check_every_s)

    def deadline(self, reading: list[Reading]) -> datetime | None:
        """After this instant one of these reads is overdue (None: none can be judged)."""
        deadlines = [
            read.started_at + timedelta(seconds=limit)
            for read in reading
            if (limit := self.limit_s(read.size_bytes)) is not None
        ]
        return min(deadlines, default=None)

    def run(self) -> TimedOut:
        """Cancel overdue reads and fail their attempts. Call only while the library is online."""
        result = TimedOut()
        now = self.clock.now()
        slot = self.slot(now)
        if self.costs is None or (self._checked_slot is not None and slot <= self._checked_slot):
            return result
        self._checked_slot = slot
        overdue: list[tuple[Reading, float, float]] = []
        for read in self.reads_started_before(now - self.margin, CHECKED_PER_RUN):
            elapsed = (now - read.started_at).total_seconds()
            limit = self.limit_s(read.size_bytes)
            if limit is not None and elapsed > limit:
                overdue.append((read, elapsed, limit))
        if not overdue:
            return result
        try:
            answer = self.adapter.cancel([str(read.id) for read, _, _ in overdue])
        except Exception as exc:
            result.errors.append(f"cancel timed-out reads: {exc}")
            return result  # not let go: asked again at the next check
        let_go = {int(key) for key in (*answer.cancelled, *answer.unknown)}
        result.still_reading = len(overdue) - len(let_go)
        events = [
            Event(
                kind=EventKind.FILE_FAILED,
                at=now,
                seq=next(self._seq),
                tape=read.tape,
                file_key=str(read.id),
                batch_key=read.batch_key,
                reason=timed_out_reason(elapsed, limit),
                retryable=True,
            )
            for read, elapsed, limit in overdue
            if read.id in let_go
        ]
        if events:
            result.failed = self.fail_attempts(events)
        log.warning(
            "reads timed out",
            cancelled=len(events),
            still_reading=result.still_reading,
            reasons=[e.reason for e in events[:3]],
        )
        return result


def database_queue(
    session_factory: sessionmaker[Session],
    event_stream: str,
    retry: RetryRule,
    library: str = DEFAULT_LIBRARY,
) -> tuple[ReadsStartedBefore, FailAttempts]:
    """The service's side of the check: reads from the queue's rows, failures applied by completion under an
    event stream of their own (`event_stream` + ":rt"), each in a transaction."""
    stream = event_stream + STREAM_SUFFIX

    def reads(started_before: datetime, limit: int) -> list[Reading]:
        return run_transaction(
            session_factory,
            functools.partial(
                reads_started_before, started_before=started_before, limit=limit, library=library
            ),
        )

    def fail(events: list[Event]) -> int:
        applied = run_transaction(
            session_factory, lambda session: apply_events(session, stream, events, retry, library=library)
        )
        return applied.retried + applied.failed

    return reads, fail

"""The library's events applied as they arrive, not once per cycle.

The adapter pushes each event to `sink` as it happens (HsmAdapter.set_sink); the sink only puts it in the
inbox (it runs under the adapter's lock: it must be quick). `pump` (a side job of its own, every
`event_apply_interval_s`) asks the adapter for what it has (`poll_events`: the simulated library advances to
the clock's present and pushes what happened; events a sink refused come back here) and applies the inbox in
one transaction. The cycle calls `apply` too, at its events step, so what the sink or the pump missed is
applied there, as before (unless the pump is applying at that moment: the cycle does not wait for it). The
cycle holds the pump from claim to record (`held`): no event of a batch is applied before its files are
SUBMITTED with their recalls.

The rules of docs/resilience.md hold: only the leader applies (the pump applies only while the last cycle
found this instance leading; a standby's inbox waits for its first cycle as leader); one application at a
time, in seq order (a lock); events taken but not committed are kept and tried again (the adapter delivers
each once); applied_events still records each (adapter, seq) in the transaction that applies it, so an
event is applied exactly once whichever path brings it. The bytes of a FILE_STAGED land in the buffer before
its transaction, as in the cycle (carousel.completion.landing).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import structlog
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.layout import BufferLayout
from carousel.completion.apply import CompletionReport, apply_events
from carousel.completion.landing import LandingReport, land_staged
from carousel.db.engine import run_transaction
from carousel.db.transient_errors import database_unavailable
from carousel.domain.buffer import Pinning
from carousel.domain.completion import RetryRule
from carousel.domain.libraries import DEFAULT_LIBRARY
from hsm_adapters.base import Event, HsmAdapter

log = structlog.get_logger(__name__)


class LiveEvents:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        adapter: HsmAdapter,
        stream: str,
        retry: RetryRule,
        *,
        library: str = DEFAULT_LIBRARY,
        buffer: BufferLayout | None,
        pinning: Callable[[], Pinning],
        waits: Callable[[], bool] = lambda: False,
    ) -> None:
        self.session_factory = session_factory
        self.adapter = adapter
        self.stream = stream
        self.retry = retry
        self.library = library  # whose events these are: its mounts are its own
        self.buffer = buffer
        self.pinning = pinning  # the buffer's pins from now (called only with the buffer on)
        self.leading = False  # set by each cycle: the pump applies only while this instance leads
        # True while the pump must leave events alone: hand-overs accepted by the library but not recorded
        self.waits = waits
        self._holds = 0  # hand-overs under way (held): their files' events wait for their record
        self._inbox: deque[Event] = deque()  # pushed by the sink; deque appends are atomic
        self._apply_lock = threading.Lock()  # one application at a time, in seq order
        self._state_lock = threading.Lock()  # the lists below, held only for moments
        self._unapplied: list[Event] = []  # taken from the inbox, not committed yet
        self._taken: list[Event] = []  # taken since the cycle last collected
        self._applied: CompletionReport | None = None  # since the cycle last took the reports
        self._landing: LandingReport | None = None

    def sink(self, event: Event) -> None:
        """The adapter's sink: hand the event over, nothing more."""
        self._inbox.append(event)

    def pump(self) -> None:
        """The side job: take what the adapter has, and apply it while this instance leads."""
        try:
            self._inbox.extend(self.adapter.poll_events())
        except Exception as exc:  # the cycle notes adapter failures; here the next pump tries again
            log.warning("adapter call failed", step="poll_events (events as they arrive)", error=str(exc))
        if not self.leading:
            return
        try:
            self.apply(between_cycles=True)
        except SQLAlchemyError as exc:
            if not database_unavailable(exc):
                raise
            log.warning("database unavailable: events kept for the next try", error=str(exc).splitlines()[0])

    def poll(self) -> None:
        """The cycle's poll: what the sink missed (or all, for an adapter without one) into the inbox. Raises
        what the adapter raises."""
        self._inbox.extend(self.adapter.poll_events())

    def collect(self) -> list[Event]:
        """Take the inbox for application; the events taken since the last call (by the pump too), which the
        cycle's liveness watch observes whether or not the database takes them now."""
        with self._state_lock:
            self._take_inbox()
            taken, self._taken = self._taken, []
        return taken

    @contextmanager
    def held(self) -> Iterator[None]:
        """A hand-over under way (claim, submit, record): the pump applies nothing new until its record is
        written, so no event of a batch is applied before the batch's files are SUBMITTED and their recalls
        exist (as when events were applied only at the start of a cycle). An application already running
        goes on: it took its events before the batch was submitted."""
        with self._state_lock:
            self._holds += 1
        try:
            yield
        finally:
            with self._state_lock:
                self._holds -= 1

    def apply(self, *, wait: bool = True, between_cycles: bool = False) -> None:
        """Apply every event taken so far, in one transaction; kept for the next call if it fails. Without
        `wait`, nothing happens while another application runs (it takes what is there when it ends).
        `between_cycles` (the pump): nothing happens while a hand-over is held or waits to be recorded."""
        if not self._apply_lock.acquire(blocking=wait):
            return
        try:
            with self._state_lock:
                if between_cycles and (self._holds or self.waits()):
                    return
                self._take_inbox()
                events = list(self._unapplied)
            if not events:
                return
            pinning = None
            if self.buffer is not None:
                # the bytes land (or the event becomes a failure) before any row says they are there
                events, landing = land_staged(self.buffer, self.session_factory, events)
                with self._state_lock:
                    self._landing = _add_landing(self._landing, landing)
                pinning = self.pinning()
            done = run_transaction(
                self.session_factory,
                lambda session: apply_events(
                    session, self.stream, events, self.retry, pinning, library=self.library
                ),
            )
            with self._state_lock:  # only an application removes events, and one runs at a time
                del self._unapplied[: len(events)]
                self._applied = _add_completion(self._applied, done)
        finally:
            self._apply_lock.release()

    def _take_inbox(self) -> None:
        while self._inbox:
            event = self._inbox.popleft()
            self._unapplied.append(event)
            self._taken.append(event)

    def take_applied(self) -> tuple[CompletionReport | None, LandingReport | None]:
        """What was applied and landed since the last call (the cycle's report); None: nothing."""
        with self._state_lock:
            applied, landing = self._applied, self._landing
            self._applied, self._landing = None, None
        return applied, landing


def _add_completion(total: CompletionReport | None, more: CompletionReport) -> CompletionReport:
    if total is None:
        return more
    for name in ("applied", "duplicates", "staged", "failed", "retried", "cancelled", "requeued", "mounts"):
        setattr(total, name, getattr(total, name) + getattr(more, name))
    total.bytes_staged += more.bytes_staged
    total.stale.extend(more.stale)
    return total


def _add_landing(total: LandingReport | None, more: LandingReport) -> LandingReport:
    if total is None:
        return more
    total.landed += more.landed
    total.failed.extend(more.failed)
    return total

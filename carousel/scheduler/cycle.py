"""One scheduling cycle: leader lock, events, recovery, lookups, cancels, snapshot, plan, claim, submit.

The HSM never waits on the database inside a transaction: every adapter call happens between transactions,
and each database step is one short transaction of its own. The work per cycle grows with the number of tapes
that have work (the snapshot is per tape), not with the number of queued files.

Crash safety (docs/resilience.md): files are CLAIMED (committed) before they are submitted and SUBMITTED
after. A crash between the two leaves CLAIMED rows, which a later cycle puts back in the queue after
claim_timeout_s. SUBMITTED files are handed to the library again, under their batch key, when a leadership
term begins and when they have had no news for inflight_timeout_s (carousel.scheduler.inflight). A database
that goes away makes the cycle skip (nothing is lost: events taken from the library and hand-overs not
recorded are kept for the next cycle); transactions lost to a deadlock are run again. After an outage of the
library, submissions resume at a measured pace (carousel.scheduler.pace). A library that says ONLINE but makes
no progress is noticed and given only a probe until it moves (carousel.scheduler.liveness); a read that hangs
is cancelled and its attempt fails (carousel.scheduler.read_timeouts).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TypeVar

import structlog
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.layout import BufferLayout
from carousel.completion.apply import CompletionReport, apply_events
from carousel.completion.landing import LandingReport
from carousel.config import Settings, buffer_directory
from carousel.db import queue_queries as q
from carousel.db.completion_queries import finish_file
from carousel.db.engine import run_transaction
from carousel.db.leader_lock import LeaderLock, leader_lock_for
from carousel.db.lock_order import lock_links_and_files
from carousel.db.transient_errors import database_unavailable
from carousel.domain.buffer import BufferLimits, BufferView, Pinning
from carousel.domain.clock import Clock
from carousel.domain.completion import RetryRule
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.planning import LibraryCosts, Plan
from carousel.domain.states import NOT_ON_TAPE
from carousel.scheduler.buffer_adoption import staged_in_buffer
from carousel.scheduler.buffer_upkeep import BufferUpkeep, LiveBuffer, UpkeepReport
from carousel.scheduler.feed import FeedControl, FeedSettings
from carousel.scheduler.inflight import InFlightWatch
from carousel.scheduler.live_events import LiveEvents
from carousel.scheduler.live_snapshot import LibraryState, library_state, live_queue_store, live_snapshot
from carousel.scheduler.media_states import MediaReport, MediaStates
from carousel.scheduler.planning_path import PlanningPath, published_costs
from carousel.scheduler.read_timeouts import ReadTimeouts, database_queue
from carousel.scheduler.resilient_store import ResilientStore
from carousel.scheduler.site_role import LibraryOfSite
from hsm_adapters.base import (
    Health,
    HsmAdapter,
    NotOnTape,
    OnTape,
)
from policies.base import Policy

log = structlog.get_logger(__name__)

LOOKUPS_PER_CYCLE = 1_000
CANCELS_PER_CYCLE = 10_000

T = TypeVar("T")


def event_stream_name(adapter: HsmAdapter, library: str = DEFAULT_LIBRARY) -> str:
    """Where completion records the events it applied: the adapter's name and this instance (and the library,
    when it is not the one `default`: each library's adapter counts its own). Event sequence numbers count
    per adapter instance, so a restarted process (a new instance, counting from 1 again) must not find its
    events taken for ones applied before. At most 64 characters (applied_events.adapter)."""
    named = adapter.name[:40] if library == DEFAULT_LIBRARY else f"{library}/{adapter.name}"[:47]
    return f"{named}:{uuid.uuid4().hex[:16]}"


@dataclass(slots=True)
class CycleReport:
    """What one cycle did; leader=False means another instance holds the lock and nothing was done."""

    leader: bool
    new_term: bool = False  # this cycle began a leadership term
    database_unavailable: bool = False  # the database did not answer: the cycle was skipped
    health: Health | None = None
    events: CompletionReport | None = None
    landing: LandingReport | None = None  # staged bytes landed in the buffer, or failed to
    buffer: UpkeepReport | None = None  # evictions and bytes found missing (the buffer on)
    found_staged: int = 0  # in-flight files whose verified bytes were in the buffer at a new term
    swept: int = 0  # half-written files removed from the buffer's incoming directory (a new term)
    recorded_late: int = 0  # files whose hand-over record an earlier cycle could not write
    recovered_claims: int = 0
    resubmitted: int = 0  # SUBMITTED files handed to the library again under their batch key
    resolved: int = 0
    not_on_tape: int = 0
    cancels_pushed: int = 0
    cancelled: int = 0
    cancel_requeued: int = 0
    tapes_with_work: int = 0
    in_flight: int = 0  # files with the HSM (or claimed) at snapshot time
    plan: Plan | None = None
    budget: int = 0  # files this cycle could submit (lower while recovering from an outage)
    stalled_since: datetime | None = None  # no progress since then (carousel.scheduler.liveness)
    stall_ended: bool = False  # progress after a stall: the recovery pace starts again
    read_timeouts: int = 0  # attempts ended by "read timed out after N s"
    claimed: int = 0
    batches_submitted: int = 0
    files_submitted: int = 0
    returned_to_queue: int = 0  # claimed, but the adapter refused the batch
    buffer_space: BufferView | None = None  # the disk buffer at snapshot time (None: no buffer)
    waiting_for_space: int = 0  # queued files of tapes waiting for space in the disk buffer
    evicted_files: int = 0  # evicted from the buffer to make room for this cycle's hand-over
    # tapes and drives as operators set them (carousel.scheduler.media_states)
    media: MediaReport | None = None
    elapsed_s: float = 0.0
    errors: list[str] = field(default_factory=list)
    # a site of several libraries: each library's own report (this one adds them up: site_cycle.py)
    libraries: dict[str, CycleReport] = field(default_factory=dict)


def buffer_limits(settings: Settings) -> BufferLimits:
    return settings.buffer.limits()


class Cycle:
    def __init__(
        self,
        settings: Settings,
        session_factory: sessionmaker[Session],
        adapter: HsmAdapter,
        policy: Policy,
        clock: Clock,
        *,
        leader_lock: LeaderLock | None = None,
        costs: LibraryCosts | None = None,
        policy_source: Callable[[], Policy] | None = None,
        site: LibraryOfSite | None = None,
    ) -> None:
        # one library of a site (carousel.scheduler.site_cycle): its queue, events and reads only; the site's
        # steps (buffer, stale claims, lookups across every library) in its first library's cycle alone
        self.site = site or LibraryOfSite()
        self.library = self.site.name
        self.settings = settings
        self.session_factory = session_factory
        self.adapter = adapter
        self.policy = policy
        # asked for the policy before each plan (carousel.policy_admin.active: the admins' choice, one row)
        self.policy_source = policy_source
        self.clock = clock
        self.leader_lock = leader_lock or leader_lock_for(session_factory)
        # the disk buffer (docs/data-path.md): None when it is off, and batches then carry no destination
        self.buffer = BufferLayout.at(buffer_directory(settings)) if settings.buffer.enabled else None
        # who hears of evicted copies: the library each was read from (the buffer is the site's)
        libraries = dict(self.site.adapters) or {self.library: adapter}
        self.buffer_upkeep = (
            None
            if self.buffer is None
            else BufferUpkeep(
                self.buffer,
                session_factory,
                libraries,
                clock,
                evict_on_release=settings.buffer.evict_on_release,
            )
        )
        self.store = ResilientStore(
            live_queue_store(
                settings,
                session_factory,
                library=self.library,
                usage_weights=self.site.usage_weights,
                site_assemblies=self.site.assemblies,
            )
        )
        # snapshot, plan, claim, submit, record: the very code the trace replay runs over its memory store
        self.path = PlanningPath(
            self.store,
            adapter,
            policy,
            clock,
            max_files_per_cycle=settings.max_files_per_cycle,
            costs=costs if costs is not None else published_costs(adapter),
            destination=self._destination if self.buffer is not None else None,
            buffer=None
            if self.buffer_upkeep is None
            else LiveBuffer(buffer_limits(settings), self.buffer_upkeep),
            libraries=libraries,
        )
        self.retry = RetryRule(max_attempts=settings.max_attempts, backoff_s=settings.retry_backoff_s)
        self.event_stream = event_stream_name(adapter, self.library)
        self.inflight = InFlightWatch(
            session_factory,
            adapter,
            clock,
            timeout_s=settings.inflight_timeout_s,
            destination=self._destination if self.buffer is not None else None,
            library=self.library,
        )
        # the recovery pace and the liveness watch, as the trace replay runs them too
        self.feed = FeedControl(
            FeedSettings.of(settings),
            max_files_per_cycle=settings.max_files_per_cycle,
            costs=self.path.costs,
        )
        self.read_timeouts = ReadTimeouts(
            *database_queue(session_factory, self.event_stream, self.retry, self.library),
            adapter,
            clock,
            costs=self.path.costs,
            factor=settings.read_timeout_factor,
            margin_s=settings.read_timeout_margin_s,
        )
        # admins' tape and drive states applied, the library's failed mounts counted
        self.media = MediaStates(
            session_factory,
            adapter,
            clock,
            break_after_failed_mounts=settings.media.break_after_failed_mounts,
            library=self.library,
            lookup=self.site.lookup,
        )
        # the library's events, applied as they arrive by the pump and at each cycle's events step
        self.live = LiveEvents(
            session_factory,
            adapter,
            self.event_stream,
            self.retry,
            library=self.library,
            buffer=self.buffer,
            pinning=lambda: Pinning(self.clock.now(), self.settings.buffer.default_lifetime_s),
            waits=lambda: self.store.unrecorded > 0,
        )
        adapter.set_sink(self.live.sink)
        self._term = 0
        self._buffer_seq = 0  # events of the stream `<event_stream>:bf` (carousel.scheduler.buffer_adoption)
        # files whose cancel the HSM answered "in progress": not asked again while they stay so
        self._cancel_asked: set[int] = set()

    def run_once(self) -> CycleReport:
        started = time.perf_counter()
        report = CycleReport(leader=False)
        try:
            with self.leader_lock.hold() as leader:
                report.leader = leader
                if not leader:
                    self.live.leading = False
                if leader:
                    self._run(report)
        except SQLAlchemyError as exc:
            if not database_unavailable(exc):
                raise
            # skip the cycle and carry on: what this cycle took from the library is kept for the next one
            report.database_unavailable = True
            report.errors.append(f"database unavailable: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            log.warning("database unavailable: cycle skipped", error=report.errors[-1])
        report.elapsed_s = time.perf_counter() - started
        return report

    def close(self) -> None:
        """Stop leading (a standby takes over at its next cycle)."""
        self.live.leading = False
        self.leader_lock.release()

    def _run(self, report: CycleReport) -> None:
        self.take_news(report)
        self.plan_and_submit(report)

    def take_news(self, report: CycleReport) -> None:
        """The cycle's first half, the leader lock held: a new term's work, what the library reported. A site
        takes every library's news before it plans any (carousel.scheduler.site_cycle)."""
        site_steps = self.site.site_steps
        if self.leader_lock.term != self._term:
            self._term = self.leader_lock.term
            report.new_term = True
            if self.buffer is not None and site_steps:
                # before anything is handed over again: the directories are there, what a crash left half
                # written goes
                self.buffer.prepare()
                report.found_staged = self._apply_staged_in_buffer()
                report.swept = self.buffer.sweep_incoming()
                if self.buffer_upkeep is not None:
                    self.buffer_upkeep.reconcile()
                if report.swept:
                    log.warning("removed half-written files from the buffer", files=report.swept)
            self.inflight.new_term()
            self.media.new_term()
        self.live.leading = True  # the pump may apply events now, a new term's work done
        # before anything else: claims recovery must not requeue files a library took under their claim
        report.recorded_late = self.store.record_unrecorded()
        self._apply_events(report)

    def plan_and_submit(self, report: CycleReport) -> None:
        """The cycle's second half, the leader lock held: recovery, the library's state, lookups, cancels,
        the snapshot, the plan, the hand-over."""
        site_steps = self.site.site_steps
        if site_steps:
            self._recover_claims(report)
        report.media = self.media.run()
        report.errors.extend(report.media.errors)
        if self.buffer_upkeep is not None and site_steps:
            report.buffer = UpkeepReport()
            self.buffer_upkeep.run(report.buffer)
        library = self._library_state(report)
        report.health = library.health
        if library.online:
            if self._resubmit_in_flight(report):
                # the library holds more now
                library = replace(library, capacity=self._library_state(report).capacity)
            self._time_out_reads(report)
            if site_steps:
                self._retry_lookups(report)
            self._push_cancels(report)
        elif site_steps and self.site.lookup is not None:
            # a site's lookup asks every library: this library's outage holds back only its own answers
            self._retry_lookups(report)
        # an outage stops submission, a stall all but a probe; the plan is still made for the report
        budget = self.feed.budget(library.health, self.clock.now())
        report.budget, report.stalled_since = budget.files, budget.stalled_since
        self.path.max_files_per_cycle = max(budget.files, 1)
        if self.policy_source is not None:
            self.policy = self.path.policy = self.policy_source()
        snapshot = live_snapshot(
            self.store,
            self.adapter,
            self.clock,
            costs=self.path.costs,
            library=library,
            buffer=self.path.buffer,
        )
        with self.live.held():  # no event of these batches is applied before their record
            dispatch = self.path.dispatch(snapshot, submit=budget.files > 0)
        report.plan = self.feed.after_pass(dispatch, budget, self.clock.now())
        if budget.stalled_since is not None:
            log.warning(
                "library not progressing",
                since=budget.stalled_since.isoformat(),
                in_flight=self.feed.liveness.in_flight,
                probe_files=dispatch.files_submitted,
                expected_quiet_s=self.feed.liveness.expected_quiet.total_seconds(),
            )
        report.tapes_with_work = len(dispatch.snapshot.tapes)
        report.in_flight = dispatch.snapshot.in_flight
        report.claimed = dispatch.claimed
        report.batches_submitted = dispatch.batches_submitted
        report.files_submitted = dispatch.files_submitted
        report.returned_to_queue = dispatch.returned_to_queue
        report.buffer_space = dispatch.snapshot.buffer
        report.waiting_for_space = dispatch.waiting_for_space
        report.evicted_files = dispatch.evicted_files
        report.errors.extend(dispatch.errors)

    # --- events -------------------------------------------------------------------------------------------

    def _transaction(self, work: Callable[[Session], T]) -> T:
        return run_transaction(self.session_factory, work)

    def _apply_events(self, report: CycleReport) -> None:
        """What the sink and the pump have not applied yet, and what the sink missed (carousel.scheduler.
        live_events)."""
        try:
            self.live.poll()
        except Exception as exc:
            self._note(report, "poll_events", exc)
        # progress is progress whether or not the database takes it now
        collected = self.live.collect()
        report.stall_ended = self.feed.observe_events(collected, self.clock.now())
        if report.stall_ended:
            log.warning("library progressing again: the backlog goes out at the recovery pace")
        self.media.observe(collected)  # mounts that worked or failed, counted per tape
        self.live.apply(wait=False)  # while the pump applies, the cycle goes on: the pump takes the rest
        report.events, report.landing = self.live.take_applied()

    def _apply_staged_in_buffer(self) -> int:
        """A new term: files a dead leader's library staged into the buffer, unreported, are staged; not read
        from tape again (carousel.scheduler.buffer_adoption)."""
        assert self.buffer is not None
        events = staged_in_buffer(
            self.buffer, self.session_factory, self.adapter, self.clock, self._next_buffer_seq
        )
        if not events:
            return 0
        pinning = Pinning(self.clock.now(), self.settings.buffer.default_lifetime_s)
        done = self._transaction(
            lambda session: apply_events(session, f"{self.event_stream}:bf", events, self.retry, pinning)
        )
        log.warning(
            "files found staged in the buffer at a new term: completed, not read again", files=done.staged
        )
        return done.staged

    def _next_buffer_seq(self) -> int:
        self._buffer_seq += 1
        return self._buffer_seq

    def _destination(self, file_key: str) -> str:
        """Where the library writes a file's bytes: the buffer's incoming directory, named by the file key."""
        assert self.buffer is not None
        return str(self.buffer.incoming_path(file_key))

    # --- recovery -----------------------------------------------------------------------------------------

    def _recover_claims(self, report: CycleReport) -> None:
        older = self.clock.now() - timedelta(seconds=self.settings.claim_timeout_s)
        report.recovered_claims = self._transaction(lambda session: q.recover_stale_claims(session, older))
        if report.recovered_claims:
            log.warning("recovered stale claims", files=report.recovered_claims)

    def _resubmit_in_flight(self, report: CycleReport) -> bool:
        done = self.inflight.run()
        report.resubmitted = done.files
        for error in done.errors:
            self._note(report, "resubmit", RuntimeError(error))
        return bool(done.files)

    def _time_out_reads(self, report: CycleReport) -> None:
        done = self.read_timeouts.run()
        report.read_timeouts = done.failed
        for error in done.errors:
            self._note(report, "read timeouts", RuntimeError(error))

    # --- library ------------------------------------------------------------------------------------------

    def _library_state(self, report: CycleReport) -> LibraryState:
        library = library_state(self.adapter)
        if library.failure is not None:
            self._note(report, "health/capacity", library.failure)
        return library

    # --- lookups ------------------------------------------------------------------------------------------

    def _retry_lookups(self, report: CycleReport) -> None:
        unresolved = self._transaction(lambda session: q.unresolved_due(session, LOOKUPS_PER_CYCLE))
        if not unresolved:
            return
        try:
            results = (self.site.lookup or self.adapter).lookup([u.path for u in unresolved])
        except Exception as exc:
            self._note(report, "lookup", exc)
            return
        now = self.clock.now()

        def record(session: Session) -> tuple[int, int]:
            resolved = not_on_tape = 0
            lock_links_and_files(session, [file.id for file in unresolved])
            for file, result in zip(unresolved, results, strict=True):
                too_big = self._too_big(result)
                if too_big is not None:
                    not_on_tape += finish_file(session, file.id, NOT_ON_TAPE, now, error=too_big)
                elif isinstance(result, OnTape):
                    resolved += q.resolve_to_tape(
                        session,
                        file.id,
                        tape=result.tape,
                        position_bytes=result.position_bytes,
                        size_bytes=result.size_bytes,
                        library=result.library or self.library,
                    )
                elif isinstance(result, NotOnTape):
                    not_on_tape += finish_file(session, file.id, NOT_ON_TAPE, now, error=result.reason)
                else:
                    q.still_unresolved(session, file.id, result.reason, now)
            return resolved, not_on_tape

        report.resolved, report.not_on_tape = self._transaction(record)

    def _too_big(self, result: object) -> str | None:
        """Why a file the library found can never be staged: larger than the disk buffer can hold."""
        if self.buffer is None or not isinstance(result, OnTape):
            return None
        return buffer_limits(self.settings).too_big_reason(result.size_bytes)

    # --- cancels ------------------------------------------------------------------------------------------

    def _push_cancels(self, report: CycleReport) -> None:
        unwanted = self._transaction(
            lambda session: q.unwanted_in_flight(session, CANCELS_PER_CYCLE, self.library)
        )
        self._cancel_asked &= set(unwanted)
        to_ask = [file_id for file_id in unwanted if file_id not in self._cancel_asked]
        if not to_ask:
            return
        try:
            answer = self.adapter.cancel([str(file_id) for file_id in to_ask])
        except Exception as exc:
            self._note(report, "cancel", exc)
            return
        report.cancels_pushed = len(to_ask)
        self._cancel_asked |= {int(key) for key in answer.in_progress}
        # files the HSM will not read, or never had, end here; those in progress end by their events
        stopped = [int(key) for key in (*answer.cancelled, *answer.unknown)]
        now = self.clock.now()
        report.cancelled, report.cancel_requeued = self._transaction(
            lambda session: q.settle_cancelled(session, stopped, now)
        )

    def _note(self, report: CycleReport, step: str, exc: Exception) -> None:
        log.warning("adapter call failed", step=step, error=str(exc))
        report.errors.append(f"{step}: {exc}")

"""One scheduling cycle: leader lock, events, recovery, lookups, cancels, snapshot, plan, claim, submit.

The HSM never waits on the database inside a transaction: every adapter call happens between transactions,
and each database step is one short transaction of its own. The work per cycle grows with the number of tapes
that have work (the snapshot is per tape), not with the number of queued files.

Crash safety: files are CLAIMED (committed) before they are submitted and SUBMITTED after. A crash between the
two leaves CLAIMED rows, which a later cycle puts back in the queue after claim_timeout_s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.completion.apply import CompletionReport, RetryRule, apply_events
from carousel.config import Settings
from carousel.db import queue_queries as q
from carousel.db.completion_queries import finish_file
from carousel.db.engine import transaction
from carousel.db.leader_lock import LeaderLock, leader_lock_for
from carousel.domain.clock import Clock
from carousel.domain.planning import LibraryCosts, Plan
from carousel.domain.states import FileState
from carousel.scheduler.planning_path import PlanningPath, published_costs
from carousel.scheduler.queue_store import DatabaseQueueStore
from hsm_adapters.base import (
    Capacity,
    Event,
    Health,
    HsmAdapter,
    NotOnTape,
    OnTape,
)
from policies.base import Policy

log = structlog.get_logger(__name__)

LOOKUPS_PER_CYCLE = 1_000
CANCELS_PER_CYCLE = 10_000


@dataclass(slots=True)
class CycleReport:
    """What one cycle did; leader=False means another instance holds the lock and nothing was done."""

    leader: bool
    health: Health | None = None
    events: CompletionReport | None = None
    recovered_claims: int = 0
    resolved: int = 0
    not_on_tape: int = 0
    cancels_pushed: int = 0
    cancelled: int = 0
    cancel_requeued: int = 0
    tapes_with_work: int = 0
    in_flight: int = 0  # files with the HSM (or claimed) at snapshot time
    plan: Plan | None = None
    claimed: int = 0
    batches_submitted: int = 0
    files_submitted: int = 0
    returned_to_queue: int = 0  # claimed, but the adapter refused the batch
    elapsed_s: float = 0.0
    errors: list[str] = field(default_factory=list)


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
    ) -> None:
        self.settings = settings
        self.session_factory = session_factory
        self.adapter = adapter
        self.policy = policy
        self.clock = clock
        self.leader_lock = leader_lock or leader_lock_for(session_factory)
        # snapshot, plan, claim, submit, record: the very code the trace replay runs over its memory store
        self.path = PlanningPath(
            DatabaseQueueStore(session_factory),
            adapter,
            policy,
            clock,
            max_files_per_cycle=settings.max_files_per_cycle,
            costs=costs if costs is not None else published_costs(adapter),
        )
        self.retry = RetryRule(max_attempts=settings.max_attempts, backoff_s=settings.retry_backoff_s)
        # events taken from the adapter but not yet committed: the adapter delivers each once
        self._unapplied: list[Event] = []
        # files whose cancel the HSM answered "in progress": not asked again while they stay so
        self._cancel_asked: set[int] = set()

    def run_once(self) -> CycleReport:
        started = time.perf_counter()
        with self.leader_lock.hold() as leader:
            report = CycleReport(leader=leader)
            if leader:
                self._run(report)
        report.elapsed_s = time.perf_counter() - started
        return report

    def _run(self, report: CycleReport) -> None:
        self._apply_events(report)
        self._recover_claims(report)
        health, capacity = self._library_state(report)
        report.health = health
        online = health is not Health.OFFLINE
        if online:
            self._retry_lookups(report)
            self._push_cancels(report)
        # an outage stops submission; the plan is still made for the report (its waiting reasons)
        dispatch = self.path.run(capacity, online, submit=online)
        report.tapes_with_work = len(dispatch.snapshot.tapes)
        report.in_flight = dispatch.snapshot.in_flight
        report.plan = dispatch.plan
        report.claimed = dispatch.claimed
        report.batches_submitted = dispatch.batches_submitted
        report.files_submitted = dispatch.files_submitted
        report.returned_to_queue = dispatch.returned_to_queue
        report.errors.extend(dispatch.errors)

    # --- events -------------------------------------------------------------------------------------------

    def _apply_events(self, report: CycleReport) -> None:
        try:
            self._unapplied.extend(self.adapter.poll_events())
        except Exception as exc:
            self._note(report, "poll_events", exc)
        if not self._unapplied:
            return
        with transaction(self.session_factory) as session:
            report.events = apply_events(session, self.adapter.name, self._unapplied, self.retry)
        self._unapplied = []

    # --- recovery -----------------------------------------------------------------------------------------

    def _recover_claims(self, report: CycleReport) -> None:
        older = self.clock.now() - timedelta(seconds=self.settings.claim_timeout_s)
        with transaction(self.session_factory) as session:
            report.recovered_claims = q.recover_stale_claims(session, older)
        if report.recovered_claims:
            log.warning("recovered stale claims", files=report.recovered_claims)

    # --- library ------------------------------------------------------------------------------------------

    def _library_state(self, report: CycleReport) -> tuple[Health, Capacity]:
        try:
            return self.adapter.health(), self.adapter.capacity()
        except Exception as exc:
            self._note(report, "health/capacity", exc)
            return Health.OFFLINE, Capacity(drives_total=0, drives_free=0)

    # --- lookups ------------------------------------------------------------------------------------------

    def _retry_lookups(self, report: CycleReport) -> None:
        with transaction(self.session_factory) as session:
            unresolved = q.unresolved_due(session, LOOKUPS_PER_CYCLE)
        if not unresolved:
            return
        try:
            results = self.adapter.lookup([u.path for u in unresolved])
        except Exception as exc:
            self._note(report, "lookup", exc)
            return
        now = self.clock.now()
        with transaction(self.session_factory) as session:
            for file, result in zip(unresolved, results, strict=True):
                if isinstance(result, OnTape):
                    report.resolved += q.resolve_to_tape(
                        session,
                        file.id,
                        tape=result.tape,
                        position_bytes=result.position_bytes,
                        size_bytes=result.size_bytes,
                    )
                elif isinstance(result, NotOnTape):
                    report.not_on_tape += finish_file(
                        session,
                        file.id,
                        FileState.FAILED,
                        now,
                        from_states=[FileState.UNRESOLVED],
                        error=result.reason,
                    )
                else:
                    q.still_unresolved(session, file.id, result.reason, now)

    # --- cancels ------------------------------------------------------------------------------------------

    def _push_cancels(self, report: CycleReport) -> None:
        with transaction(self.session_factory) as session:
            unwanted = q.unwanted_in_flight(session, CANCELS_PER_CYCLE)
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
        with transaction(self.session_factory) as session:
            report.cancelled, report.cancel_requeued = q.settle_cancelled(session, stopped, self.clock.now())

    def _note(self, report: CycleReport, step: str, exc: Exception) -> None:
        log.warning("adapter call failed", step=step, error=str(exc))
        report.errors.append(f"{step}: {exc}")

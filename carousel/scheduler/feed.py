"""How much work a pass may hand the library now, shared by the service's cycle and the trace replay so both
feed a library that comes back, or stalls, the same way.

- The library OFFLINE: nothing (and the liveness watch starts afresh when it is back).
- Back from an outage, after refused batches, or moving again after a stall: the recovery pace
  (carousel.scheduler.pace), from `recovery_start_files` up to the cycle's full budget over `recovery_ramp_s`.
- Stalled (carousel.scheduler.liveness): a probe of at most `liveness_probe_files`, once per expected quiet
  time, and every tape with work waits with the reason "library not progressing since …".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from carousel.config import Settings
from carousel.domain.planning import LibraryCosts, Plan
from carousel.scheduler.liveness import LivenessRule, LivenessWatch, stalled_reason
from carousel.scheduler.pace import RecoveryPace
from carousel.scheduler.planning_path import Dispatch
from hsm_adapters.base import Event, Health


@dataclass(frozen=True, slots=True)
class FeedSettings:
    """The settings of the same names (carousel.config.Settings), with their defaults."""

    recovery_start_files: int = 50
    recovery_ramp_s: float = 600.0
    liveness_factor: float = 3.0
    liveness_floor_s: float = 900.0
    liveness_probe_files: int = 5

    @classmethod
    def of(cls, settings: Settings) -> FeedSettings:
        """The service's own: the cycle and every replay of the service's work read them here."""
        return cls(
            recovery_start_files=settings.recovery_start_files,
            recovery_ramp_s=settings.recovery_ramp_s,
            liveness_factor=settings.liveness_factor,
            liveness_floor_s=settings.liveness_floor_s,
            liveness_probe_files=settings.liveness_probe_files,
        )


@dataclass(frozen=True, slots=True)
class Budget:
    files: int  # files the pass may hand over (0: submit nothing)
    stalled_since: datetime | None = None


class FeedControl:
    def __init__(
        self, settings: FeedSettings, *, max_files_per_cycle: int, costs: LibraryCosts | None
    ) -> None:
        self.pace = RecoveryPace(
            max_files=max_files_per_cycle,
            start_files=settings.recovery_start_files,
            ramp_s=settings.recovery_ramp_s,
        )
        self.liveness = LivenessWatch(
            LivenessRule(
                factor=settings.liveness_factor,
                floor_s=settings.liveness_floor_s,
                probe_files=settings.liveness_probe_files,
            ),
            costs,
        )

    def observe_events(self, events: Iterable[Event], now: datetime) -> bool:
        """Events taken from the library; True when they end a stall (the backlog then goes at the pace)."""
        ended = self.liveness.observe_events(events)
        if ended:
            self.pace.restart(now)
        return ended

    def budget(self, health: Health, now: datetime) -> Budget:
        self.pace.observe_health(health, now)
        if health is Health.OFFLINE:
            self.liveness.observe_offline()
            return Budget(0)
        files = self.pace.budget(now)
        since = self.liveness.stalled_since(now)
        if since is not None:
            files = min(files, self.liveness.probe_budget(now))
        return Budget(files, since)

    def after_pass(self, dispatch: Dispatch, budget: Budget, now: datetime) -> Plan:
        """Record what the pass did; the plan to report (with the stall's reason on every waiting tape)."""
        self.pace.observe_refusals(dispatch.returned_to_queue, now)
        held = dispatch.snapshot.in_flight + dispatch.files_submitted
        if budget.stalled_since is not None:
            self.liveness.probed(dispatch.files_submitted, now)
        self.liveness.after_pass(held, dispatch.snapshot.in_flight_tapes, now)
        if budget.stalled_since is None:
            return dispatch.plan
        why = stalled_reason(budget.stalled_since, held, self.liveness.rule.probe_files)
        # tapes an admin holds back keep their own reason: they would wait whatever the library does
        stalled = {tape.tape: why for tape in dispatch.snapshot.tapes}
        return replace(dispatch.plan, waiting={**stalled, **dispatch.snapshot.held})

    def next_probe_at(self) -> datetime | None:
        """While stalled, when the next probe may go (a replay that skips idle ticks wakes for it)."""
        return self.liveness.next_probe_at()

"""Is the library making progress? A library may say ONLINE, take every batch, and then read nothing (a hung
HSM scheduler, a robot that stopped without saying so). STAR's DataCarousel kept a few "overflow" jobs beyond
its N×K files in HPSS and watched them being consumed, to know the mass storage was alive; this watch does
the same with the library's own events.

What counts as progress: a read started, finished on disk, or failed (FILE_STARTED, FILE_STAGED,
FILE_FAILED). With files in flight, the library should show progress at least every `expected_quiet_s`:
a cartridge exchange (unmount + mount), a locate, the per-file overhead and the read of a file the size of the
largest in-flight tape's mean file, from the library's published cost figures, times `factor`, and never
less than `floor_s` (the floor alone when the back-end publishes no cost figures). Quiet for longer, the
library counts as STALLED since its last progress (or since work went to an idle library).

While stalled the cycle hands the library no new work beyond a probe of `probe_files` files, at most once
per expected quiet time, whose progress would prove the library alive; every waiting tape says why
(`stalled_reason`). The first progress event ends the stall, and the cycle releases the backlog at the
recovery pace (carousel.scheduler.pace). Time comes from the injected clock and the events' own times, so
the watch runs the same in virtual time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from carousel.domain.planning import LibraryCosts, TapeInFlight
from hsm_adapters.base import Event, EventKind

PROGRESS = frozenset({EventKind.FILE_STARTED, EventKind.FILE_STAGED, EventKind.FILE_FAILED})


@dataclass(frozen=True, slots=True)
class LivenessRule:
    factor: float  # times the physics of the next expected event
    floor_s: float  # never call a library stalled sooner than this
    probe_files: int  # files handed to a stalled library, at most once per expected quiet time

    def __post_init__(self) -> None:
        if self.factor < 1 or self.floor_s <= 0 or self.probe_files < 0:
            raise ValueError(
                f"bad liveness rule: factor={self.factor} (>= 1), floor_s={self.floor_s} (> 0),"
                f" probe_files={self.probe_files} (>= 0)"
            )


def physics_quiet_s(costs: LibraryCosts | None, in_flight_tapes: Iterable[TapeInFlight]) -> float:
    """The longest a healthy library holding this work goes between two progress events, by its physics
    (0 when it publishes no cost figures)."""
    if costs is None:
        return 0.0
    largest_mean = max(
        (sum(g.bytes for g in tape.groups) // tape.files for tape in in_flight_tapes if tape.files),
        default=0,
    )
    return (
        costs.unmount_s
        + costs.mount_s
        + costs.locate_per_file_s(1)
        + costs.overhead_s
        + costs.read_s(largest_mean)
    )


def stalled_reason(since: datetime, in_flight: int, probe_files: int) -> str:
    """The waiting reason of every tape while the library is stalled (carousel.outlook.reasons knows it)."""
    return (
        f"library not progressing since {since:%Y-%m-%d %H:%M:%S} UTC: nothing started or finished with"
        f" {in_flight} files in flight; only a probe of {probe_files} files goes to it until it moves"
    )


class LivenessWatch:
    def __init__(self, rule: LivenessRule, costs: LibraryCosts | None) -> None:
        self.rule = rule
        self.costs = costs
        self._quiet_since: datetime | None = None  # last progress, or when work went to an idle library
        self._in_flight = 0  # files with the library after the last pass
        self._expected = timedelta(seconds=rule.floor_s)
        self._stalled_since: datetime | None = None
        self._probed_at: datetime | None = None

    @property
    def expected_quiet(self) -> timedelta:
        return self._expected

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def observe_events(self, events: Iterable[Event]) -> bool:
        """Events taken from the library; True when they end a stall (the caller starts the recovery pace)."""
        progress = [e.at for e in events if e.kind in PROGRESS]
        if not progress:
            return False
        latest = max(progress)
        if self._quiet_since is None or latest > self._quiet_since:
            self._quiet_since = latest
        ended = self._stalled_since is not None
        self._stalled_since = None
        self._probed_at = None
        return ended

    def observe_offline(self) -> None:
        """An outage is the outage path's business (no submission, then the recovery pace): start afresh."""
        self._quiet_since = None
        self._stalled_since = None
        self._probed_at = None

    def after_pass(self, in_flight: int, in_flight_tapes: Iterable[TapeInFlight], now: datetime) -> None:
        """What the library holds after a planning pass (files in flight at the snapshot plus those handed
        over by the pass), and the physics of it."""
        self._in_flight = in_flight
        if in_flight <= 0:
            self._quiet_since = None  # an idle library owes no progress
            self._stalled_since = None
            return
        if self._quiet_since is None:
            self._quiet_since = now
        seconds = max(self.rule.floor_s, self.rule.factor * physics_quiet_s(self.costs, in_flight_tapes))
        self._expected = timedelta(seconds=seconds)

    def stalled_since(self, now: datetime) -> datetime | None:
        """Since when the library has made no progress, if that is longer than expected; else None."""
        quiet = self._quiet_since
        overdue = quiet is not None and self._in_flight > 0 and now - quiet > self._expected
        if self._stalled_since is None and overdue:
            self._stalled_since = quiet
        return self._stalled_since

    def probe_budget(self, now: datetime) -> int:
        """Files a stalled library may be given now: a probe, at most once per expected quiet time."""
        if self._probed_at is not None and now - self._probed_at < self._expected:
            return 0
        return self.rule.probe_files

    def probed(self, files: int, now: datetime) -> None:
        if files:
            self._probed_at = now

    def next_probe_at(self) -> datetime | None:
        if self._stalled_since is None or self._probed_at is None:
            return None
        return self._probed_at + self._expected

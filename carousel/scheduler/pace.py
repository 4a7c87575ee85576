"""The pace at which the cycle feeds the library after an outage: the backlog is released at a measured pace,
not as a flood (STAR's DataCarousel learnt it when HPSS came back to thousands of waiting requests at once).

While the library is OFFLINE nothing is submitted (the cycle sees to that). When it is back, or after a cycle
in which it refused batches (a library that refuses is not well either), the cycle's file budget starts at
`start_files` and grows linearly with time to the full `max_files` over `ramp_s`; a new outage or refusal
starts the ramp again, and so does the end of a stall (`restart`). Time comes from the injected clock, so the
ramp runs the same in virtual time.
"""

from __future__ import annotations

from datetime import datetime

from hsm_adapters.base import Health


class RecoveryPace:
    def __init__(self, *, max_files: int, start_files: int, ramp_s: float) -> None:
        if max_files <= 0 or start_files <= 0 or ramp_s < 0:
            raise ValueError(f"bad pace: max_files={max_files}, start_files={start_files}, ramp_s={ramp_s}")
        self.max_files = max_files
        self.start_files = min(start_files, max_files)
        self.ramp_s = ramp_s
        self._offline = False
        self._ramp_from: datetime | None = None  # when the last recovery began; None: full pace

    @property
    def recovering(self) -> bool:
        return self._ramp_from is not None

    def observe_health(self, health: Health, now: datetime) -> None:
        if health is Health.OFFLINE:
            self._offline = True
            self._ramp_from = None
        elif self._offline:
            self._offline = False
            self._ramp_from = now

    def observe_refusals(self, refused_files: int, now: datetime) -> None:
        if refused_files:
            self._ramp_from = now

    def restart(self, now: datetime) -> None:
        """The library recovered from something else (a stall: carousel.scheduler.liveness): ramp again."""
        self._ramp_from = now

    def budget(self, now: datetime) -> int:
        """Files the cycle may submit now."""
        if self._ramp_from is None or self.ramp_s == 0:
            return self.max_files
        elapsed = (now - self._ramp_from).total_seconds()
        if elapsed >= self.ramp_s:
            self._ramp_from = None
            return self.max_files
        grown = int(self.max_files * max(elapsed, 0.0) / self.ramp_s)
        return max(self.start_files, grown)

"""The projection shared by every caller: made at most every `refresh_s` seconds, one at a time.

A caller that finds it stale while another is making it gets the one there is; only when there is none yet do
callers wait for the first. A request submitted after the projection's snapshot asks for a new one, made when
the current one is at least `min_refresh_s` old (docs/api.md, "Outlook").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Generic, Protocol, TypeVar

from carousel.domain.clock import Clock

MIN_REFRESH_S = 1.0


class _Dated(Protocol):
    @property
    def now(self) -> datetime: ...


P = TypeVar("P", bound=_Dated)  # a projection, or a site's (carousel.outlook.site)


class SharedProjection(Generic[P]):
    """The latest projection, made anew by `compute` when older than `refresh_s` on `clock` (thread-safe)."""

    def __init__(
        self,
        compute: Callable[[], P],
        *,
        clock: Clock,
        refresh_s: float,
        min_refresh_s: float = MIN_REFRESH_S,
    ) -> None:
        self._compute = compute
        self._clock = clock
        self.refresh = timedelta(seconds=refresh_s)
        self.min_refresh = timedelta(seconds=min(min_refresh_s, refresh_s))
        self._ready = threading.Condition()
        self._current: P | None = None
        self._made_at = datetime.min.replace(tzinfo=UTC)
        self._computing = False
        self.computed = 0  # projections made (for tests and logs)

    def get(self, *, covering: datetime | None = None) -> P:
        """The shared projection; a fresh one if it is older than refresh_s, or if its snapshot precedes
        `covering` (a request's submission) and it is older than min_refresh_s."""
        with self._ready:
            while True:
                current = self._current
                if current is not None and not self._stale(current, covering):
                    return current
                if not self._computing:
                    self._computing = True
                    break
                if current is not None:  # being made anew by another caller: this one will do
                    return current
                self._ready.wait()
        started = self._clock.now()
        try:
            made = self._compute()
        finally:
            with self._ready:
                self._computing = False
                self._ready.notify_all()
        with self._ready:
            self._current, self._made_at = made, started
            self.computed += 1
        return made

    def _stale(self, current: P, covering: datetime | None) -> bool:
        age = self._clock.now() - self._made_at
        if age >= self.refresh:
            return True
        return covering is not None and current.now < covering and age >= self.min_refresh

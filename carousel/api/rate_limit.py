"""Call rates per caller and per group: token buckets on the injected clock.

The `limits` package was considered: its in-memory storage reads the system time itself, so it could not
be tested in virtual time nor follow the service's clock; a token bucket is a few lines. A call is
admitted only when both its caller's and its group's buckets hold a token, and takes one from each.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from carousel.domain.errors import TooManyRequests


@dataclass(slots=True)
class TokenBucket:
    rate: float  # tokens per second
    capacity: float
    tokens: float
    updated: datetime

    def refill(self, now: datetime) -> None:
        elapsed = max(0.0, (now - self.updated).total_seconds())
        self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
        self.updated = max(now, self.updated)

    def wait_s(self) -> float:
        """Seconds until one token is there (0: one is there now)."""
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate


@dataclass(frozen=True, slots=True)
class Rate:
    per_s: float
    burst: int


class RateLimiter:
    """Buckets by key ("caller:<name>", "group:<name>"), the least recently used forgotten past
    `max_keys` (a forgotten key starts again with a full bucket)."""

    def __init__(
        self, *, caller: Rate | None, group: Rate | None, clock: Clock, max_keys: int = 100_000
    ) -> None:
        self._caller = caller
        self._group = group
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        return self._caller is not None or self._group is not None

    def charge(self, caller: Caller) -> None:
        """Take one call from the caller's and its group's buckets, or TooManyRequests (nothing taken)."""
        if not self.active:
            return
        now = self._clock.now()
        wanted: list[tuple[str, Rate]] = []
        if self._caller is not None:
            wanted.append(("caller:" + caller.name, self._caller))
        group = caller.limit_group  # None: a caller without a group is limited per caller only
        if self._group is not None and group is not None:
            wanted.append(("group:" + group, self._group))
        if not wanted:
            return
        with self._lock:
            buckets = [self._bucket(key, rate, now) for key, rate in wanted]
            wait = max(bucket.wait_s() for bucket in buckets)
            if wait > 0:
                which = " and ".join(
                    key.split(":", 1)[0]
                    for (key, _), b in zip(wanted, buckets, strict=True)
                    if b.wait_s() > 0
                )
                raise TooManyRequests(
                    f"too many calls: the {which} rate limit is reached; retry in {wait:.1f} s",
                    retry_after_s=max(1, math.ceil(wait)),
                )
            for bucket in buckets:
                bucket.tokens -= 1

    def _bucket(self, key: str, rate: Rate, now: datetime) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(rate.per_s, float(rate.burst), float(rate.burst), now)
            self._buckets[key] = bucket
            if len(self._buckets) > self._max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            bucket.refill(now)
        return bucket

"""Call rates per caller and per group: token buckets on the injected clock, kept in the database.

The buckets are rows (carousel.db.rate_queries), so every API process, on one host or several, takes from
the same ones: a bucket per process would let N processes admit N times the rate. A call is admitted only
when both its caller's and its group's buckets hold a token, and takes one from each, in one transaction.
The `limits` package was considered: its in-memory storage reads the system time itself, so it could not be
tested in virtual time nor follow the service's clock; its Redis storage would be one more service to run.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from carousel.db import rate_queries as q
from carousel.db.transient_errors import retrying
from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from carousel.domain.errors import TooManyRequests

# Every this many charges a process forgets the buckets that are full again (no row is a full bucket).
PRUNE_EVERY = 1000


@dataclass(slots=True)
class TokenBucket:
    rate: float  # tokens per second
    capacity: float
    tokens: float
    updated: datetime

    def refill(self, now: datetime) -> None:
        elapsed = max(0.0, (now - self.updated).total_seconds())
        self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
        self.updated = max(now, self.updated)  # a process whose clock is behind adds nothing

    def wait_s(self) -> float:
        """Seconds until one token is there (0: one is there now)."""
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate


@dataclass(frozen=True, slots=True)
class Rate:
    per_s: float
    burst: int

    @property
    def refilled_s(self) -> float:
        """Seconds an empty bucket takes to be full again."""
        return self.burst / self.per_s


class RateLimiter:
    """Buckets by key ("caller:<name>", "group:<name>") in the database of `session_factory`."""

    def __init__(
        self,
        *,
        caller: Rate | None,
        group: Rate | None,
        clock: Clock,
        session_factory: sessionmaker[Session],
    ) -> None:
        self._caller = caller
        self._group = group
        self._clock = clock
        self._session_factory = session_factory
        self._charges = 0
        self._counting = threading.Lock()

    @property
    def active(self) -> bool:
        return self._caller is not None or self._group is not None

    def charge(self, caller: Caller) -> None:
        """Take one call from the caller's and its group's buckets, or TooManyRequests (nothing taken)."""
        if not self.active:
            return
        wanted: dict[str, Rate] = {}
        if self._caller is not None:
            wanted["caller:" + caller.name] = self._caller
        group = caller.limit_group  # None: a caller without a group is limited per caller only
        if self._group is not None and group is not None:
            wanted["group:" + group] = self._group
        if not wanted:
            return
        now = self._clock.now()
        # a deadlock or serialization failure on PostgreSQL is retried whole: the charge is only database work
        wait_by_key = retrying()(self._take, wanted, now)
        if wait_by_key:
            wait = max(wait_by_key.values())
            which = " and ".join(key.split(":", 1)[0] for key in wanted if key in wait_by_key)
            raise TooManyRequests(
                f"too many calls: the {which} rate limit is reached; retry in {wait:.1f} s",
                retry_after_s=max(1, math.ceil(wait)),
            )
        self._maybe_prune(now)

    def _take(self, wanted: dict[str, Rate], now: datetime) -> dict[str, float]:
        """One token from each bucket, or none and the wait of each bucket that has none."""
        with self._session_factory() as session, session.begin():
            stored = q.locked_buckets(session, {key: float(rate.burst) for key, rate in wanted.items()}, now)
            buckets = {
                key: TokenBucket(rate.per_s, float(rate.burst), stored[key].tokens, stored[key].updated_at)
                for key, rate in wanted.items()
            }
            for bucket in buckets.values():
                bucket.refill(now)
            waits = {key: bucket.wait_s() for key, bucket in buckets.items() if bucket.wait_s() > 0}
            if not waits:
                for bucket in buckets.values():
                    bucket.tokens -= 1
            q.store_buckets(session, {key: q.StoredBucket(b.tokens, b.updated) for key, b in buckets.items()})
            return waits

    def _maybe_prune(self, now: datetime) -> None:
        with self._counting:
            self._charges += 1
            due = self._charges % PRUNE_EVERY == 0
        if not due:
            return
        longest = max(rate.refilled_s for rate in (self._caller, self._group) if rate is not None)
        with self._session_factory() as session, session.begin():
            q.prune_full_buckets(session, now - timedelta(seconds=longest))

"""Call rates per caller and per group: token buckets on the injected clock, kept in the database.

The buckets are rows (carousel.db.rate_queries), so every API process, on one host or several, takes from
the same ones: a bucket per process would let N processes admit N times the rate. A call is admitted only
when both its caller's and its group's buckets hold a token, and takes one from each, in one transaction
of one statement per bucket; a refusal rolls it back and reads the buckets to say how long to wait.
The `limits` package was considered: its in-memory storage reads the system time itself, so it could not be
tested in virtual time nor follow the service's clock; its Redis storage would be one more service to run.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from carousel.db import rate_queries as q
from carousel.db.rate_queries import ROUNDING
from carousel.db.transient_errors import RETRY_AFTER_S, database_unavailable, retrying
from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from carousel.domain.errors import TooManyRequests, Unavailable


class _Refused(Exception):
    """A bucket had no token: the charge's transaction is rolled back."""


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
        return 0.0 if self.tokens >= 1 - ROUNDING else (1 - self.tokens) / self.rate


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
        autocommit_factory: sessionmaker[Session] | None = None,
    ) -> None:
        """`autocommit_factory`: sessions whose statements each commit on their own (PostgreSQL), where a
        charge of one bucket is one statement and one round trip; without it, every charge is a transaction
        of `session_factory`."""
        self._caller = caller
        self._group = group
        self._clock = clock
        self._session_factory = session_factory
        self._autocommit_factory = autocommit_factory
        self._charges = 0
        self._counting = threading.Lock()

    @property
    def active(self) -> bool:
        return self._caller is not None or self._group is not None

    def charge(self, caller: Caller, *, autocommit: Session | None = None) -> None:
        """Take one call from the caller's and its group's buckets, or TooManyRequests (nothing taken).
        `autocommit`: a session of this limiter's database whose statements commit on their own, to charge
        one bucket in rather than checking out a connection of its own."""
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
        try:
            # a deadlock or serialization failure is retried whole: the charge is only database work
            wait_by_key = retrying()(self._take, wanted, now, autocommit)
        except SQLAlchemyError as exc:
            # charged before the body is read (carousel.api.authenticate_first), outside the routes' own
            # database error handling: the same 503 here
            if not database_unavailable(exc):
                raise
            raise Unavailable(
                "the database does not answer now; try again shortly", retry_after_s=RETRY_AFTER_S
            ) from exc
        if wait_by_key:
            wait = max(wait_by_key.values())
            which = " and ".join(key.split(":", 1)[0] for key in wanted if key in wait_by_key)
            raise TooManyRequests(
                f"too many calls: the {which} rate limit is reached; retry in {wait:.1f} s",
                retry_after_s=max(1, math.ceil(wait)),
            )
        self._maybe_prune(now)

    def _take(self, wanted: dict[str, Rate], now: datetime, autocommit: Session | None) -> dict[str, float]:
        """One token from each bucket, or none and the wait of each bucket that has none."""
        charges = [q.BucketCharge(key, rate.per_s, float(rate.burst)) for key, rate in sorted(wanted.items())]
        if len(charges) == 1 and autocommit is not None:
            if q.take_token(autocommit, charges[0], now):
                return {}
        elif len(charges) == 1 and self._autocommit_factory is not None:
            with self._autocommit_factory() as session:
                if q.take_token(session, charges[0], now):
                    return {}
        else:
            try:
                with self._session_factory() as session, session.begin():
                    for charge in charges:
                        if not q.take_token(session, charge, now):
                            raise _Refused  # rolls back: a refused call takes no token from any bucket
                return {}
            except _Refused:
                pass
        with self._session_factory() as session, session.begin():
            stored = q.buckets(session, list(wanted))
        waits: dict[str, float] = {}
        for key, rate in wanted.items():
            found = stored.get(key)
            if found is None:
                continue  # gone meanwhile: full
            bucket = TokenBucket(rate.per_s, float(rate.burst), found.tokens, found.updated_at)
            bucket.refill(now)
            if bucket.wait_s() > 0:
                waits[key] = bucket.wait_s()
        # the buckets moved on between the two transactions (refilled, or a full one pruned): the call stays
        # refused, told to wait one token's time
        return waits or {key: 1 / rate.per_s for key, rate in wanted.items()}

    def _maybe_prune(self, now: datetime) -> None:
        with self._counting:
            self._charges += 1
            due = self._charges % PRUNE_EVERY == 0
        if not due:
            return
        longest = max(rate.refilled_s for rate in (self._caller, self._group) if rate is not None)
        with self._session_factory() as session, session.begin():
            q.prune_full_buckets(session, now - timedelta(seconds=longest))

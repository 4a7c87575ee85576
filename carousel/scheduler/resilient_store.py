"""The database queue store as the live cycle needs it, around carousel.scheduler.queue_store:

- each call is one transaction, run again whole when PostgreSQL rolls it back for a deadlock or a
  serialization failure (carousel.db.transient_errors);
- a hand-over the library accepted but the database could not record (it went away between the submission
  and the record) is kept, and recorded first thing in a later cycle, before stale-claim recovery could put
  those files back in the queue: otherwise they would reach the same library again under a new batch key
  and be read twice.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

import structlog

from carousel.db.transient_errors import retrying
from carousel.domain.planning import Selection
from carousel.domain.queue import HandedOver, QueueDemand
from carousel.scheduler.queue_store import Claim, QueueStore

log = structlog.get_logger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Unrecorded:
    accepted: tuple[HandedOver, ...]
    refused: tuple[int, ...]
    at: datetime


class ResilientStore:
    def __init__(self, inner: QueueStore, *, sleep: Callable[[float], None] | None = None) -> None:
        self.inner = inner
        self._sleep = sleep
        self._unrecorded: list[_Unrecorded] = []

    @property
    def unrecorded(self) -> int:
        """Files handed over whose record is still to be written."""
        return sum(len(h.file_ids) for u in self._unrecorded for h in u.accepted)

    def _run(self, call: Callable[[], T]) -> T:
        retry = retrying() if self._sleep is None else retrying(sleep=self._sleep)
        return retry(call)

    def demand(self, now: datetime) -> QueueDemand:
        return self._run(lambda: self.inner.demand(now))

    def claim(
        self,
        selections: Sequence[Selection],
        new_key: Callable[[], str],
        now: datetime,
        *,
        byte_budget: int | None = None,
    ) -> list[Claim]:
        return self._run(lambda: self.inner.claim(selections, new_key, now, byte_budget=byte_budget))

    def handed_over(
        self, accepted: Sequence[HandedOver], refused: Sequence[int], now: datetime
    ) -> tuple[int, int]:
        try:
            return self._run(lambda: self.inner.handed_over(accepted, refused, now))
        except Exception:
            self._unrecorded.append(_Unrecorded(tuple(accepted), tuple(refused), now))
            log.warning("hand-over not recorded: kept for the next cycle", files=self.unrecorded)
            raise

    def record_unrecorded(self) -> int:
        """Writes the hand-overs kept by failed records, oldest first; raises (keeping the rest) if the
        database still fails. Returns the files marked SUBMITTED."""
        marked = 0
        while self._unrecorded:
            first = self._unrecorded[0]
            record = functools.partial(self.inner.handed_over, first.accepted, first.refused, first.at)
            submitted, _ = self._run(record)
            marked += submitted
            self._unrecorded.pop(0)
        if marked:
            log.info("recorded hand-overs kept from an earlier cycle", files=marked)
        return marked

"""How honest the outlook's ETAs are: the ETA a request is given at submission against when it is done.

A trace is replayed (carousel.replay.driver) with an observer. At the first planning pass after a
request arrives, the outlook is made as the API makes it: the queue's snapshot (the pass's own) projected
forward under the replay's policy on the library's cost figures (carousel.outlook.projection), then the
request's files per tape read from the queue (carousel.outlook.request_outlook). After the replay, each
request's error is |ETA - done| / (done - arrival): the error relative to the wait the request had.
Requests answered at once (every file on disk already) and those given no ETA are counted apart.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from carousel.domain.queue import RequestWork
from carousel.domain.states import FILE_IN_FLIGHT, FileState
from carousel.outlook.projection import project
from carousel.outlook.request_outlook import request_outlook
from carousel.replay.driver import EPOCH, PassSeen, ReplayConfig, replay
from carousel.replay.trace import Trace
from policies.registry import build_policy


@dataclass(frozen=True, slots=True)
class RequestEta:
    request: str
    arrival_s: float
    eta_s: float | None  # trace seconds; None: no ETA was given
    done_s: float | None  # None: not every file ended (cannot happen once a replay ends)
    rough: bool

    @property
    def error(self) -> float | None:
        """|ETA - done| relative to the request's wait; None without an ETA or a wait."""
        if self.eta_s is None or self.done_s is None or self.done_s <= self.arrival_s:
            return None
        return abs(self.eta_s - self.done_s) / (self.done_s - self.arrival_s)


@dataclass(frozen=True, slots=True)
class EtaHonesty:
    requests: tuple[RequestEta, ...]
    projections: int  # outlooks made (one per pass with new requests)

    @property
    def errors(self) -> list[float]:
        return sorted(e for r in self.requests if (e := r.error) is not None)

    @property
    def median(self) -> float:
        return statistics.median(self.errors)

    def quantile(self, q: float) -> float:
        errors = self.errors
        return errors[min(len(errors) - 1, int(q * len(errors)))]

    @property
    def without_eta(self) -> int:
        return sum(
            1 for r in self.requests if r.eta_s is None and r.done_s is not None and r.done_s > r.arrival_s
        )

    @property
    def late(self) -> float:
        """The share of requests done after their ETA."""
        given = [r for r in self.requests if r.error is not None]
        return sum(
            1 for r in given if r.done_s is not None and r.eta_s is not None and r.done_s > r.eta_s
        ) / max(1, len(given))


@dataclass
class _Observer:
    trace: Trace
    config: ReplayConfig
    etas: dict[str, tuple[float | None, bool]] = field(default_factory=dict)  # request -> (eta_s, rough)
    seen: int = 0  # trace rows looked at
    projections: int = 0
    _files: dict[str, Any] = field(default_factory=dict)  # path -> the store's file

    def __post_init__(self) -> None:
        self._policy = build_policy(self.config.policy, self.config.policy_options)

    def __call__(self, seen: PassSeen) -> None:
        if seen.arrived == self.seen:
            return
        new: dict[str, list[str]] = {}
        for row in self.trace.rows[self.seen : seen.arrived]:
            new.setdefault(row.request, []).append(row.path)
        self.seen = seen.arrived
        store = seen.store
        for file in store.files[len(self._files) :]:
            self._files[file.path] = file
        snapshot = seen.dispatch.snapshot
        projection = project(snapshot, self._policy.plan)
        self.projections += 1
        for request, paths in new.items():
            work = self._work([self._files[p] for p in paths if p in self._files], snapshot.now)
            if work.pending == 0:
                continue  # answered at once
            outlook = request_outlook(projection, work)
            eta = None if outlook.eta is None or outlook.unplanned else (outlook.eta - EPOCH).total_seconds()
            self.etas[request] = (eta, outlook.rough)

    @staticmethod
    def _work(files: list[Any], now: datetime) -> RequestWork:
        queued: dict[str, int] = {}
        in_flight: dict[str, int] = {}
        retry = 0
        for f in files:
            if f.state is FileState.QUEUED and f.not_before is not None and f.not_before > now:
                retry += 1
            elif f.state is FileState.QUEUED:
                queued[f.tape] = queued.get(f.tape, 0) + 1
            elif f.state in FILE_IN_FLIGHT:
                # claimed by this very pass: queued in the snapshot the projection starts from
                claimed_now = f.submitted_at is not None and f.submitted_at >= now
                target = queued if claimed_now else in_flight
                target[f.tape] = target.get(f.tape, 0) + 1
        return RequestWork(queued=queued, in_flight=in_flight, retry_pending=retry)


def measure(trace: Trace, config: ReplayConfig) -> EtaHonesty:
    observer = _Observer(trace, config)
    result = replay(trace, config, observer=observer)
    arrival: dict[str, float] = {}
    done: dict[str, float | None] = {}
    for row, outcome in zip(trace.rows, result.store.rows, strict=True):
        arrival.setdefault(row.request, row.arrival_s)
        end = None if outcome.end is None else (outcome.end - EPOCH).total_seconds()
        before = done.get(row.request, 0.0)
        done[row.request] = None if end is None or before is None else max(before, end)
    requests = tuple(
        RequestEta(name, arrival[name], eta, done[name], rough)
        for name, (eta, rough) in sorted(observer.etas.items())
    )
    return EtaHonesty(requests, observer.projections)

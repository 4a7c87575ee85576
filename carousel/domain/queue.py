"""What the scheduler's planning path exchanges with a queue store, whichever it is (database rows in the
service, memory in the replay): the demand a snapshot is made of, the files a claim took, the batches the
library accepted, the reads the read timeouts look at. And one request's pending files, which the store counts
and the request's outlook (carousel.outlook) is read from."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from carousel.domain.planning import GroupUsage, TapeDemand, TapeInFlight


@dataclass(frozen=True, slots=True)
class QueueDemand:
    """The queue as a policy needs it: one entry per tape with work, and what is in flight."""

    tapes: tuple[TapeDemand, ...]
    in_flight: int
    in_flight_tapes: tuple[TapeInFlight, ...] = ()
    usage: tuple[GroupUsage, ...] = ()
    held: Mapping[str, str] = field(default_factory=dict)  # tapes held back by their state, and why


@dataclass(frozen=True, slots=True)
class ClaimedFile:
    id: int
    path: str
    tape: str
    position_bytes: int
    size_bytes: int
    service_class: str
    queued_at: datetime


@dataclass(frozen=True, slots=True)
class HandedOver:
    """One batch the adapter accepted: its key and tape, and the ids of its files."""

    batch_key: str
    tape: str
    file_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Reading:
    """A file the library has started reading (FILE_STARTED applied) and not finished."""

    id: int
    tape: str | None
    size_bytes: int
    batch_key: str
    started_at: datetime


@dataclass(frozen=True, slots=True)
class RequestWork:
    """A request's pending files as the queue holds them."""

    queued: Mapping[str, int] = field(default_factory=dict)  # tape -> files queued and due
    in_flight: Mapping[str, int] = field(default_factory=dict)  # tape -> files claimed or with the library
    retry_pending: int = 0  # files backing off after a failed read
    retry_due_at: datetime | None = None  # when the last of them is due again
    tape_unknown: int = 0
    unknown_reason: str | None = None  # what the library said of one of them
    # the same files per library (a tape is (library, tape)); the fields above add them up across libraries
    libraries: Mapping[str, RequestWork] = field(default_factory=dict)

    @property
    def pending(self) -> int:
        waiting_apart = self.retry_pending + self.tape_unknown
        return sum(self.queued.values()) + sum(self.in_flight.values()) + waiting_apart


def split_mount_time(mounts: Iterable[tuple[float, Mapping[str, int]]]) -> tuple[GroupUsage, ...]:
    """Fair share accounting: each mount's drive seconds split between groups in proportion to the files of
    each that it started reading; the totals per group, by group name."""
    used: dict[str, float] = defaultdict(float)
    for seconds, files in mounts:
        total = sum(files.values())
        for group, count in files.items():
            used[group] += seconds * count / total
    return tuple(GroupUsage(group, drive_s) for group, drive_s in sorted(used.items()))

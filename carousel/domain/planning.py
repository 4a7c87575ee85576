"""What a policy sees (a Snapshot) and what it returns (a Plan). Both immutable, both pure data.

The snapshot is per tape, not per file, so a cycle's cost grows with the number of tapes that have work.
A plan names how many files of which tape to claim and in which order; the claim step picks the files.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from carousel.domain.buffer import BufferView


@dataclass(frozen=True, slots=True)
class GroupDemand:
    """One group's share of a tape's work (queued, or in flight in `Snapshot.in_flight_tapes`)."""

    group: str
    files: int
    bytes: int
    oldest: datetime | None = None  # arrival of the group's oldest queued file on this tape
    max_priority: int = 0


@dataclass(frozen=True, slots=True)
class TapeDemand:
    """The queued work for one tape."""

    tape: str
    files: int
    bytes: int
    oldest: datetime  # arrival of the oldest queued file for this tape
    max_priority: int
    service_class: str
    groups: tuple[GroupDemand, ...] = ()
    in_flight: int = 0  # files of this tape already handed to the HSM and not finished
    retries: int = 0  # of the queued files, those whose read failed before (they want a later mount)


@dataclass(frozen=True, slots=True)
class TapeInFlight:
    """A tape with files claimed or handed to the HSM and not finished, whether or not more are queued."""

    tape: str
    files: int
    groups: tuple[GroupDemand, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupUsage:
    """Drive time a group used over the store's accounting window (reads plus its share of mounts)."""

    group: str
    drive_s: float


@dataclass(frozen=True, slots=True)
class LibraryCosts:
    """The library's physics as plain numbers, so policies can weigh mounts against waiting without knowing
    any drive model. Built by whoever knows the library (the simulated library derives them from its physics).

    locate_s holds (files read in one pass, mean locate per file) points, files increasing; between points the
    mean is interpolated on log(files), beyond them the end value holds.
    """

    mount_s: float  # robot exchange + load, until the first locate can start
    unmount_s: float  # expected rewind + unload + robot exchange
    rate_bytes_per_s: float
    overhead_s: float  # per file once positioned
    locate_s: tuple[tuple[int, float], ...]
    # robot time one mount and its dismount take together (two moves); 0: not published. With `robots`
    # robots, mounts cannot start faster than one per robot_s / robots seconds however many drives wait
    robot_s: float = 0.0
    robots: int = 1

    def __post_init__(self) -> None:
        if not self.locate_s:
            raise ValueError("locate_s needs at least one (files, seconds) point")
        counts = [n for n, _ in self.locate_s]
        if counts[0] < 1 or any(b <= a for a, b in itertools.pairwise(counts)):
            raise ValueError(f"locate_s file counts must start at 1 or more and increase: {counts}")
        if self.rate_bytes_per_s <= 0:
            raise ValueError(f"rate_bytes_per_s must be positive, not {self.rate_bytes_per_s}")
        if (
            min(self.mount_s, self.unmount_s, self.overhead_s, self.robot_s, *(t for _, t in self.locate_s))
            < 0
        ):
            raise ValueError("costs may not be negative")
        if self.robots < 1:
            raise ValueError(f"robots must be at least 1, not {self.robots}")

    def locate_per_file_s(self, files: int) -> float:
        points = self.locate_s
        if files <= points[0][0]:
            return points[0][1]
        for (low_n, low_s), (high_n, high_s) in itertools.pairwise(points):
            if files <= high_n:
                weight = (math.log(files) - math.log(low_n)) / (math.log(high_n) - math.log(low_n))
                return low_s + weight * (high_s - low_s)
        return points[-1][1]

    def read_s(self, size_bytes: int) -> float:
        return size_bytes / self.rate_bytes_per_s

    def pass_s(self, files: int, size_bytes: int) -> float:
        """Locate, overhead and read of `files` files totalling `size_bytes` in one pass, once mounted."""
        if files <= 0:
            return 0.0
        return files * (self.locate_per_file_s(files) + self.overhead_s) + self.read_s(size_bytes)

    def mount_service_s(self, files: int, size_bytes: int) -> float:
        """A whole mount: mount, one pass over the files, unmount: the drive time it takes."""
        return self.mount_s + self.pass_s(files, size_bytes) + self.unmount_s

    def per_clock(self, scale: float) -> LibraryCosts:
        """These costs in seconds of a clock the library runs `scale` times faster than (a simulated library
        on a scaled clock): policies weigh them against waiting measured on that clock."""
        if scale <= 0:
            raise ValueError(f"scale must be positive, not {scale}")
        if scale == 1:
            return self
        return LibraryCosts(
            mount_s=self.mount_s / scale,
            unmount_s=self.unmount_s / scale,
            rate_bytes_per_s=self.rate_bytes_per_s * scale,
            overhead_s=self.overhead_s / scale,
            locate_s=tuple((files, seconds / scale) for files, seconds in self.locate_s),
            robot_s=self.robot_s / scale,
            robots=self.robots,
        )


@dataclass(frozen=True, slots=True)
class LibraryView:
    """What the scheduler knows of the library at snapshot time."""

    online: bool
    drives_total: int
    drives_free: int
    queue_slots: dict[str, int] = field(default_factory=dict)  # per class of service
    mounted_tapes: tuple[str, ...] = ()
    costs: LibraryCosts | None = None  # None: the back-end publishes no cost figures


@dataclass(frozen=True, slots=True)
class Snapshot:
    now: datetime
    tapes: tuple[TapeDemand, ...]
    library: LibraryView
    in_flight: int = 0  # files handed to the HSM and not finished, all tapes
    in_flight_tapes: tuple[TapeInFlight, ...] = ()  # per tape, by tape id
    usage: tuple[GroupUsage, ...] = ()  # drive time per group, by group name (fair share accounting)
    # the disk buffer the library stages into: its free space, so a policy can prefer tapes whose work fits;
    # None when the buffer is off (no limit on what is handed over)
    buffer: BufferView | None = None
    # tapes an admin holds back (disabled, broken), with why: left out of `tapes`, shown as waiting
    held: Mapping[str, str] = field(default_factory=dict)


class ReadOrder(StrEnum):
    POSITION = "POSITION"  # head order on tape
    ARRIVAL = "ARRIVAL"  # oldest first


@dataclass(frozen=True, slots=True)
class Selection:
    """Claim up to max_files (and max_bytes) queued files, of one tape or (tape=None) of any tape.

    service_class narrows a selection to one class of service, so a policy can respect the HSM's queue depth
    per class; group narrows it to one group's files. max_bytes never leaves a selection empty: its first
    file is claimed whatever its size.
    """

    tape: str | None
    max_files: int
    order: ReadOrder = ReadOrder.POSITION
    max_bytes: int | None = None
    one_file_per_batch: bool = False  # hand files over one by one (the unaggregated baseline)
    service_class: str | None = None
    group: str | None = None  # narrows the selection to the files of one group (fair share)
    # leave out files whose read failed before, so they wait for a later mount than the one being fed
    first_attempts_only: bool = False


@dataclass(frozen=True, slots=True)
class Plan:
    selections: tuple[Selection, ...] = ()
    # tapes with work the policy chose not to serve now, and why (shown to users and admins)
    waiting: dict[str, str] = field(default_factory=dict)
    # Time alone changes this plan no sooner than this (an age threshold it waits for); None: only new work,
    # events or library changes do. The service cycles on its interval anyway; the replay uses it to skip
    # cycles that could not plan anything new.
    wake_at: datetime | None = None

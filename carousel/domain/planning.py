"""What a policy sees (a Snapshot) and what it returns (a Plan). Both immutable, both pure data.

The snapshot is per tape, not per file, so a cycle's cost grows with the number of tapes that have work.
A plan names how many files of which tape to claim and in which order; the claim step picks the files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class GroupDemand:
    group: str
    files: int
    bytes: int


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


@dataclass(frozen=True, slots=True)
class LibraryView:
    """What the scheduler knows of the library at snapshot time."""

    online: bool
    drives_total: int
    drives_free: int
    queue_slots: dict[str, int] = field(default_factory=dict)  # per class of service
    mounted_tapes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Snapshot:
    now: datetime
    tapes: tuple[TapeDemand, ...]
    library: LibraryView
    in_flight: int = 0  # files handed to the HSM and not finished, all tapes


class ReadOrder(StrEnum):
    POSITION = "POSITION"  # head order on tape
    ARRIVAL = "ARRIVAL"  # oldest first


@dataclass(frozen=True, slots=True)
class Selection:
    """Claim up to max_files (and max_bytes) queued files, of one tape or (tape=None) of any tape.

    service_class narrows a tape=None selection to one class of service, so a policy can respect the HSM's
    queue depth per class. max_bytes never leaves a selection empty: its first file is claimed whatever
    its size.
    """

    tape: str | None
    max_files: int
    order: ReadOrder = ReadOrder.POSITION
    max_bytes: int | None = None
    one_file_per_batch: bool = False  # hand files over one by one (the unaggregated baseline)
    service_class: str | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    selections: tuple[Selection, ...] = ()
    # tapes with work the policy chose not to serve now, and why (shown to users and admins)
    waiting: dict[str, str] = field(default_factory=dict)

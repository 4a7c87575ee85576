"""The protocol every mass-storage back-end speaks. Small on purpose: read it in a minute.

carousel asks where files are (`lookup`), hands over batches of one tape in the order it wants them read
(`submit`, returns at once), and learns what happened from events, either pushed to a sink it provides or
drained by `poll_events`. `cancel` says honestly what could still be stopped. `capacity` and `health` let the
scheduler feed the library at its pace and stop during outages.

Bytes: carousel owns the disk buffer. Each file of a batch may carry a `destination`, a path carousel chose
(in the buffer's incoming directory); the back-end writes the file's bytes there before it reports
FILE_STAGED, with the checksum it knows for the file. carousel verifies the bytes against that checksum and
moves them into the buffer atomically. A file without a destination is recalled without bytes (the replay's
accounting, or a back-end that keeps its own disk copy). `evict` tells the back-end a disk copy is gone.

Operators' hands (optional, each a protocol of its own that an adapter may speak): `ControlsDrives` takes a
drive down (after its current mount, or at once) and up again; `KnowsTapes` says whether a cartridge exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

DEFAULT_SERVICE_CLASS = "default"


# --- lookup ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OnTape:
    """The file is on tape: where, how big, and whether a disk copy exists already."""

    path: str
    tape: str
    position_bytes: int  # bytes from the start of the tape's data to the file's first byte
    size_bytes: int
    on_disk: bool = False
    checksum: str | None = None  # adler32 as 8 lower-case hex digits, when the library knows it
    # which of the site's libraries holds the copy chosen (hsm_adapters.site); an adapter leaves it None
    library: str | None = None


@dataclass(frozen=True, slots=True)
class NotOnTape:
    """A definite answer: the library holds no tape copy of this path (absent, or a disk-only file)."""

    path: str
    reason: str
    on_disk: bool = False


@dataclass(frozen=True, slots=True)
class Unknown:
    """No answer now (back-end unreachable, timed out): ask again later."""

    path: str
    reason: str


LookupResult = OnTape | NotOnTape | Unknown


# --- submission -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchFile:
    key: str  # carousel's id for this recall; events and cancel name files by it
    path: str
    position_bytes: int
    size_bytes: int
    # where to write the bytes (absolute path chosen by carousel; its directory exists); None: no bytes
    destination: str | None = None


@dataclass(frozen=True, slots=True)
class Batch:
    """Files of one tape, in the order carousel wants them read."""

    key: str  # idempotency key: submitting the same key twice is a no-op
    tape: str
    files: tuple[BatchFile, ...]
    service_class: str = DEFAULT_SERVICE_CLASS


# --- events ---------------------------------------------------------------------------------------------


class EventKind(StrEnum):
    MOUNTED = "MOUNTED"
    FILE_STARTED = "FILE_STARTED"
    FILE_STAGED = "FILE_STAGED"
    FILE_FAILED = "FILE_FAILED"
    FILE_CANCELLED = "FILE_CANCELLED"
    UNMOUNTED = "UNMOUNTED"
    # the library could not mount `tape` (`reason`): a bad cartridge. carousel counts them in a row per tape
    # and can set the tape broken (docs/admin.md); the files it held for the tape get their own events
    MOUNT_FAILED = "MOUNT_FAILED"


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    at: datetime  # timezone-aware UTC
    seq: int  # strictly increasing per adapter instance: consumers apply events in this order
    tape: str | None = None
    drive: str | None = None
    file_key: str | None = None
    path: str | None = None
    batch_key: str | None = None
    bytes: int = 0
    reason: str | None = None  # why a file failed or was cancelled
    retryable: bool = True  # False: retrying the file will not help (e.g. not on this tape)
    checksum: str | None = None  # FILE_STAGED: the file's adler32 (8 hex digits) as the library knows it


EventSink = Callable[[Event], None]


# --- cancel, capacity, health ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CancelResult:
    cancelled: tuple[str, ...]  # file keys the HSM will not read
    in_progress: tuple[str, ...]  # already being read (or done): their events still come
    unknown: tuple[str, ...]  # keys the HSM never had


class Health(StrEnum):
    ONLINE = "ONLINE"
    DEGRADED = "DEGRADED"  # working, with fewer drives or slower than it should
    OFFLINE = "OFFLINE"  # do not submit


@dataclass(frozen=True, slots=True)
class Capacity:
    drives_total: int
    drives_free: int
    # files the HSM will still accept now, per class of service (its queue depth minus what it holds)
    queue_slots: dict[str, int] = field(default_factory=dict)
    mounted_tapes: tuple[str, ...] = ()


@runtime_checkable
class HsmAdapter(Protocol):
    name: str

    def lookup(self, paths: Sequence[str]) -> list[LookupResult]:
        """One result per path, in the same order."""
        ...

    def submit(self, batch: Batch) -> None:
        """Accept a batch and return at once; idempotent by batch.key."""
        ...

    def cancel(self, file_keys: Sequence[str]) -> CancelResult: ...

    def poll_events(self, limit: int | None = None) -> list[Event]:
        """Events not yet delivered, oldest first (in seq order). Each is delivered once."""
        ...

    def set_sink(self, sink: EventSink | None) -> None:
        """Push events to sink as they happen instead of keeping them for poll_events."""
        ...

    def evict(self, paths: Sequence[str]) -> None:
        """carousel removed these paths' disk copies: forget any copy the back-end counts as on disk."""
        ...

    def capacity(self) -> Capacity: ...

    def health(self) -> Health: ...

    def close(self) -> None: ...


# --- operators' hands (optional) ------------------------------------------------------------------------


class DriveCommand(StrEnum):
    UP = "up"
    # finish the current mount (what the library holds for its cartridge), unmount, take no new mount
    DOWN_AFTER_MOUNT = "down_after_mount"
    # stop at once: the read in progress goes back to the library's queue (read again on another drive)
    DOWN_NOW = "down_now"


@runtime_checkable
class ControlsDrives(Protocol):
    """An adapter whose library lets carousel take drives down and up (the leader hands admins' changes
    over: docs/admin.md). A down drive counts in no capacity."""

    def drive_names(self) -> tuple[str, ...]:
        """The library's drives, by the names its events use."""
        ...

    def set_drive(self, drive: str, command: DriveCommand) -> None:
        """Apply the command; idempotent (a drive down stays down). Raises KeyError for an unknown drive."""
        ...


@runtime_checkable
class KnowsTapes(Protocol):
    """An adapter that can say whether a cartridge exists (carousel asks before it records a tape's state)."""

    def knows_tape(self, tape: str) -> bool: ...

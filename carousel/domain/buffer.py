"""The disk buffer's arithmetic: its limits, what it holds, what may be handed to the library now and what
must be evicted first. Pure: the live store (carousel.db.buffer_queries) and the replay's memory store supply
the numbers, the planning path (carousel.scheduler.planning_path) and the outlook apply the rules.

Used bytes are those on disk plus those reserved (files claimed or with the library: their bytes will arrive).
Admission fills the buffer up to the high watermark, counting what eviction of unpinned files can free; when a
hand-over needs eviction, least recently used unpinned files go until used bytes are down to the low watermark
(or nothing unpinned is left), so eviction runs in batches rather than one file per cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from carousel.domain.planning import Plan, Selection, Snapshot

BUFFER_FULL = "waiting for space in the disk buffer"

K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class BufferLimits:
    capacity_bytes: int
    high_watermark: float = 0.95
    low_watermark: float = 0.85

    def __post_init__(self) -> None:
        if self.capacity_bytes <= 0:
            raise ValueError(f"capacity_bytes must be positive, not {self.capacity_bytes}")
        if not 0 <= self.low_watermark <= self.high_watermark <= 1:
            raise ValueError(
                f"watermarks must satisfy 0 <= low <= high <= 1, not low={self.low_watermark} "
                f"high={self.high_watermark}"
            )

    @property
    def high_bytes(self) -> int:
        """Admission fills the buffer up to here."""
        return int(self.capacity_bytes * self.high_watermark)

    @property
    def low_bytes(self) -> int:
        """Eviction frees down to here."""
        return int(self.capacity_bytes * self.low_watermark)

    def fits_ever(self, size_bytes: int) -> bool:
        """A file larger than the buffer's admissible size can never be staged: intake refuses it."""
        return size_bytes <= self.high_bytes

    def too_big_reason(self, size_bytes: int) -> str | None:
        """The reason intake fails a file that can never fit, or None when it can."""
        if self.fits_ever(size_bytes):
            return None
        return (
            f"the file ({size_bytes} bytes) is larger than the disk buffer can ever hold "
            f"({self.high_bytes} bytes: {self.capacity_bytes} at the high watermark {self.high_watermark})"
        )


@dataclass(frozen=True, slots=True)
class BufferUsage:
    on_disk_bytes: int  # files whose bytes are in the buffer, pinned or not
    pinned_bytes: int  # of those, the ones some request still holds
    reserved_bytes: int  # files claimed or with the library: their bytes will arrive

    @property
    def evictable_bytes(self) -> int:
        return max(0, self.on_disk_bytes - self.pinned_bytes)

    @property
    def used_bytes(self) -> int:
        return self.on_disk_bytes + self.reserved_bytes


def epoch_s(when: datetime) -> int:
    """Whole epoch seconds of an aware time: the unit of request_files.pin_until_s."""
    return int(when.timestamp())


@dataclass(frozen=True, slots=True)
class Pinning:
    """What completion needs to put staged bytes' rows right: when they landed, and the lifetime of a link
    that named none (rows from before lifetimes were kept)."""

    now: datetime
    default_lifetime_s: int

    @property
    def now_s(self) -> int:
        return epoch_s(self.now)


@dataclass(frozen=True, slots=True)
class BufferView:
    """What a policy sees of the buffer in its snapshot."""

    capacity_bytes: int
    on_disk_bytes: int
    pinned_bytes: int
    reserved_bytes: int
    free_bytes: int  # below the high watermark, now, without evicting anything
    admissible_bytes: int  # what may be handed over now, counting what eviction can free


def free_bytes(limits: BufferLimits, usage: BufferUsage) -> int:
    """Room below the high watermark without evicting anything."""
    return max(0, limits.high_bytes - usage.used_bytes)


def admissible_bytes(limits: BufferLimits, usage: BufferUsage) -> int:
    """Room below the high watermark once every unpinned file is evicted: the most that may be handed over."""
    return max(0, limits.high_bytes - usage.pinned_bytes - usage.reserved_bytes)


def view(limits: BufferLimits, usage: BufferUsage) -> BufferView:
    return BufferView(
        capacity_bytes=limits.capacity_bytes,
        on_disk_bytes=usage.on_disk_bytes,
        pinned_bytes=usage.pinned_bytes,
        reserved_bytes=usage.reserved_bytes,
        free_bytes=free_bytes(limits, usage),
        admissible_bytes=admissible_bytes(limits, usage),
    )


def after_claims(buffer: BufferView, claimed_bytes: int) -> BufferView:
    """The buffer once `claimed_bytes` more are claimed (reserved until they land): what the next library of
    a site sees when the libraries before it in the cycle have handed those bytes over."""
    if claimed_bytes <= 0:
        return buffer
    return replace(
        buffer,
        reserved_bytes=buffer.reserved_bytes + claimed_bytes,
        free_bytes=max(0, buffer.free_bytes - claimed_bytes),
        admissible_bytes=max(0, buffer.admissible_bytes - claimed_bytes),
    )


@dataclass(frozen=True, slots=True)
class Admission:
    admitted: int  # how many of the candidates, from the first, may be handed over now
    admitted_bytes: int
    evict_bytes: int  # to evict (least recently used unpinned first) before they are handed over


def admit(limits: BufferLimits, usage: BufferUsage, sizes: Sequence[int]) -> Admission:
    """Which candidate files (sizes in the policy's order) may be handed over now: the longest prefix whose
    bytes fit below the high watermark counting what eviction can free; and how much to evict for them."""
    budget = admissible_bytes(limits, usage)
    admitted = total = 0
    for size in sizes:
        if total + size > budget:
            break
        total += size
        admitted += 1
    return Admission(admitted, total, eviction_needed(limits, usage, total))


def fitting(candidates: Iterable[tuple[K, int | None]], budget: int) -> int:
    """How many of the candidates (key, size), from the first, fit in `budget` bytes: the claim's hard cut."""
    count = total = 0
    for _, size in candidates:
        total += size or 0
        if total > budget:
            break
        count += 1
    return count


def eviction_needed(limits: BufferLimits, usage: BufferUsage, incoming_bytes: int) -> int:
    """Bytes to evict before `incoming_bytes` are handed over: none while everything stays below the high
    watermark; otherwise down to the low watermark, at most all that is evictable."""
    after = usage.used_bytes + incoming_bytes
    if after <= limits.high_bytes:
        return 0
    return min(usage.evictable_bytes, after - limits.low_bytes)


def least_recently_used(candidates: Iterable[tuple[K, int]], bytes_needed: int) -> list[K]:
    """The unpinned files to evict, given least recently used first as (key, size): the first ones whose bytes
    reach `bytes_needed`."""
    chosen: list[K] = []
    freed = 0
    for key, size in candidates:
        if freed >= bytes_needed:
            break
        chosen.append(key)
        freed += size
    return chosen


def admit_plan(plan: Plan, snapshot: Snapshot) -> Plan:
    """The plan cut to what the buffer admits, estimated on each tape's mean file size: a selection that finds
    no room left is dropped and its tape waits for space (never fails). The claim then applies the exact byte
    budget file by file (`BufferView.admissible_bytes`). A snapshot without a buffer leaves the plan as it
    is."""
    buffer = snapshot.buffer
    if buffer is None or not plan.selections:
        return plan
    mean = {t.tape: t.bytes / t.files for t in snapshot.tapes if t.files > 0}
    files = {t.tape: t.files for t in snapshot.tapes}
    smallest_mean = min(mean.values(), default=0.0)
    budget = float(buffer.admissible_bytes)
    kept: list[Selection] = []
    waiting = dict(plan.waiting)
    for selection in plan.selections:
        tape_mean = mean.get(selection.tape, 0.0) if selection.tape is not None else smallest_mean
        if budget <= 0 or tape_mean > budget:
            # a selection of any tape held back holds back every tape no other selection serves
            held = [selection.tape] if selection.tape is not None else list(files)
            served = {s.tape for s in plan.selections if s is not selection}
            waiting.update({tape: BUFFER_FULL for tape in held if tape not in served})
            continue
        kept.append(selection)
        count = (
            min(selection.max_files, files.get(selection.tape, selection.max_files)) if selection.tape else 1
        )
        estimate = count * tape_mean
        if selection.max_bytes is not None:
            estimate = min(estimate, float(selection.max_bytes))
        budget -= estimate
    if len(kept) == len(plan.selections):
        return plan
    return replace(plan, selections=tuple(kept), waiting=waiting)

"""The disk buffer in numbers: its limits and what is in it. Pure values; the admission arithmetic that
decides how much more the library may be handed lives beside them (docs/data-path.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class BufferLimits:
    """Admission fills the buffer up to high_watermark of its capacity; eviction frees it down to low."""

    capacity_bytes: int
    high_watermark: float
    low_watermark: float

    def __post_init__(self) -> None:
        if self.capacity_bytes <= 0:
            raise ValueError(f"capacity_bytes must be positive, got {self.capacity_bytes}")
        if not 0 <= self.low_watermark <= self.high_watermark <= 1:
            raise ValueError("watermarks must satisfy 0 <= low <= high <= 1")

    @property
    def high_bytes(self) -> int:
        return int(self.capacity_bytes * self.high_watermark)

    @property
    def low_bytes(self) -> int:
        return int(self.capacity_bytes * self.low_watermark)


@dataclass(frozen=True, slots=True)
class BufferUsage:
    """on_disk: bytes of files in the buffer (pinned ones included); pinned: of those, bytes some request
    still holds; reserved: bytes of files in flight (claimed or submitted), which will arrive."""

    on_disk_bytes: int
    pinned_bytes: int
    reserved_bytes: int

    @property
    def evictable_bytes(self) -> int:
        return self.on_disk_bytes - self.pinned_bytes


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

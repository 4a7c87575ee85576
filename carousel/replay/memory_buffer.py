"""The replay's disk buffer: the service's buffer accounting over memory, with no bytes written.

Files land when staged and stay pinned until their clients release them (each trace row holds its file for the
row's time, or the replay's `release_after_s`); an unpinned file is evictable, least recently used first, and
a file evicted and asked for again is recalled again. The planning path asks it what the live buffer answers
(`carousel.scheduler.buffer_keeper.BufferKeeper`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from datetime import datetime

from carousel.domain.buffer import BufferLimits, BufferUsage
from carousel.scheduler.eviction_notice import Evicted


class MemoryBuffer:
    """Bytes on disk, pinned and reserved, per file id; evicts least recently used unpinned files."""

    def __init__(self, limits: BufferLimits, evicted_of: Callable[[int], Evicted]) -> None:
        """`evicted_of`: a file id's library and path."""
        self._limits = limits
        self._evicted_of = evicted_of
        self.on_disk_bytes = 0
        self.pinned_bytes = 0
        self.reserved_bytes = 0  # kept by the store as files are claimed and end
        self.peak_on_disk_bytes = 0
        self.evicted_files = 0
        self.evicted_bytes = 0
        self._size: dict[int, int] = {}  # files on disk
        self._used_at: dict[int, datetime] = {}
        self._pinned_until: dict[int, datetime] = {}  # files on disk still pinned
        self._pins: list[tuple[datetime, int]] = []  # (until, id), lazily pruned
        self._lru: list[tuple[datetime, int]] = []  # (used_at, id) of unpinned files, lazily pruned

    @property
    def limits(self) -> BufferLimits:
        return self._limits

    def holds(self, file_id: int) -> bool:
        return file_id in self._size

    def landed(self, file_id: int, size: int, at: datetime, pinned_until: datetime) -> None:
        self._size[file_id] = size
        self.on_disk_bytes += size
        self.peak_on_disk_bytes = max(self.peak_on_disk_bytes, self.on_disk_bytes)
        self.touched(file_id, at, pinned_until)

    def touched(self, file_id: int, at: datetime, pinned_until: datetime) -> None:
        """Read or asked for again at `at`: the least-recently-used key moves, the pin lasts to at least
        `pinned_until`."""
        self._used_at[file_id] = at
        current = self._pinned_until.get(file_id)
        if pinned_until > at and (current is None or pinned_until > current):
            if current is None:
                self.pinned_bytes += self._size[file_id]
            self._pinned_until[file_id] = pinned_until
            heapq.heappush(self._pins, (pinned_until, file_id))
        elif current is None:
            heapq.heappush(self._lru, (at, file_id))

    def usage(self, now: datetime) -> BufferUsage:
        self._expire(now)
        return BufferUsage(self.on_disk_bytes, self.pinned_bytes, self.reserved_bytes)

    def evict(self, bytes_needed: int, now: datetime) -> list[Evicted]:
        self._expire(now)
        paths: list[Evicted] = []
        freed = 0
        while freed < bytes_needed and self._lru:
            used_at, file_id = heapq.heappop(self._lru)
            if file_id in self._pinned_until or self._used_at.get(file_id) != used_at:
                continue  # pinned again, or used since: a newer entry stands for it
            size = self._size.pop(file_id)
            del self._used_at[file_id]
            self.on_disk_bytes -= size
            freed += size
            self.evicted_files += 1
            self.evicted_bytes += size
            paths.append(self._evicted_of(file_id))
        return paths

    def next_release(self) -> datetime | None:
        """When the next pin ends (space may then be made)."""
        while self._pins and self._pinned_until.get(self._pins[0][1]) != self._pins[0][0]:
            heapq.heappop(self._pins)
        return self._pins[0][0] if self._pins else None

    def _expire(self, now: datetime) -> None:
        pins = self._pins
        while pins and pins[0][0] <= now:
            until, file_id = heapq.heappop(pins)
            if self._pinned_until.get(file_id) != until:
                continue
            del self._pinned_until[file_id]
            self.pinned_bytes -= self._size[file_id]
            heapq.heappush(self._lru, (self._used_at[file_id], file_id))

"""The disk buffer as the planning path sees it, whichever store keeps it: the database and the buffer's
directory in the service, memory in the replay (which writes no bytes and only accounts).

The planning path asks for the usage when it takes its snapshot, cuts what it claims to what the buffer admits
(`carousel.domain.buffer`), and before handing the claimed files over asks the keeper to evict least recently
used unpinned files when they would not fit otherwise; it then tells the library which copies are gone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from carousel.domain.buffer import BufferLimits, BufferUsage


class BufferKeeper(Protocol):
    @property
    def limits(self) -> BufferLimits: ...

    def usage(self, now: datetime) -> BufferUsage:
        """Bytes on disk (pinned among them at `now`) and reserved for files claimed or with the library."""
        ...

    def evict(self, bytes_needed: int, now: datetime) -> list[str]:
        """Removes unpinned files, least recently used first, until `bytes_needed` are freed or none is left;
        the paths removed."""
        ...

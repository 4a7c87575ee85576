"""The disk buffer as the planning path sees it, whichever store keeps it: the database and the buffer's
directory in the service, memory in the replay (which writes no bytes and only accounts).

The planning path asks for the usage when it takes its snapshot, cuts what it claims to what the buffer admits
(`carousel.domain.buffer`), and before handing the claimed files over asks the keeper to evict least recently
used unpinned files when they would not fit otherwise; it then tells each library which of the copies it read
are gone (carousel.scheduler.eviction_notice).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from carousel.db import buffer_queries
from carousel.db.engine import transaction
from carousel.domain.buffer import BufferLimits, BufferUsage, epoch_s
from carousel.scheduler.eviction_notice import Evicted


class BufferGauge(Protocol):
    """What a snapshot needs of the buffer: its limits and what it holds."""

    @property
    def limits(self) -> BufferLimits: ...

    def usage(self, now: datetime) -> BufferUsage:
        """Bytes on disk (pinned among them at `now`) and reserved for files claimed or with the library."""
        ...


class BufferKeeper(BufferGauge, Protocol):
    """A buffer the planning path also makes room in."""

    def evict(self, bytes_needed: int, now: datetime) -> list[Evicted]:
        """Removes unpinned files, least recently used first, until `bytes_needed` are freed or none is left;
        those removed, each with the library it was read from."""
        ...


class DatabaseBufferGauge:
    """The service's buffer read from the database, for snapshots that only look (the outlook, dry runs)."""

    def __init__(
        self, limits: BufferLimits, session_factory: sessionmaker[Session], libraries: Collection[str]
    ) -> None:
        """`libraries`: the site's, whose files in flight reserve room (carousel.db.buffer_queries.usage)."""
        self._limits = limits
        self.session_factory = session_factory
        self.libraries = frozenset(libraries)

    @property
    def limits(self) -> BufferLimits:
        return self._limits

    def usage(self, now: datetime) -> BufferUsage:
        with transaction(self.session_factory) as session:
            return buffer_queries.usage(session, epoch_s(now), self.libraries)

"""The disk buffer's upkeep, once a cycle in the scheduler process: files no pin holds leave the buffer when
evict_on_release is set (a release, a deleted request, a lifetime over), and a page of the files on disk is
checked for bytes deleted behind carousel's back.

Eviction is the scheduler's alone, so one process deletes bytes and tells the library each file was read from
(`adapter.evict`, carousel.scheduler.eviction_notice).
The row goes first in the same transaction as the bytes: a row never says a file is on disk that is not
(if the commit fails, the next check finds the bytes gone). A file joined by a new request or read since it
was chosen keeps its bytes (carousel.db.buffer_queries.mark_evicted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.layout import BufferLayout, UnsafePath
from carousel.db import buffer_queries as q
from carousel.db.engine import run_transaction
from carousel.domain.buffer import BufferLimits, BufferUsage, epoch_s, least_recently_used
from carousel.domain.clock import Clock
from carousel.scheduler.eviction_notice import Evicted, tell_libraries
from hsm_adapters.base import HsmAdapter

log = structlog.get_logger(__name__)

EVICTIONS_PER_CYCLE = 1_000
CHECKS_PER_CYCLE = 1_000


@dataclass(slots=True)
class UpkeepReport:
    evicted: int = 0
    evicted_bytes: int = 0
    missing: int = 0  # files whose bytes were gone from the buffer


class BufferUpkeep:
    def __init__(
        self,
        layout: BufferLayout,
        session_factory: sessionmaker[Session],
        libraries: Mapping[str, HsmAdapter],
        clock: Clock,
        *,
        evict_on_release: bool,
    ) -> None:
        """`libraries`: each library's adapter by name, told of the evicted files it read."""
        self.layout = layout
        self.session_factory = session_factory
        self.libraries = libraries
        self.clock = clock
        self.evict_on_release = evict_on_release
        self._checked_to = 0  # the check goes round the files on disk in id order, a page a cycle
        self.missing_total = 0

    def run(self, report: UpkeepReport) -> None:
        if self.evict_on_release:
            self.evict_unpinned(report, EVICTIONS_PER_CYCLE)
        self.check_page(report)

    def reconcile(self) -> int:
        """At the start of a term: rows that say a file is on disk without its bytes in the buffer (left from
        before the buffer was turned on) say so no more, so a new request recalls the file into the buffer."""
        fixed = run_transaction(self.session_factory, q.forget_copies_outside_buffer)
        if fixed:
            log.warning("files marked on disk without bytes in the buffer: now on tape only", files=fixed)
        return fixed

    def evict_unpinned(self, report: UpkeepReport, limit: int) -> list[Evicted]:
        """Up to `limit` files no pin holds leave the buffer, least recently used first, and each library
        hears of those it read (a courtesy to its own count of disk copies, never a blocker); they are
        returned."""
        gone = self.evict_least_recently_used(limit)
        evicted = [Evicted(file.library, file.path) for file in gone]
        if gone:
            report.evicted += len(gone)
            report.evicted_bytes += sum(file.size_bytes for file in gone)
            log.info("evicted from the buffer", files=len(gone), bytes=report.evicted_bytes)
            tell_libraries(self.libraries, evicted)
        return evicted

    def evict_least_recently_used(self, limit: int, bytes_needed: int | None = None) -> list[q.OnDisk]:
        """Files no pin holds leave the buffer, least recently used first: up to `limit` of them, or (with
        `bytes_needed`) the first ones whose bytes reach it. The library is not told here."""
        now_s = epoch_s(self.clock.now())

        def evict(session: Session) -> list[q.OnDisk]:
            chosen = q.unpinned_on_disk(session, now_s, limit)
            if bytes_needed is not None:
                keep = {f.id for f in least_recently_used(((f, f.size_bytes) for f in chosen), bytes_needed)}
                chosen = [f for f in chosen if f.id in keep]
            gone = q.mark_evicted(session, chosen, now_s, unless_pinned=True)
            for file in gone:
                self._remove(file.path)
            return gone

        return run_transaction(self.session_factory, evict)

    def check_page(self, report: UpkeepReport) -> None:
        page = run_transaction(
            self.session_factory, lambda session: q.on_disk_page(session, self._checked_to, CHECKS_PER_CYCLE)
        )
        self._checked_to = page[-1].id if len(page) == CHECKS_PER_CYCLE else 0
        for file in page:
            if not self._present(file.path):
                self.file_missing(file.id, file.path)
                report.missing += 1

    def file_missing(self, file_id: int, path: str) -> None:
        """Bytes deleted behind carousel's back: the file is on tape only from now on (logged, counted)."""
        if run_transaction(self.session_factory, lambda session: q.mark_missing(session, file_id)):
            self.missing_total += 1
            log.warning("staged file missing from the buffer: marked not on disk", file_id=file_id, path=path)

    def _present(self, path: str) -> bool:
        try:
            return self.layout.final_path(path).is_file()
        except UnsafePath:
            return False

    def _remove(self, path: str) -> None:
        try:
            self.layout.remove(self.layout.final_path(path))
        except UnsafePath:
            pass
        except OSError as exc:
            log.warning("could not delete evicted bytes", path=path, error=exc.strerror or str(exc))


class LiveBuffer:
    """The service's buffer as the planning path sees it (carousel.scheduler.buffer_keeper.BufferKeeper):
    usage from the database, eviction through the upkeep (rows and bytes in one transaction)."""

    def __init__(self, limits: BufferLimits, upkeep: BufferUpkeep) -> None:
        self._limits = limits
        self.upkeep = upkeep

    @property
    def limits(self) -> BufferLimits:
        return self._limits

    def usage(self, now: datetime) -> BufferUsage:
        # the site's libraries: files in flight in one the settings no longer name reserve no room
        libraries = self.upkeep.libraries
        return run_transaction(
            self.upkeep.session_factory, lambda session: q.usage(session, epoch_s(now), libraries)
        )

    def evict(self, bytes_needed: int, now: datetime) -> list[Evicted]:
        gone: list[q.OnDisk] = []
        freed = 0
        while freed < bytes_needed:  # a page at a time; ends when nothing unpinned is left
            page = self.upkeep.evict_least_recently_used(EVICTIONS_PER_CYCLE, bytes_needed - freed)
            if not page:
                break
            gone.extend(page)
            freed += sum(file.size_bytes for file in page)
        if gone:
            log.info("evicted from the buffer to make room", files=len(gone), bytes=freed)
        return [Evicted(file.library, file.path) for file in gone]

"""A replay of a site of several libraries behind one queue (docs/decisions.md §17): which libraries it has,
and the queue as one library's planning path sees it.

Each library is planned on its own (its drives, physics and queue depth) over one memory queue: its policy
sees only its tapes and files in flight, and a claim, of any tape too, stays inside it. Fair-share usage is
the site's, in reference drive-seconds (carousel.domain.libraries).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from carousel.domain.errors import ConfigError
from carousel.domain.libraries import library_name_problem
from carousel.domain.planning import Selection
from carousel.domain.queue import HandedOver, QueueDemand, Reading
from carousel.replay.library_setup import LibraryFile
from carousel.replay.memory_store import MemoryQueueStore
from carousel.scheduler.queue_store import Claim


@dataclass(frozen=True, slots=True)
class LibrarySpec:
    """One simulated library of a replayed site: its name, drive profile and drive count, and changes of its
    own over the replay's library file (its faults: one library's outage)."""

    name: str
    profile: str  # a built-in profile name or a profile file
    drives: int
    changes: LibraryFile | None = None

    def __post_init__(self) -> None:
        problem = library_name_problem(self.name)
        if problem is not None:
            raise ConfigError(problem)
        if self.drives < 1:
            raise ConfigError(f"library {self.name}: drives must be at least 1, got {self.drives}")


def parse_libraries(text: str) -> tuple[LibrarySpec, ...]:
    """`NAME=PROFILE:DRIVES,...` (carousel simulate --libraries), each name once."""
    specs: list[LibrarySpec] = []
    for part in (p.strip() for p in text.split(",")):
        name, equals, rest = part.partition("=")
        profile, colon, drives = rest.rpartition(":")
        if not (equals and colon and name.strip() and profile.strip() and drives.strip().isdigit()):
            raise ConfigError(f"--libraries: {part!r} is not NAME=PROFILE:DRIVES (e.g. new=lto9:8)")
        specs.append(LibrarySpec(name.strip(), profile.strip(), int(drives)))
    names = [s.name for s in specs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"--libraries: library {repeated[0]} is named twice")
    return tuple(specs)


class LibraryQueue:
    """The site's memory queue as one library's planning path sees it (a QueueStore)."""

    def __init__(self, store: MemoryQueueStore, library: str) -> None:
        self.store = store
        self.library = library

    def demand(self, now: datetime) -> QueueDemand:
        return self.store.demand(now, library=self.library)

    def claim(
        self,
        selections: Sequence[Selection],
        new_key: Callable[[], str],
        now: datetime,
        *,
        byte_budget: int | None = None,
    ) -> list[Claim]:
        return self.store.claim(selections, new_key, now, byte_budget=byte_budget, library=self.library)

    def handed_over(
        self, accepted: Sequence[HandedOver], refused: Sequence[int], now: datetime
    ) -> tuple[int, int]:
        return self.store.handed_over(accepted, refused, now)

    def reads_started_before(self, started_before: datetime, limit: int) -> list[Reading]:
        return self.store.reads_started_before(started_before, limit, library=self.library)

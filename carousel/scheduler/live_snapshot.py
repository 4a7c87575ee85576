"""The snapshot of the live queue, as the cycle plans from it and the outlook and the dry run project it.

One read of the database queue store (drive time weighed over the configured fair-share window) beside the
library's health, capacity and published cost figures. A library that does not answer plans as offline: no
drives, nothing submitted, every waiting tape saying why. The failure is kept in the `LibraryState`, so the
cycle can report it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.db.demand_assembly import SiteAssemblies
from carousel.domain.clock import Clock
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.planning import LibraryCosts, Snapshot
from carousel.scheduler.buffer_keeper import BufferGauge, DatabaseBufferGauge
from carousel.scheduler.planning_path import published_costs, snapshot_of
from carousel.scheduler.queue_store import DatabaseQueueStore, QueueStore
from hsm_adapters.base import Capacity, Health, HsmAdapter

NO_CAPACITY = Capacity(drives_total=0, drives_free=0)


@dataclass(frozen=True, slots=True)
class LibraryState:
    """What the library says of itself; `failure` when it did not answer (then OFFLINE with no drives)."""

    health: Health
    capacity: Capacity
    failure: Exception | None = None

    @property
    def online(self) -> bool:
        return self.health is not Health.OFFLINE


def library_state(adapter: HsmAdapter) -> LibraryState:
    """The library's health and capacity; a library that does not answer (either call raises) plans as
    offline."""
    try:
        return LibraryState(adapter.health(), adapter.capacity())
    except Exception as exc:
        return LibraryState(Health.OFFLINE, NO_CAPACITY, failure=exc)


def live_queue_store(
    settings: Settings,
    session_factory: sessionmaker[Session],
    *,
    library: str | None = DEFAULT_LIBRARY,
    usage_weights: Mapping[str, float] | None = None,
    site_assemblies: SiteAssemblies | None = None,
) -> DatabaseQueueStore:
    """The database queue store the service plans over, weighing drive time over `fair_share_window_s`: one
    library's (None: the whole site's), the usage in reference drive-seconds by `usage_weights`."""
    return DatabaseQueueStore(
        session_factory,
        usage_window_s=settings.fair_share_window_s,
        library=library,
        usage_weights=usage_weights,
        site_assemblies=site_assemblies,
    )


def live_buffer(
    settings: Settings, session_factory: sessionmaker[Session], libraries: Collection[str]
) -> BufferGauge | None:
    """The disk buffer as the outlook and the dry run see it (None: the buffer is off); `libraries`: the
    site's, whose files in flight reserve room as the cycle counts them."""
    if not settings.buffer.enabled:
        return None
    return DatabaseBufferGauge(settings.buffer.limits(), session_factory, libraries)


def live_snapshot(
    store: QueueStore,
    adapter: HsmAdapter,
    clock: Clock,
    *,
    costs: LibraryCosts | None = None,
    library: LibraryState | None = None,
    buffer: BufferGauge | None = None,
) -> Snapshot:
    """The queue in `store` now, beside the library. `costs`: the adapter's published figures unless given
    (the cycle may be built with others); `library`: asked now unless given (the cycle asks before its online
    steps, and reports a failure itself); `buffer`: the disk buffer, when there is one."""
    state = library if library is not None else library_state(adapter)
    figures = costs if costs is not None else published_costs(adapter)
    return snapshot_of(store, clock.now(), state.capacity, state.online, figures, buffer=buffer)

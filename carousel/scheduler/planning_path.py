"""The planning path shared by the service's cycle and the trace replay: snapshot, plan, cut to the cycle's
budget and to what the disk buffer admits, claim, make room in the buffer, hand the batches to the library
with no transaction open, record what it accepted.

Only the queue store differs between the two (`carousel.scheduler.queue_store`). Claim keys come from an
injected factory (uuids in the service, a counter in the replay, so a replay is reproducible to the byte).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol, runtime_checkable

import structlog

from carousel.domain.buffer import BUFFER_FULL, BufferLimits, BufferUsage, admit_plan, eviction_needed, view
from carousel.domain.clock import Clock
from carousel.domain.media import hold_back
from carousel.domain.planning import LibraryCosts, LibraryView, Plan, Selection, Snapshot
from carousel.domain.queue import ClaimedFile, HandedOver
from carousel.scheduler.buffer_keeper import BufferGauge, BufferKeeper
from carousel.scheduler.collector import collector_held
from carousel.scheduler.eviction_notice import tell_libraries
from carousel.scheduler.queue_store import QueueStore
from hsm_adapters.base import Batch, BatchFile, Capacity, HsmAdapter
from hsm_adapters.site import Site
from policies.base import Policy

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class Dispatch:
    """What one pass of the planning path did."""

    snapshot: Snapshot
    plan: Plan
    claimed: int = 0
    batches_submitted: int = 0
    files_submitted: int = 0
    returned_to_queue: int = 0  # claimed, but the adapter refused the batch
    errors: list[str] = field(default_factory=list)
    waiting_for_space: int = 0  # queued files of tapes the plan selected that wait for space in the buffer
    evicted_files: int = 0


def snapshot_of(
    store: QueueStore,
    now: datetime,
    capacity: Capacity,
    online: bool,
    costs: LibraryCosts | None,
    *,
    buffer: BufferGauge | None = None,
) -> Snapshot:
    """What a policy plans from: the store's demand at `now` beside the library as it says it is, and the disk
    buffer's space when there is one."""
    demand = store.demand(now)
    library = LibraryView(
        online=online,
        drives_total=capacity.drives_total,
        drives_free=capacity.drives_free,
        queue_slots=dict(capacity.queue_slots),
        mounted_tapes=capacity.mounted_tapes,
        costs=costs,
    )
    return Snapshot(
        now=now,
        tapes=demand.tapes,
        library=library,
        in_flight=demand.in_flight,
        in_flight_tapes=demand.in_flight_tapes,
        usage=demand.usage,
        buffer=view(buffer.limits, buffer.usage(now)) if buffer is not None else None,
        held=demand.held,
    )


def uuid_keys() -> str:
    return uuid.uuid4().hex


@runtime_checkable
class PublishesCosts(Protocol):
    """An adapter that knows its library's cost figures (mount, unmount, rate, locate) says so."""

    def library_costs(self) -> LibraryCosts: ...


def published_costs(adapter: HsmAdapter) -> LibraryCosts | None:
    """The adapter's cost figures; a site's (hsm_adapters.site) when it has one library, else none: its
    libraries' differ."""
    if isinstance(adapter, Site):
        return (
            published_costs(next(iter(adapter.libraries.values()))) if len(adapter.libraries) == 1 else None
        )
    return adapter.library_costs() if isinstance(adapter, PublishesCosts) else None


class PlanningPath:
    def __init__(
        self,
        store: QueueStore,
        adapter: HsmAdapter,
        policy: Policy,
        clock: Clock,
        *,
        max_files_per_cycle: int,
        costs: LibraryCosts | None = None,
        new_key: Callable[[], str] = uuid_keys,
        buffer: BufferKeeper | None = None,
        destination: Callable[[str], str] | None = None,
        libraries: Mapping[str, HsmAdapter] | None = None,
    ) -> None:
        """`libraries`: who hears of the copies evicted to make room, each library's adapter by name (the
        buffer is the site's: room made in one library's pass may free files another read); None: `adapter`
        hears them all (a site of one library)."""
        self.store = store
        self.adapter = adapter
        self.policy = policy
        self.clock = clock
        self.max_files_per_cycle = max_files_per_cycle
        self.costs = costs
        self.new_key = new_key
        self.buffer = buffer
        self.destination = destination  # file key -> where the library writes its bytes; None: no bytes
        self.libraries = libraries

    def run(self, capacity: Capacity, online: bool, *, submit: bool = True) -> Dispatch:
        """One pass over a snapshot taken now; with submit=False (an outage) the plan is made for its waiting
        reasons only."""
        snapshot = snapshot_of(self.store, self.clock.now(), capacity, online, self.costs, buffer=self.buffer)
        return self.dispatch(snapshot, submit=submit)

    def dispatch(self, snapshot: Snapshot, *, submit: bool = True) -> Dispatch:
        """One pass over a snapshot the caller took (the live cycle's: carousel.scheduler.live_snapshot)."""
        with collector_held():  # the policy's temporaries, as the snapshot's (carousel.scheduler.collector)
            plan = hold_back(admit_plan(self.policy.plan(snapshot), snapshot), snapshot.held)
        dispatch = Dispatch(snapshot=snapshot, plan=plan)
        dispatch.waiting_for_space = sum(
            t.files for t in snapshot.tapes if plan.waiting.get(t.tape) == BUFFER_FULL
        )
        if submit:
            self._claim_and_submit(self.within_cycle_budget(dispatch.plan), dispatch)
        return dispatch

    def within_cycle_budget(self, plan: Plan) -> list[Selection]:
        """The plan cut to max_files_per_cycle: a bound on one cycle's transaction, whatever the policy."""
        budget = self.max_files_per_cycle
        kept: list[Selection] = []
        for selection in plan.selections:
            if budget <= 0:
                break
            take = min(selection.max_files, budget)
            kept.append(replace(selection, max_files=take))
            budget -= take
        return kept

    def buffer_limits(self) -> BufferLimits:
        if self.buffer is None:
            raise RuntimeError("the planning path has no buffer")
        return self.buffer.limits

    def _make_room(self, bytes_needed: int, dispatch: Dispatch) -> None:
        """Evicts least recently used unpinned files before the claimed ones are handed over, then tells the
        library each copy was read from that it is gone (a library that fails to hear it keeps a stale count,
        nothing worse)."""
        if bytes_needed <= 0 or self.buffer is None:
            return
        gone = self.buffer.evict(bytes_needed, self.clock.now())
        dispatch.evicted_files = len(gone)
        libraries = self.libraries if self.libraries is not None else {"": self.adapter}
        dispatch.errors.extend(tell_libraries(libraries, gone))

    def _claim_and_submit(self, selections: Sequence[Selection], dispatch: Dispatch) -> None:
        if not selections:
            return
        space = dispatch.snapshot.buffer
        budget = space.admissible_bytes if space is not None else None
        claims = self.store.claim(selections, self.new_key, self.clock.now(), byte_budget=budget)
        batches = [
            b for selection, key, files in claims for b in batches_of(selection, files, key, self.destination)
        ]
        dispatch.claimed = sum(len(files) for _, _, files in claims)
        if space is not None:
            claimed_bytes = sum(f.size_bytes for _, _, files in claims for f in files)
            usage = BufferUsage(space.on_disk_bytes, space.pinned_bytes, space.reserved_bytes)
            self._make_room(eviction_needed(self.buffer_limits(), usage, claimed_bytes), dispatch)

        accepted: list[HandedOver] = []
        refused: list[int] = []
        for batch, file_ids in batches:  # no transaction is open here
            try:
                self.adapter.submit(batch)
            except Exception as exc:
                log.warning("batch refused, its files go back to the queue", batch=batch.key, error=str(exc))
                dispatch.errors.append(f"submit {batch.key}: {exc}")
                refused.extend(file_ids)
                continue
            accepted.append(HandedOver(batch_key=batch.key, tape=batch.tape, file_ids=file_ids))
        dispatch.files_submitted, dispatch.returned_to_queue = self.store.handed_over(
            accepted, refused, self.clock.now()
        )
        dispatch.batches_submitted = len(accepted)


def batches_of(
    selection: Selection,
    claimed: Sequence[ClaimedFile],
    claim_key: str,
    destination: Callable[[str], str] | None = None,
) -> list[tuple[Batch, tuple[int, ...]]]:
    """A batch per tape (and class of service) in the claimed order, or one per file when the plan says so.
    Keys: the claim's key, with a suffix when the claim makes several batches; file keys are file ids.
    `destination` gives each file where its bytes go (the disk buffer's incoming directory)."""
    groups: dict[tuple[str, str], list[ClaimedFile]] = {}
    if selection.one_file_per_batch:
        groups = {(str(f.id), f.tape): [f] for f in claimed}
    else:
        for f in claimed:
            groups.setdefault((f.tape, f.service_class), []).append(f)
    out: list[tuple[Batch, tuple[int, ...]]] = []
    for n, files in enumerate(groups.values()):
        key = claim_key if len(groups) == 1 else f"{claim_key}-{n}"
        batch = Batch(
            key=key,
            tape=files[0].tape,
            files=tuple(batch_file(f.id, f.path, f.position_bytes, f.size_bytes, destination) for f in files),
            service_class=files[0].service_class,
        )
        out.append((batch, tuple(f.id for f in files)))
    return out


def batch_file(
    file_id: int, path: str, position_bytes: int, size_bytes: int, destination: Callable[[str], str] | None
) -> BatchFile:
    key = str(file_id)
    return BatchFile(key, path, position_bytes, size_bytes, None if destination is None else destination(key))

"""Shortest-locate-first on the library side: an adapter wrapper that reorders each batch before the library
gets it.

carousel's claim step orders a tape's files by position; ordering by locate time needs the cartridge's
geometry (wraps, direction, bands), which only the library knows. Real HSMs do this on their side (CTA's
recommended access order, HPSS Tape Order Recall); for the simulated library this wrapper does it with
`physics.shortest_locate_first`, from the load point, the head continuing from each file's end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from hsm_adapters.base import (
    Batch,
    CancelResult,
    Capacity,
    Event,
    EventSink,
    Health,
    HsmAdapter,
    LookupResult,
)
from hsm_adapters.simulated.physics import TapePhysics, shortest_locate_first

ReadOrderName = Literal["position", "shortest_locate"]  # position: the batch's own (head) order


def locate_order(physics: TapePhysics, batch: Batch) -> Batch:
    """The batch with its files in shortest-locate-first order from the load point."""
    if len(batch.files) < 2:
        return batch
    order = shortest_locate_first(
        physics, 0, [f.position_bytes for f in batch.files], [f.size_bytes for f in batch.files]
    )
    return Batch(
        key=batch.key,
        tape=batch.tape,
        files=tuple(batch.files[i] for i in order),
        service_class=batch.service_class,
    )


class ShortestLocateFirst:
    """An HsmAdapter handing `inner` every batch in shortest-locate-first order; all else passes through."""

    def __init__(self, inner: HsmAdapter, physics: TapePhysics) -> None:
        self.inner = inner
        self.physics = physics
        self.name = inner.name

    def lookup(self, paths: Sequence[str]) -> list[LookupResult]:
        return self.inner.lookup(paths)

    def submit(self, batch: Batch) -> None:
        self.inner.submit(locate_order(self.physics, batch))

    def cancel(self, file_keys: Sequence[str]) -> CancelResult:
        return self.inner.cancel(file_keys)

    def poll_events(self, limit: int | None = None) -> list[Event]:
        return self.inner.poll_events(limit)

    def set_sink(self, sink: EventSink | None) -> None:
        self.inner.set_sink(sink)

    def capacity(self) -> Capacity:
        return self.inner.capacity()

    def health(self) -> Health:
        return self.inner.health()

    def close(self) -> None:
        self.inner.close()

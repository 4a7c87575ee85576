"""Shortest-locate-first on the library side: each batch reordered before the library gets it (the simulated
adapter's `read_order`).

carousel's claim step orders a tape's files by position; ordering by locate time needs the cartridge's
geometry (wraps, direction, bands), which only the library knows. Real HSMs do this on their side (CTA's
recommended access order, HPSS Tape Order Recall); for the simulated library `locate_order` does it with
`physics.shortest_locate_first`, from the load point, the head continuing from each file's end.
"""

from __future__ import annotations

from typing import Literal

from hsm_adapters.base import Batch
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

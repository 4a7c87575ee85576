"""The one place a simulated `Library` is built.

The service's adapter (`adapter.build_simulated_adapter`, from its adapter options) and the trace replay
(`carousel.replay`, from a trace and the policy's declared library needs) both describe the library they want
as drives, a catalogue and a `LibrarySetup`, and build it here.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

from hsm_adapters.simulated.catalogue import Catalogue
from hsm_adapters.simulated.faults import FaultPlan
from hsm_adapters.simulated.library import Discipline, Library
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.read_order import ReadOrderName, order_from


@dataclass(frozen=True, slots=True)
class LibrarySetup:
    """How a library runs, apart from its drives and its cartridges."""

    discipline: Discipline = Discipline.TAPE_ORDERED
    queue_depth: Mapping[str, int] = field(default_factory=dict)  # class of service -> files; others unbound
    # the order each batch is read in; applied by the adapter (SimulatedAdapter's read_order)
    read_order: ReadOrderName = "position"
    # with the shortest_locate order: a batch for a cartridge with unread files is merged with them, in that
    # order from the head (Library's merge_order)
    merge_batches: bool = False
    robots: int = 1
    dismount_delay_s: float | None = None  # None: the profile's
    new_media_fraction: float = 0.0  # share of cartridges that pay the first-load penalty
    faults: FaultPlan | None = None

    def describe(self) -> str:
        depth = ", ".join(f"{c} {d}" for c, d in sorted(self.queue_depth.items())) or "none"
        order = self.read_order.replace("_", "-")
        merged = ", batches merged" if self.merges else ""
        return f"{self.discipline.value} discipline, queue depth {depth}, {order} order{merged}"

    @property
    def merges(self) -> bool:
        """Whether a batch for a cartridge with unread files is merged with them (shortest_locate only)."""
        return self.merge_batches and self.read_order == "shortest_locate"


def build_library(
    physics: TapePhysics, catalogue: Catalogue, *, drives: int, setup: LibrarySetup, seed: int = 0
) -> Library:
    """A fresh library of `drives` drives holding `catalogue`, run as `setup` says. `seed` draws which
    cartridges are new media (the fault plan draws from its own seed)."""
    tapes = catalogue.tapes
    new_count = round(setup.new_media_fraction * len(tapes))
    new_media = random.Random(f"new-media:{seed}").sample(tapes, new_count) if new_count else []
    return Library(
        catalogue,
        physics,
        drives=drives,
        robots=setup.robots,
        discipline=setup.discipline,
        queue_depth=setup.queue_depth,
        faults=setup.faults,
        new_cartridges=new_media,
        dismount_delay_s=setup.dismount_delay_s,
        merge_order=partial(order_from, physics) if setup.merges else None,
    )

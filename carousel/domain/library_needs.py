"""What a policy needs of the HSM behind it: the library side of the system it comes from.

A baseline policy reproduces a system whose HSM behaved in a certain way (STAR's DataCarousel fed a FIFO
queue of bounded depth, CTA orders the reads on each tape itself); its figures mean something only against
such a library. A policy declares it as `library_needs` (policies/*.py, next to the policy) and the trace
replay sets the simulated library up accordingly (carousel/replay/library_setup.py). The live service does
not use it: a real HSM is as it is. A policy that declares nothing gets `LibraryNeeds()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class HsmDiscipline(StrEnum):
    """How the HSM picks what to read next from what it holds."""

    FIFO = "fifo"  # in arrival order, file by file: no regrouping by cartridge
    TAPE_ORDERED = "tape_ordered"  # grouped by cartridge, each cartridge read in head order


class HsmReadOrder(StrEnum):
    """The order the HSM reads the files of one batch in."""

    POSITION = "position"  # the batch's own order (the claim step's)
    SHORTEST_LOCATE = "shortest_locate"  # reordered by locate time on the cartridge (CTA's RAO, HPSS TOR)


@dataclass(frozen=True, slots=True)
class LibraryNeeds:
    discipline: HsmDiscipline = HsmDiscipline.TAPE_ORDERED
    # files the HSM holds at once per class of service; the rest wait in line. A class not named is unbound.
    queue_depth: Mapping[str, int] = field(default_factory=dict)
    read_order: HsmReadOrder = HsmReadOrder.POSITION
    # with the shortest_locate order: a batch for a cartridge that holds unread files is merged with them and
    # ordered from the head (HPSS Tape Order Recall orders a tape's whole queue). False: each batch is ordered
    # on its own and the batches of a cartridge are served in head order (CTA orders each batch it pops)
    merge_batches: bool = False

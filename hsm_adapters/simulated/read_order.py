"""The library's recommended access order: each batch reordered for the fewest locate seconds before the
library gets it (the simulated adapter's `read_order = "shortest_locate"`).

carousel's claim step orders a tape's files by position; ordering by locate time needs the cartridge's
geometry (wraps, direction, bands), which only the library knows. Real HSMs and drives do this on their side
(CTA's recommended access order, the LTO drives' RAO, HPSS Tape Order Recall). For the simulated library
`locate_order` does it from the load point, the head continuing from each file's end, on the one physics
model (`physics.locate_many`):

- `least_locate_order`: the order as an asymmetric travelling-salesman path over the files, solved the way
  ATSP heuristics usually are: the least assignment of a successor to every file (the load point starting
  the path, any file may end it: the unload rewind depends on the bytes read, not on where the head stops),
  whose cycles are then patched into one path, each at its cheapest exchange of two successors (Karp's
  patching). On the hot cartridges of `zipf_batch` it is within 0.1 % of the assignment, itself a lower
  bound of every order; greedy nearest-first pays 9–17 % more there (it leaves stragglers behind that cost a
  long locate each at the end).
- greedy shortest-locate-first (`physics.shortest_locate_first`) when it is cheaper (tiny batches) and for
  batches over `_ASSIGNED_MAX` files, whose assignment matrix would not be small.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.optimize import linear_sum_assignment

from hsm_adapters.base import Batch
from hsm_adapters.simulated.physics import TapePhysics, shortest_locate_first

ReadOrderName = Literal["position", "shortest_locate"]  # position: the batch's own (head) order

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_ASSIGNED_MAX = 4_000  # files up to which the assignment is solved: its matrix is (n + 1)² floats, 128 MB


def locate_order(physics: TapePhysics, batch: Batch) -> Batch:
    """The batch with its files in the library's order: the fewest locate seconds found from the load
    point."""
    if len(batch.files) < 2:
        return batch
    positions = [f.position_bytes for f in batch.files]
    sizes = [f.size_bytes for f in batch.files]
    order = order_from(physics, 0, positions, sizes)
    return Batch(
        key=batch.key,
        tape=batch.tape,
        files=tuple(batch.files[i] for i in order),
        service_class=batch.service_class,
    )


def order_from(physics: TapePhysics, head_byte: int, positions: list[int], sizes: list[int]) -> list[int]:
    """Indices into `positions` in the order of the fewest locate seconds found from a head at `head_byte`
    (0: the load point): the patched least assignment, or greedy shortest-locate-first where that is cheaper
    or the batch is over `_ASSIGNED_MAX` files."""
    order = greedy = shortest_locate_first(physics, head_byte, positions, sizes)
    if 2 <= len(positions) <= _ASSIGNED_MAX:
        patched = least_locate_order(physics, positions, sizes, head_byte)
        cheaper = path_locate_s(physics, positions, sizes, patched, head_byte) < path_locate_s(
            physics, positions, sizes, greedy, head_byte
        )
        order = patched if cheaper else greedy
    return order


def path_locate_s(
    physics: TapePhysics, positions: list[int], sizes: list[int], order: list[int], head_byte: int = 0
) -> float:
    """The locate seconds of reading the files in `order` from a head at `head_byte` (the load point)."""
    starts = np.asarray(positions, dtype=np.float64)[order]
    ends = starts + np.asarray(sizes, dtype=np.float64)[order]
    heads = np.concatenate(([float(head_byte)], ends[:-1]))
    return float(physics.locate_many(heads, starts).sum())


def least_locate_order(
    physics: TapePhysics, positions: list[int], sizes: list[int], head_byte: int = 0
) -> list[int]:
    """Indices into `positions` in the order to read them: the least successor assignment, its cycles
    patched into one path from the head at `head_byte` (node n; 0, the load point, by default)."""
    count = len(positions)
    starts = np.asarray(positions, dtype=np.float64)
    ends = starts + np.asarray(sizes, dtype=np.float64)
    cost = np.zeros((count + 1, count + 1), dtype=np.float64)  # column n: the path ends, for nothing
    cost[:count, :count] = physics.locate_many(ends[:, None], starts[None, :])
    cost[count, :count] = physics.locate_many(float(head_byte), starts)
    np.fill_diagonal(cost, np.inf)  # a file does not follow itself
    rows, columns = linear_sum_assignment(cost)
    successor: IntArray = np.empty(count + 1, dtype=np.int64)
    successor[rows] = columns
    _patch(cost, successor)
    order = []
    node = int(successor[count])
    while node != count:
        order.append(node)
        node = int(successor[node])
    return order


def _patch(cost: FloatArray, successor: IntArray) -> None:
    """Merge the assignment's cycles into the largest, in place: each next cycle (largest first) at the pair
    of arcs a→a', b→b' whose exchange for a→b', b→a' costs least."""
    cycles = sorted(_cycles(successor), key=len, reverse=True)
    joined = np.zeros(len(successor), dtype=bool)
    joined[cycles[0]] = True
    for cycle in cycles[1:]:
        ours = np.flatnonzero(joined)
        theirs = np.asarray(cycle, dtype=np.int64)
        ours_next, theirs_next = successor[ours], successor[theirs]
        extra = (
            cost[ours[:, None], theirs_next[None, :]]
            + cost[theirs[None, :], ours_next[:, None]]
            - cost[ours, ours_next][:, None]
            - cost[theirs, theirs_next][None, :]
        )
        mine, other = divmod(int(np.argmin(extra)), len(theirs))
        successor[ours[mine]], successor[theirs[other]] = theirs_next[other], ours_next[mine]
        joined[theirs] = True


def _cycles(successor: IntArray) -> list[list[int]]:
    seen = np.zeros(len(successor), dtype=bool)
    cycles = []
    for start in range(len(successor)):
        cycle = []
        node = start
        while not seen[node]:
            seen[node] = True
            cycle.append(node)
            node = int(successor[node])
        if cycle:
            cycles.append(cycle)
    return cycles

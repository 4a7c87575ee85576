"""Pacing the robots: which waiting tape a free drive takes when the robots, as much as the drives, decide
when a batch ends.

Every mount holds its drive for its service time S and the robots for `robot_s` (a mount and its dismount).
Drives come free, and want a robot, at the rate Σ 1/S over the mounts in progress; the robots serve at most
`robots / robot_s` exchanges a second. When the robots have about as much work left as the drives, both must
work all the time for the batch to end at its bound, so:

- while the mounts in progress free drives more slowly than the robots exchange cartridges, the robots would
  idle: the free drive takes the longest tape short enough to close that gap (`1 / S` at least the missing
  rate), or the shortest if none is;
- once they free drives as fast, the robots are covered: the free drive takes the longest tape (longest
  processing time first: the long tapes must not be left to the end, where they decide it);
- a tape whose service alone reaches the time the work left needs at least goes first, whatever the rate.

This keeps a few drives on long tapes and the others cycling short mounts just fast enough for the robots,
instead of all drives on the hottest cartridges at first (the robots idle) and on one-file cartridges at the
end (the drives queue for the robots).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from carousel.domain.planning import LibraryCosts, Snapshot

# the robots' work left against the drives' from which the robots are paced: below it the drives decide the
# end by far and the plain ranking serves them best
ROBOTS_MATTER_FROM = 0.5


def in_flight_left_s(snapshot: Snapshot, costs: LibraryCosts) -> list[float]:
    """Per tape in flight, the drive time it still holds its drive for: its files in flight and those queued
    for it (they join its mount) at the cost model's locate and overhead, their reads (the queue's mean file
    size for those in flight), then its unmount."""
    files = sum(t.files for t in snapshot.tapes)
    mean_bytes = sum(t.bytes for t in snapshot.tapes) / files if files else 0.0
    queued = {t.tape: t for t in snapshot.tapes}
    rate = costs.rate_bytes_per_s
    left = []
    for tape in snapshot.in_flight_tapes:
        if tape.files > 0:
            joining = queued.get(tape.tape)
            more, more_bytes = (joining.files, joining.bytes) if joining is not None else (0, 0)
            count = tape.files + more
            per_file = costs.locate_per_file_s(count) + costs.overhead_s
            reads = (tape.files * mean_bytes + more_bytes) / rate
            left.append(count * per_file + reads + costs.unmount_s)
    return left


def robots_matter(
    services: Sequence[float], in_flight: Sequence[float], costs: LibraryCosts, drives: int
) -> bool:
    """Whether the robots have work enough left to be paced: at least `ROBOTS_MATTER_FROM` of the drives'
    (the waiting tapes' mounts and the dismounts of those in flight, against the drive time of both)."""
    if costs.robot_s <= 0:
        return False
    robots_left = costs.robot_s * (len(services) + 0.5 * len(in_flight)) / costs.robots
    return robots_left >= ROBOTS_MATTER_FROM * (sum(services) + sum(in_flight)) / drives


def paced_order(
    services: Sequence[float],
    streaming: Sequence[float],
    in_flight: Sequence[float],
    *,
    costs: LibraryCosts,
    drives: int,
    picks: int,
) -> list[int]:
    """The indices of `services` (each waiting tape's service time; `streaming`, the same without locates)
    in the order free drives should take them: the first `picks` paced as the module says, the rest in their
    given order. The pace is the robots' rate, or less when the drives have more work left than the robots
    (the mounts left over the time the work left needs)."""
    robots = costs.robots / costs.robot_s
    rate = sum(1.0 / max(s, 1e-9) for s in in_flight)
    robot_left = costs.robot_s * (len(services) + 0.5 * len(in_flight)) / costs.robots
    drive_left = sum(streaming) + sum(in_flight)
    available = sorted((s, i) for i, s in enumerate(services))
    order: list[int] = []
    for _ in range(min(picks, len(services))):
        longest = available[-1]
        time_left = max(robot_left, drive_left / drives)
        pace = min(robots, len(available) / time_left) if time_left > 0 else robots
        if longest[0] >= time_left or rate >= pace:
            chosen = longest
        else:
            at = bisect_right(available, (1.0 / (pace - rate), len(services))) - 1
            chosen = available[max(at, 0)]
        available.remove(chosen)
        order.append(chosen[1])
        rate += 1.0 / max(chosen[0], 1e-9)
        robot_left -= costs.robot_s / costs.robots
        drive_left -= streaming[chosen[1]]
    taken = set(order)
    order.extend(i for i in range(len(services)) if i not in taken)
    return order

"""The physical bound of a trace: no schedule on this library can end its last file sooner.

Each touched cartridge is mounted once and its requested files are read in one pass in shortest-locate order
from the load point (the head continuing from each file's end), with the profile's mount, locate, per-file
overhead, read and unmount costs: T_tape. The work spread perfectly over the drives gives

    bound = max( (Σ T_tape − k·U_max) / drives,  max_tape (T_tape − U_tape),  max_file (arrival + s_file) )

where the last unmounts need not end before the last file does (k = min(drives, tapes) of them, each at most
U_max, the longest unmount), and s_file = mount + locate from the load point + overhead + read is the least
time a file can take once it has arrived. Robots, dismount delays and the cycle interval are left out: they
only add time. The locate-free bound is the same with every locate taken as zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from carousel.replay.trace import Trace
from hsm_adapters.simulated.physics import TapePhysics, shortest_locate_first


@dataclass(frozen=True, slots=True)
class PhysicalBound:
    bound_s: float
    locate_free_s: float
    tapes: int
    work_s: float  # Σ T_tape
    locate_s: float  # Σ of the locates in it
    longest_tape_s: float
    last_arrival_service_s: float  # max over files of arrival + least service


def physical_bound(trace: Trace, physics: TapePhysics, drives: int) -> PhysicalBound:
    first: dict[str, tuple[float, int, str, int]] = {}
    for row in trace.rows:  # by arrival: the first request for a path is its earliest
        first.setdefault(row.path, (row.arrival_s, row.size_bytes, row.tape, row.position_bytes))
    by_tape: dict[str, list[tuple[int, int]]] = {}
    for _, size, tape, position in first.values():
        by_tape.setdefault(tape, []).append((position, size))

    profile = physics.profile
    mount_s = physics.mount_s()
    work = locates = 0.0
    tape_times: list[tuple[float, float]] = []  # (T_tape, its unmount)
    tape_times_free: list[tuple[float, float]] = []
    for files in by_tape.values():
        positions = [p for p, _ in files]
        sizes = [s for _, s in files]
        order = shortest_locate_first(physics, 0, positions, sizes)
        head = 0
        locate = 0.0
        for index in order:
            locate += physics.locate_s(head, positions[index])
            head = positions[index] + sizes[index]
        moved = sum(sizes)
        unmount = physics.unmount_s(head, moved)
        # the locate-free pass ends at the last file in position order
        free_unmount = physics.unmount_s(max(p + s for p, s in files), moved)
        rest = mount_s + len(files) * profile.per_file_overhead_s + physics.read_s(moved)
        tape_times.append((rest + locate + unmount, unmount))
        tape_times_free.append((rest + free_unmount, free_unmount))
        work += rest + locate + unmount
        locates += locate

    arrivals = max(
        arrival + mount_s + physics.locate_s(0, position) + profile.per_file_overhead_s + physics.read_s(size)
        for arrival, size, _, position in first.values()
    )
    arrivals_free = max(
        arrival + mount_s + profile.per_file_overhead_s + physics.read_s(size)
        for arrival, size, _, _ in first.values()
    )
    return PhysicalBound(
        bound_s=_bound(tape_times, drives, arrivals),
        locate_free_s=_bound(tape_times_free, drives, arrivals_free),
        tapes=len(by_tape),
        work_s=work,
        locate_s=locates,
        longest_tape_s=max(t for t, _ in tape_times),
        last_arrival_service_s=arrivals,
    )


def _bound(tape_times: list[tuple[float, float]], drives: int, arrivals: float) -> float:
    total = sum(t for t, _ in tape_times)
    last_unmounts = min(drives, len(tape_times)) * max(u for _, u in tape_times)
    spread = (total - last_unmounts) / drives
    longest = max(t - u for t, u in tape_times)
    return max(spread, longest, arrivals)

"""The physical bound of a trace: no schedule on this library can end its last file sooner.

It counts every resource the simulated library shares (hsm_adapters/simulated/library.py): the drives, the
robots that carry cartridges between slot and drive, and each cartridge, which one drive reads at a time.
Every figure below is a least cost, so the bound holds for any policy, any read order and any number of
mounts per cartridge:

- a file's locate is at least the cheapest way the head can reach it: from the load point, or from the end of
  another requested file of its cartridge (`_least_locates`; a greedy read order would not be a bound). On
  a cartridge of one wrap a pass's least locates are position order's, exactly (`_one_wrap_pass`);
- a cartridge's work T_tape is its mount (robot + load), those locates, the per-file overheads, its reads at
  the native rate and its unmount U_tape (the least rewind after reading them all + unload + robot); a second
  mount only adds, unless its rewinds were cheaper by more than a whole mount and unmount, which the minimum
  over one and two mounts covers;
- on a cartridge of many wraps, the files' predecessors and successors are distinct
  (`_mounts_and_locates`): a mount is a path from its load point through its files, so the locates of m
  mounts are at least those of the least assignment of every file to its own predecessor (another file's
  end or one of m load points, each of which precedes a file) and its own successor (another file, or the
  end of one of the m paths);
- no cartridge is mounted before its first file arrives (a library mounts only cartridges with work).

With the cartridges sorted by first arrival a_j, and n_j of them arriving at a_j or later:

    drives   = max_j  a_j + min_k (Σ_{i ≥ j} T_i + stagger_k − k·U_max) / drives, k ≤ min(drives, n_j)
    robots   = max_j  a_j + (n_j + max(0, n_j − drives))·robot_move / robots + load + least first read
    a tape   = max_tape (T_tape − U_tape)
    arrivals = max_file (arrival + [mount, if none of its cartridge came earlier] + least locate + overhead
                         + read)
    bound    = the largest of the four; `binding` names it

Drives: the last unmount of each drive may end after the last file (hence the k·U_max taken off), and the k
drives that read cartridges arriving from a_j on start them one robot move apart at best: the i-th of those
first mounts (from 0) cannot begin its robot move before a_j + floor(i / robots)·robot_move (a robot moves one
cartridge at a time), so Σ_{i<k} floor(i / robots)·robot_move of their time is no cartridge's work; k is any
number up to min(drives, n_j), the least of the k terms counts (so the drives' term reads
a_j + min_k (Σ_{i ≥ j} T_i + stagger_k − k·U_max) / drives). Robots:
each cartridge arriving from a_j on needs a mount move after a_j, and every one of them that is not the last
on its drive also a dismount move before the next mount on that drive (at most `drives` are last); the last
of those moves is followed by a load and at least one read. Dismount delays, robot waits, cycle intervals and
first loads of new media are left out: they only add time. The locate-free bound is the same with every
locate taken as zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.optimize import linear_sum_assignment

from carousel.replay.trace import Trace
from hsm_adapters.simulated.physics import TapePhysics

FloatArray = npt.NDArray[np.float64]
_LOCATE_BLOCK = 512  # rows of one cartridge's predecessor matrix computed at a time (memory stays small)
_ASSIGNED_MAX = 4_000  # files of a cartridge up to which the assignment is solved (its matrix is n² floats)

DRIVES = "drives"
ROBOTS = "robots"
A_TAPE = "a tape"
ARRIVALS = "arrivals"


@dataclass(frozen=True, slots=True)
class PhysicalBound:
    bound_s: float
    locate_free_s: float
    binding: str  # which term decides the bound: drives, robots, a tape, arrivals
    tapes: int
    work_s: float  # Σ T_tape: the least drive time of the whole trace
    locate_s: float  # Σ of the least locates in it
    a_tape_s: float  # the 'a tape' term: the longest cartridge's work up to its last read (no unmount)
    last_arrival_service_s: float  # max over files of arrival + least service
    drives_s: float  # the drives' term
    robots_s: float  # the robots' term
    robots: int
    robot_moves: int  # the least number of robot moves (mounts and dismounts) before the last file ends


@dataclass(frozen=True, slots=True)
class _Tape:
    first_arrival_s: float
    arrivals: FloatArray
    positions: FloatArray
    sizes: FloatArray
    least_locates: FloatArray  # per file (the arrival term)
    pass_locates_s: float  # the least locates of a pass over all its files
    last_rewind_s: float  # the least rewind after that pass (with any locate it needs to end there)
    rewind_floor_s: float  # the least rewind after a mount reading any one of its files
    handled_s: float  # the least mounts, unmounts and locates of its files, however many mounts read them


def physical_bound(trace: Trace, physics: TapePhysics, drives: int, robots: int = 1) -> PhysicalBound:
    if drives < 1 or robots < 1:
        raise ValueError(f"a library needs at least one drive and one robot, not {drives} and {robots}")
    tapes = sorted(_tapes(trace, physics), key=lambda tape: tape.first_arrival_s)
    full = _terms(tapes, physics, drives, robots, with_locates=True)
    free = _terms(tapes, physics, drives, robots, with_locates=False)
    bound_s, binding = full.largest()
    moves = len(tapes) + max(0, len(tapes) - drives)
    return PhysicalBound(
        bound_s=bound_s,
        locate_free_s=free.largest()[0],
        binding=binding,
        tapes=len(tapes),
        work_s=full.work_s,
        locate_s=sum(tape.pass_locates_s for tape in tapes),
        a_tape_s=full.tape_s,
        last_arrival_service_s=full.arrivals_s,
        drives_s=full.drives_s,
        robots_s=full.robots_s,
        robots=robots,
        robot_moves=moves,
    )


def _tapes(trace: Trace, physics: TapePhysics) -> list[_Tape]:
    first: dict[str, tuple[float, int, str, int]] = {}
    for row in trace.rows:  # by arrival: the first request for a path is its earliest
        first.setdefault(row.path, (row.arrival_s, row.size_bytes, row.tape, row.position_bytes))
    by_tape: dict[str, list[tuple[int, float, int]]] = {}
    for arrival, size, tape, position in first.values():
        by_tape.setdefault(tape, []).append((position, arrival, size))
    tapes = []
    for files in by_tape.values():
        files.sort()
        positions = np.array([p for p, _, _ in files], dtype=np.float64)
        arrivals = np.array([a for _, a, _ in files], dtype=np.float64)
        sizes = np.array([s for _, _, s in files], dtype=np.float64)
        ends = positions + sizes
        least = _least_locates(physics, positions, ends)
        total = np.full_like(ends, sizes.sum())
        rewinds = physics.rewind_many(ends, total)
        if physics.profile.wraps == 1:
            pass_locates, last_rewind = _one_wrap_pass(physics, positions, ends, rewinds)
        else:
            pass_locates, last_rewind = float(least.sum()), float(rewinds.min())
        floor = float(physics.rewind_many(ends, sizes).min())
        handling = physics.mount_s() + physics.profile.unload_s + physics.profile.robot_exchange_s
        handled = min(handling + last_rewind, 2 * (handling + floor)) + pass_locates
        if physics.profile.wraps > 1 and 2 <= len(files) <= _ASSIGNED_MAX:
            handled = max(
                handled,
                _mounts_and_locates(
                    physics, positions, ends, handling=handling, last=last_rewind, floor=floor
                ),
            )
        tapes.append(
            _Tape(
                first_arrival_s=float(arrivals.min()),
                arrivals=arrivals,
                positions=positions,
                sizes=sizes,
                least_locates=least,
                pass_locates_s=pass_locates,
                last_rewind_s=last_rewind,
                rewind_floor_s=floor,
                handled_s=handled,
            )
        )
    return tapes


def _mounts_and_locates(
    physics: TapePhysics,
    positions: FloatArray,
    ends: FloatArray,
    *,
    handling: float,
    last: float,
    floor: float,
) -> float:
    """The least handling (robot, load, unload, robot: `handling` a mount), rewinds and locates of reading
    every file of a cartridge of many wraps, in any number of mounts.

    A mount reads a path of files: from a load point to its first file, from each file's end to the next
    (a locate each), and from its last file to the mount's end (nothing: the head stops there). So the reads
    of m mounts are an assignment (`_paths`): every file gets its own predecessor (another file's end or one
    of the m load points) and its own successor (another file or one of m ends), every load point a file
    after it. Its least cost A_m is at most the locates of any such reading (the assignment may close cycles
    of files, which no read has, so it bounds, it is not an order). A mount's rewind is at least `floor` (the
    least after reading any one file), a single mount's at least `last` (after reading them all). So:
    - one mount costs at least handling + last + A_1;
    - m mounts, 2 <= m <= M, at least m·(handling + floor) + A_m, which is at least the least assignment with
      two load points that must each precede a file and M − 2 that may go unused (to an end, for nothing),
      every used one costing handling + floor: the m mounts' own assignment is one of its assignments;
    - more than M mounts at least (M + 1)·(handling + floor) + least, least the files' cheapest predecessors
      summed (`_least_locates`).
    The least of the three is a bound on every way of reading them; M is taken large enough that the last
    does not decide.
    """
    count = len(positions)
    between = np.empty((count, count), dtype=np.float64)
    for start in range(0, count, _LOCATE_BLOCK):
        stop = min(count, start + _LOCATE_BLOCK)
        between[start:stop] = physics.locate_many(ends[start:stop, None], positions[None, :])
    between[np.arange(count), np.arange(count)] = np.inf  # a file does not precede itself
    from_load = physics.locate_many(0.0, positions)
    least = float(np.minimum(from_load, between.min(axis=0)).sum())
    one_mount = _paths(between, from_load, forced=1, optional=0)
    per_mount = handling + floor
    mounts = max(2, math.ceil((one_mount + handling + last - least) / per_mount))
    some_mounts = _paths(between, from_load + per_mount, forced=2, optional=mounts - 2)
    return min(handling + last + one_mount, some_mounts, (mounts + 1) * per_mount + least)


def _paths(between: FloatArray, from_load: FloatArray, *, forced: int, optional: int) -> float:
    """The least assignment of files to paths: rows the files' ends then the load points, columns the files
    then as many path ends. A load point goes to a file (`from_load`), or, if it is optional, to an end for
    nothing; a file goes to another file (`between`) or to an end for nothing."""
    count = len(from_load)
    loads = forced + optional
    cost = np.zeros((count + loads, count + loads), dtype=np.float64)
    cost[:count, :count] = between
    cost[count:, :count] = from_load[None, :]
    cost[count : count + forced, count:] = np.inf  # these load points must each be followed by a file
    rows, columns = linear_sum_assignment(cost)
    return float(cost[rows, columns].sum())


def _least_locates(physics: TapePhysics, positions: FloatArray, ends: FloatArray) -> FloatArray:
    """Per file, the cheapest locate that can bring the head to it: from the load point, or from the end of
    another file of the cartridge (where the head sits after reading that one). Any read order, in any
    number of mounts, pays at least this for each file: every file has one predecessor."""
    least: FloatArray = physics.locate_many(0.0, positions)
    count = len(positions)
    for start in range(0, count, _LOCATE_BLOCK):
        stop = min(count, start + _LOCATE_BLOCK)
        from_ends = physics.locate_many(ends[start:stop, None], positions[None, :])
        from_ends[np.arange(stop - start), np.arange(start, stop)] = np.inf  # a file does not precede itself
        least = np.minimum(least, from_ends.min(axis=0))
    return least


def _one_wrap_pass(
    physics: TapePhysics, positions: FloatArray, ends: FloatArray, rewinds: FloatArray
) -> tuple[float, float]:
    """(least locates, least rewind) of one pass over a cartridge of one wrap, files by position.

    Every locate costs the constant, and at least one ends each run of back-to-back files (nothing else can
    put the head at a run's first byte for free); the head must travel forward over every gap, since reads
    cover only the files: so position order's locates are the least. Ending anywhere but at the farthest
    file's end means travelling back there from it, with at least one locate behind the head.
    """
    c = physics.coefficients
    capacity = physics.profile.capacity_bytes
    previous_ends = np.concatenate(([0.0], ends[:-1]))
    gaps = positions - previous_ends
    runs = int(np.count_nonzero(gaps))
    locates = runs * c.constant_s + c.full_length_s * float(gaps.sum()) / capacity
    back = np.where(ends < ends[-1], c.behind_s + c.full_length_s * (ends[-1] - ends) / capacity, 0.0)
    return locates, float((rewinds + back).min())


@dataclass(frozen=True, slots=True)
class _Terms:
    drives_s: float
    robots_s: float
    tape_s: float
    arrivals_s: float
    work_s: float

    def largest(self) -> tuple[float, str]:
        terms = ((self.drives_s, DRIVES), (self.robots_s, ROBOTS), (self.tape_s, A_TAPE))
        return max(((self.arrivals_s, ARRIVALS), *terms), key=lambda term: term[0])


def _work(tape: _Tape, physics: TapePhysics, *, with_locates: bool) -> tuple[float, float]:
    """(T_tape, U_tape): the least drive time of the cartridge's files, and the unmount part of it."""
    profile = physics.profile
    last_rewind = (
        tape.last_rewind_s
        if with_locates
        else float(
            physics.rewind_many(tape.positions + tape.sizes, np.full_like(tape.sizes, tape.sizes.sum())).min()
        )
    )
    handling = physics.mount_s() + profile.unload_s + profile.robot_exchange_s
    handled = (
        tape.handled_s if with_locates else min(handling + last_rewind, 2 * (handling + tape.rewind_floor_s))
    )
    passing = len(tape.sizes) * profile.per_file_overhead_s + physics.read_s(int(tape.sizes.sum()))
    return handled + passing, profile.unload_s + profile.robot_exchange_s + last_rewind


def _terms(
    tapes: list[_Tape], physics: TapePhysics, drives: int, robots: int, *, with_locates: bool
) -> _Terms:
    profile = physics.profile
    work = [_work(tape, physics, with_locates=with_locates) for tape in tapes]
    last_unmount = max(u for _, u in work)
    overhead, rate = profile.per_file_overhead_s, profile.rate_bytes_per_s

    drives_s = robots_s = 0.0
    suffix = 0.0
    least_first_read = min(
        float(
            (
                (physics.locate_many(0.0, tape.positions) if with_locates else 0.0)
                + overhead
                + tape.sizes / rate
            ).min()
        )
        for tape in tapes
    )
    # the k-th drive to start the cartridges arriving from a_j on waits for the robots' k−1 moves before its
    # own: Σ_{i<k} floor(i / robots)·robot_move of drive time that is no cartridge's work
    staggers = np.cumsum(np.arange(drives) // robots) * profile.robot_exchange_s
    for index in range(len(tapes) - 1, -1, -1):  # latest first arrival first: suffix sums
        suffix += work[index][0]
        later = len(tapes) - index
        start = tapes[index].first_arrival_s
        used = np.arange(1, min(drives, later) + 1)  # the drives that read any of them: some number of them
        spread = float((suffix + staggers[used - 1] - used * last_unmount).min())
        drives_s = max(drives_s, start + spread / drives)
        moves = later + max(0, later - drives)
        robots_s = max(
            robots_s, start + moves * profile.robot_exchange_s / robots + profile.load_s + least_first_read
        )

    arrivals_s = 0.0
    for tape in tapes:
        locates = tape.least_locates if with_locates else 0.0
        mount = np.where(tape.arrivals <= tape.first_arrival_s, physics.mount_s(), 0.0)
        service = tape.arrivals + mount + locates + overhead + tape.sizes / rate
        arrivals_s = max(arrivals_s, float(service.max()))
    return _Terms(
        drives_s=drives_s,
        robots_s=robots_s,
        tape_s=max(t - u for t, u in work),
        arrivals_s=arrivals_s,
        work_s=sum(t for t, _ in work),
    )

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carousel.replay.bound import A_TAPE, ARRIVALS, DRIVES, ROBOTS, physical_bound
from carousel.replay.driver import ReplayConfig, replay
from carousel.replay.library_setup import LibraryFile
from carousel.replay.outputs import summarise
from carousel.replay.trace import TraceRow, make_trace
from hsm_adapters.simulated.physics import TapePhysics, shortest_locate_first
from hsm_adapters.simulated.profiles import load_profile

GB = 10**9
PHYSICS = TapePhysics(load_profile("t9940b"))  # one wrap: position order is the cheapest order
LTO9 = TapePhysics(load_profile("lto9"))
POLICIES = ("fifo", "star2006", "cta", "carousel")


def row(path, tape, position, size, arrival=0.0):
    return TraceRow(arrival, f"r-{path}", path, size, tape, position)


def test_one_tape_is_mount_locates_overheads_and_reads_without_the_last_unmount():
    trace = make_trace([row("/b", "A", 50 * GB, 2 * GB), row("/a", "A", 10 * GB, GB)])
    bound = physical_bound(trace, PHYSICS, drives=1)
    p = PHYSICS.profile
    passing = PHYSICS.locate_s(0, 10 * GB) + PHYSICS.locate_s(11 * GB, 50 * GB)
    fixed = PHYSICS.mount_s() + 2 * p.per_file_overhead_s + PHYSICS.read_s(3 * GB)
    assert math.isclose(bound.bound_s, fixed + passing)
    assert math.isclose(bound.locate_free_s, fixed)
    assert math.isclose(bound.locate_s, passing)
    assert math.isclose(bound.work_s, fixed + passing + PHYSICS.unmount_s(52 * GB, 3 * GB))


def test_one_long_cartridge_among_short_ones_binds_as_a_tape_and_the_summary_names_its_term():
    long = [row(f"/a{n}", "A", n * 2 * GB, GB) for n in range(40)]
    trace = make_trace([*long, row("/b", "B", 0, GB), row("/c", "C", 0, GB)])
    bound = physical_bound(trace, PHYSICS, drives=4)
    alone = physical_bound(make_trace(long), PHYSICS, drives=1)
    assert bound.binding == A_TAPE
    assert math.isclose(bound.a_tape_s, bound.bound_s)
    assert math.isclose(bound.a_tape_s, alone.bound_s)  # its work up to its last read: no unmount
    detail = summarise(replay(trace, ReplayConfig("t9940b", 4, "carousel")))["bound_detail"]
    assert detail["binding"] == A_TAPE
    assert math.isclose(detail["a_tape_s"], bound.a_tape_s, abs_tol=1e-3)


def test_work_spreads_over_the_drives_and_a_late_arrival_can_decide():
    rows = [row(f"/{t}", t, GB, GB) for t in "ABCD"]
    one_tape = physical_bound(make_trace(rows[:1]), PHYSICS, drives=1)
    four = physical_bound(make_trace(rows), PHYSICS, drives=2)
    unmount = PHYSICS.unmount_s(2 * GB, GB)
    robot = (
        PHYSICS.profile.robot_exchange_s
    )  # the second drive's first mount waits for the first's robot move
    assert math.isclose(four.bound_s, (4 * one_tape.work_s + robot - 2 * unmount) / 2)
    assert four.binding == DRIVES
    two_robots = physical_bound(make_trace(rows), PHYSICS, drives=2, robots=2)
    assert math.isclose(two_robots.bound_s, (4 * one_tape.work_s - 2 * unmount) / 2)
    late = physical_bound(make_trace([*rows, row("/late", "E", 0, GB, arrival=10_000.0)]), PHYSICS, drives=2)
    assert math.isclose(
        late.bound_s, 10_000.0 + PHYSICS.mount_s() + PHYSICS.profile.per_file_overhead_s + PHYSICS.read_s(GB)
    )
    assert late.binding == ARRIVALS
    assert late.locate_free_s <= late.bound_s


def test_a_path_asked_twice_is_read_once():
    once = physical_bound(make_trace([row("/a", "A", 0, GB)]), PHYSICS, drives=1)
    twice = physical_bound(make_trace([row("/a", "A", 0, GB), row("/a", "A", 0, GB, arrival=5)]), PHYSICS, 1)
    assert twice.work_s == once.work_s


def test_many_one_file_cartridges_on_many_drives_wait_for_the_robot():
    # 200 one-file cartridges, 40 drives: the drives could share the work, one robot cannot move that fast
    trace = make_trace([row(f"/{n}", f"T{n:03d}", 0, GB) for n in range(200)])
    p = LTO9.profile
    one = physical_bound(trace, LTO9, drives=40)
    first_read = p.load_s + p.per_file_overhead_s + LTO9.read_s(GB)
    assert one.binding == ROBOTS
    assert one.robot_moves == 200 + 160  # every mount, and the dismount of each but a drive's last
    assert math.isclose(one.bound_s, 360 * p.robot_exchange_s + first_read)
    two = physical_bound(trace, LTO9, drives=40, robots=2)
    assert math.isclose(two.robots_s, 180 * p.robot_exchange_s + first_read)
    assert two.bound_s < one.bound_s


slots = st.lists(st.integers(0, 399), min_size=1, max_size=7, unique=True)


@settings(max_examples=60, deadline=None)
@given(slots, st.integers(1, 1000), st.sampled_from(["t9940b", "lto3", "lto9"]))
def test_no_read_order_locates_and_rewinds_for_less_than_the_bound(starts, size_permille, profile):
    # every order of a few files (up to 7! of them) on one cartridge, from the load point, costs at least
    # the bound's one-tape figure, and so does the shortest-locate order the library uses
    physics = TapePhysics(load_profile(profile))
    slot = physics.profile.capacity_bytes // 400
    size = max(1, size_permille * slot // 1000)
    places = sorted(s * slot for s in starts)
    rows = [row(f"/{n}", "A", place, size) for n, place in enumerate(places)]
    bound = physical_bound(make_trace(rows), physics, drives=1)
    rewind_part = bound.work_s - bound.locate_s - _fixed(physics, len(places), size)

    def cost(order):
        head, total = 0, 0.0
        for index in order:
            total += physics.locate_s(head, places[index])
            head = places[index] + size
        return total + physics.rewind_s(head, size * len(places))

    least = min(cost(order) for order in itertools.permutations(range(len(places))))
    greedy = cost(shortest_locate_first(physics, 0, places, [size] * len(places)))
    assert bound.locate_s + rewind_part <= min(least, greedy) + 1e-6


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 399), min_size=2, max_size=5, unique=True),
    st.lists(st.integers(1, 1000), min_size=5, max_size=5),
    st.sampled_from(["lto3", "lto9"]),
)
def test_no_reading_in_any_number_of_mounts_handles_and_locates_for_less_than_the_bound(
    starts, permille, profile
):
    # every way of reading a few files of a cartridge of many wraps in any number of mounts (every order,
    # cut in runs, each from the load point and rewound after): the bound's share of the cartridge (its work
    # less overheads and reads) is no more than the cheapest of them
    physics = TapePhysics(load_profile(profile))
    p = physics.profile
    slot = p.capacity_bytes // 400
    places = [s * slot for s in starts]
    sizes = [max(1, m * slot // 1000) for m in permille[: len(places)]]
    rows = [row(f"/{n}", "A", place, size) for n, (place, size) in enumerate(zip(places, sizes, strict=True))]
    bound = physical_bound(make_trace(rows), physics, drives=1)
    handling = physics.mount_s() + p.unload_s + p.robot_exchange_s
    share = bound.work_s - len(places) * p.per_file_overhead_s - physics.read_s(sum(sizes))

    def mount(order):
        head, locates = 0, 0.0
        for index in order:
            locates += physics.locate_s(head, places[index])
            head = places[index] + sizes[index]
        return handling + locates + physics.rewind_s(head, sum(sizes[i] for i in order))

    count = len(places)
    cheapest = min(
        sum(mount(order[a:b]) for a, b in itertools.pairwise((0, *cuts, count)))
        for order in itertools.permutations(range(count))
        for runs in range(count)
        for cuts in itertools.combinations(range(1, count), runs)
    )
    assert share <= cheapest + 1e-6


def test_a_mount_is_one_path_from_the_load_point_not_a_cycle_of_files():
    # three files of an LTO-9 cartridge: an assignment of predecessors alone may leave the load point out and
    # let the files precede each other in a cycle; a mount reads them in one path from the load point, and the
    # bound's share is the cheapest reading exactly (every order in one mount; two or three mounts cost more)
    slot = LTO9.profile.capacity_bytes // 400
    places = [87 * slot, 267 * slot, 341 * slot]
    sizes = [876 * slot // 1000, 311 * slot // 1000, 472 * slot // 1000]
    rows = [row(f"/{n}", "A", x, size) for n, (x, size) in enumerate(zip(places, sizes, strict=True))]
    bound = physical_bound(make_trace(rows), LTO9, drives=1)
    p = LTO9.profile
    share = bound.work_s - 3 * p.per_file_overhead_s - LTO9.read_s(sum(sizes))
    ends = [x + size for x, size in zip(places, sizes, strict=True)]

    def path(order):
        heads = [0, *(ends[i] for i in order[:-1])]
        return sum(LTO9.locate_s(head, places[i]) for head, i in zip(heads, order, strict=True))

    best = min(path(order) for order in itertools.permutations(range(3)))
    cycle = min(  # each file after another, none after the load point
        sum(LTO9.locate_s(ends[a], places[b]) for a, b in ((0, i), (i, j), (j, 0)))
        for i, j in ((1, 2), (2, 1))
    )
    handling = LTO9.mount_s() + p.unload_s + p.robot_exchange_s
    assert cycle < best - 20.0
    assert math.isclose(share, handling + LTO9.rewind_s(0, sum(sizes)) + best)


def test_files_sharing_their_cheapest_predecessor_are_counted_apart():
    # 60 files at random places on an LTO-9 cartridge: several have the same cheapest predecessor, which
    # only one of them can follow in a mount; the bound counts more than every file's cheapest locate
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(18)
    slot = LTO9.profile.capacity_bytes // 4000
    places = sorted(int(s) * slot for s in rng.choice(4000, size=60, replace=False))
    size = slot // 2
    bound = physical_bound(make_trace([row(f"/{n}", "A", x, size) for n, x in enumerate(places)]), LTO9, 1)
    p = LTO9.profile
    share = bound.work_s - 60 * p.per_file_overhead_s - LTO9.read_s(60 * size)
    starts = np.array(places, dtype=np.float64)
    ends = starts + size
    after = LTO9.locate_many(ends[:, None], starts[None, :])
    np.fill_diagonal(after, np.inf)
    cheapest = np.minimum(LTO9.locate_many(0.0, starts), after.min(axis=0)).sum()
    handling = LTO9.mount_s() + p.unload_s + p.robot_exchange_s
    last = LTO9.rewind_many(ends, np.full_like(ends, 60 * size)).min()
    floor = LTO9.rewind_many(ends, np.full_like(ends, size)).min()
    per_file = min(handling + last, 2 * (handling + floor)) + cheapest
    assert share > per_file + 10.0


def _fixed(physics, files, size):
    p = physics.profile
    return (
        physics.mount_s()
        + p.unload_s
        + p.robot_exchange_s
        + files * p.per_file_overhead_s
        + physics.read_s(files * size)
    )


_FILES = st.tuples(
    st.integers(0, 5),  # cartridge
    st.integers(0, 199),  # place: a 1/200 slot of the cartridge
    st.integers(1, 40),  # size, a thousandth of a slot
    st.sampled_from([0.0, 0.0, 30.0, 400.0, 3_000.0]),  # arrival
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_FILES, min_size=1, max_size=14, unique_by=lambda f: (f[0], f[1])),
    st.sampled_from(["t9940b", "lto9"]),
    st.integers(1, 3),
    st.integers(1, 2),
)
def test_no_replay_under_any_policy_beats_the_bound(files, profile, drives, robots):
    physics = TapePhysics(load_profile(profile))
    slot = physics.profile.capacity_bytes // 200
    trace = make_trace(
        row(f"/{tape}/{place}", f"T{tape}", place * slot, size * slot // 1000, arrival)
        for tape, place, size, arrival in files
    )
    bound = physical_bound(trace, physics, drives, robots)
    for policy in POLICIES:
        config = ReplayConfig(profile, drives, policy, library=LibraryFile(robots=robots))
        summary = summarise(replay(trace, config), bound)
        assert summary["makespan_s"] >= bound.bound_s - 1e-3, (policy, bound)
        assert bound.locate_free_s <= bound.bound_s


@pytest.mark.parametrize("name", ["star_batch", "zipf_batch"])
def test_small_workloads_replay_above_their_bound(name):
    from carousel.replay.workloads import workload  # noqa: PLC0415

    chosen = workload(name)
    trace = chosen.generate(0.01)
    for policy in POLICIES:
        summary = summarise(replay(trace, ReplayConfig(chosen.profile, chosen.drives, policy)))
        assert summary["makespan_s"] >= summary["physical_bound_s"], policy

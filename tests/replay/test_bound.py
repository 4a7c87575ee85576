import math

from carousel.replay.bound import physical_bound
from carousel.replay.trace import TraceRow, make_trace
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import load_profile

GB = 10**9
PHYSICS = TapePhysics(load_profile("t9940b"))  # one wrap: shortest-locate order is position order


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


def test_work_spreads_over_the_drives_and_a_late_arrival_can_decide():
    rows = [row(f"/{t}", t, GB, GB) for t in "ABCD"]
    one_tape = physical_bound(make_trace(rows[:1]), PHYSICS, drives=1)
    four = physical_bound(make_trace(rows), PHYSICS, drives=2)
    unmount = PHYSICS.unmount_s(2 * GB, GB)
    assert math.isclose(four.bound_s, (4 * one_tape.work_s - 2 * unmount) / 2)
    late = physical_bound(make_trace([*rows, row("/late", "E", 0, GB, arrival=10_000.0)]), PHYSICS, drives=2)
    assert math.isclose(
        late.bound_s, 10_000.0 + PHYSICS.mount_s() + PHYSICS.profile.per_file_overhead_s + PHYSICS.read_s(GB)
    )
    assert late.locate_free_s <= late.bound_s


def test_a_path_asked_twice_is_read_once():
    once = physical_bound(make_trace([row("/a", "A", 0, GB)]), PHYSICS, drives=1)
    twice = physical_bound(make_trace([row("/a", "A", 0, GB), row("/a", "A", 0, GB, arrival=5)]), PHYSICS, 1)
    assert twice.work_s == once.work_s

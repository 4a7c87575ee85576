"""Pacing the robots (policies/robot_pace.py) and carousel's use of it."""

from dataclasses import replace

from policies.carousel import CarouselOptions, CarouselPolicy
from policies.robot_pace import in_flight_left_s, paced_order, robots_matter
from tests.unit.policies.snapshots import COSTS, GB, busy, snapshot, tape

ROBOT = replace(COSTS, robot_s=26.0, robots=1)  # one exchange every 26 s at most


def test_while_the_mounts_in_progress_free_drives_too_slowly_the_free_drive_takes_a_short_tape():
    # 12 drives, 3 on long tapes (10,000 s each), 200 one-file tapes of 150 s and one of 5,000 s waiting. The
    # work left needs max(26 x 202.5 = 5,265 s of robot, (30,000 + 5,000 + 30,000) / 12 = 5,417 s of drive):
    # the pace is 201 / 5,417 s, the mounts in progress free 3 / 10,000 a second: no tape is short enough to
    # close the gap (1 / S >= 0.0368), so the free drive takes the shortest
    services = [150.0] * 200 + [5_000.0]
    order = paced_order(services, services, [10_000.0] * 3, costs=ROBOT, drives=12, picks=1)
    assert order[0] == 0
    assert sorted(order) == list(range(201))  # every tape once
    # eleven one-file mounts in progress free a drive every 5.5 s: the robot is covered, the longest goes
    order = paced_order(services, services, [60.0] * 11, costs=ROBOT, drives=12, picks=1)
    assert order[0] == 200


def test_the_gap_is_closed_by_the_longest_tape_that_closes_it():
    # 100 tapes on 2 drives, one in progress freeing its drive in 40 s: the pace is 100 tapes in
    # (70 + 80 + 900 + 97 x 60 + 40) / 2 = 3,455 s (the drives bind), 0.0289 a second; 1/40 is in progress,
    # so a tape of S <= 1 / (0.0289 - 0.025) = 256 s closes the gap: the longest of those is the 80 s one
    services = [70.0, 80.0, 900.0] + [60.0] * 97
    order = paced_order(services, services, [40.0], costs=ROBOT, drives=2, picks=1)
    assert order[0] == 1


def test_a_tape_that_alone_needs_the_time_left_goes_first():
    # 50,000 s against (1,000 + 50,000 + 30,000) / 4 = 20,250 s of drive work left: it decides the end
    services = [100.0] * 10 + [50_000.0]
    order = paced_order(services, services, [10_000.0] * 3, costs=ROBOT, drives=4, picks=2)
    assert order[0] == 10
    assert services[order[1]] == 100.0


def test_the_robots_are_paced_only_when_they_have_work_enough_left():
    many_short = [100.0] * 400  # 400 x 26 s of robot against 400 x 100 s / 4 drives: they matter
    assert robots_matter(many_short, [], ROBOT, drives=4)
    few_long = [10_000.0] * 10  # 260 s of robot against 25,000 s of each drive: they do not
    assert not robots_matter(few_long, [], ROBOT, drives=4)
    assert not robots_matter(many_short, [], COSTS, drives=4)  # no robot figures published


def test_a_tape_in_flight_counts_the_files_queued_to_join_it():
    alone = snapshot(tape("X", 1), drives=4, in_flight=(busy("A", 2),), costs=ROBOT)
    joined = snapshot(tape("A", 100, size=GB), tape("X", 1), drives=4, in_flight=(busy("A", 2),), costs=ROBOT)
    (short,) = in_flight_left_s(alone, ROBOT)
    (long,) = in_flight_left_s(joined, ROBOT)
    assert long > short + 100 * GB / ROBOT.rate_bytes_per_s


def test_carousel_feeds_the_robot_while_long_tapes_hold_the_other_drives():
    policy = CarouselPolicy(CarouselOptions())
    short = [tape(f"s{n:03d}", 1) for n in range(600)]
    long_in_flight = tuple(busy(f"L{n}", 500, size=GB) for n in range(3))
    plan = policy.plan(
        snapshot(tape("mid", 30, size=GB), *short, drives=4, in_flight=long_in_flight, costs=ROBOT)
    )
    assert [s.tape for s in plan.selections] == ["s000"]
    # one-file mounts in progress on the other drives cover the robot: the longest tape takes the free one
    short_in_flight = tuple(busy(f"b{n}") for n in range(5))
    plan = policy.plan(
        snapshot(tape("mid", 30, size=GB), *short, drives=6, in_flight=short_in_flight, costs=ROBOT)
    )
    assert [s.tape for s in plan.selections] == ["mid"]


def test_starving_tapes_that_arrived_together_are_paced_among_themselves():
    policy = CarouselPolicy(CarouselOptions(max_wait_s=3600, age_scale_s=1800))
    # every tape waited past max_wait_s. The one-file tapes arrived within age_scale_s of the oldest,
    # "long"; "late" 2,000 s after it. Three long tapes hold the other drives, so the robot wants short
    # mounts: a one-file tape goes first, not the oldest
    short = [tape(f"s{n:03d}", 1, age_s=8900 - n / 2) for n in range(600)]
    tapes = (*short, tape("long", 30, size=GB, age_s=9000), tape("late", 80, age_s=7000))
    long_in_flight = tuple(busy(f"L{n}", 500, size=GB) for n in range(3))
    plan = policy.plan(snapshot(*tapes, drives=4, in_flight=long_in_flight, costs=ROBOT))
    assert [s.tape for s in plan.selections] == ["s000"]
    # one-file mounts in progress cover the robot: the longest of the window goes
    short_in_flight = tuple(busy(f"b{n}") for n in range(5))
    plan = policy.plan(snapshot(*tapes, drives=6, in_flight=short_in_flight, costs=ROBOT))
    assert [s.tape for s in plan.selections] == ["long"]
    # without robot figures, starving tapes go oldest first
    plan = policy.plan(snapshot(*tapes, drives=4, in_flight=long_in_flight))
    assert [s.tape for s in plan.selections] == ["long"]

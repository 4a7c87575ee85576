from dataclasses import replace
from datetime import timedelta

import pytest

from policies.carousel import JOIN_WAIT, CarouselOptions, CarouselPolicy
from policies.common import CostOptions
from tests.unit.policies.snapshots import COSTS, GB, MB, T0, busy, snapshot, tape


def carousel(**changes) -> CarouselPolicy:
    return CarouselPolicy(CarouselOptions(**changes))


def chosen(plan) -> list[str]:
    return [s.tape for s in plan.selections]


def test_light_load_mounts_every_tape_at_once():
    plan = carousel().plan(snapshot(tape("A", 1), tape("B", 1), tape("C", 2), drives=4))
    assert sorted(chosen(plan)) == ["A", "B", "C"]
    assert plan.waiting == {}
    assert plan.wake_at is None


def test_scarce_drives_go_to_the_tapes_that_stream_most_per_drive_second():
    plan = carousel().plan(
        snapshot(tape("one", 1), tape("many", 50), tape("big", 10, size=GB), drives=2, costs=COSTS)
    )
    assert chosen(plan) == ["big", "many"]
    assert plan.waiting["one"].startswith("no free drive")
    by_tape = {s.tape: s for s in plan.selections}
    assert by_tape["many"].max_files == 50  # the whole tape in one pass, in head order
    assert by_tape["many"].order == "POSITION"


def test_waiting_lifts_a_tape_above_better_streaming_ones():
    policy = carousel(max_wait_s=10**6)
    fresh = policy.plan(snapshot(tape("one", 1, age_s=0), tape("many", 50), drives=1))
    assert chosen(fresh) == ["many"]
    aged = policy.plan(snapshot(tape("one", 1, age_s=36_000), tape("many", 50), drives=1))
    assert chosen(aged) == ["one"]


def test_priority_comes_before_the_score():
    plan = carousel().plan(snapshot(tape("low", 50), tape("high", 1, priority=2), drives=1))
    assert chosen(plan) == ["high"]


def test_files_for_a_tape_in_flight_join_it_once_the_drive_has_read_what_it_holds():
    reading = carousel().plan(snapshot(tape("A", 3), tape("B", 9), drives=1, in_flight=(busy("A", 2),)))
    assert chosen(reading) == []  # one batch later, not a batch each cycle as files arrive
    assert reading.waiting["A"] == JOIN_WAIT
    assert "no free drive" in reading.waiting["B"]
    read = carousel().plan(snapshot(tape("A", 3), tape("B", 9), drives=1, mounted=("A",)))
    assert chosen(read) == ["A"]  # the drive holds A idle: A's files go to it, whatever B's
    at_once = carousel(join_when_read=False)
    plan = at_once.plan(snapshot(tape("A", 3), tape("B", 9), drives=1, in_flight=(busy("A", 2),)))
    assert chosen(plan) == ["A"]


def test_files_for_a_tape_being_read_join_it_once_the_oldest_has_waited_join_after_s():
    # the library merges them with the unread files of the running pass (merge_batches): a batch that arrives
    # over ten minutes reaches the drive every join_after_s, not in a pass of its own after the first one
    policy = carousel()
    assert policy.options.join_after_s == 300.0
    assert policy.library_needs.merge_batches
    young = policy.plan(snapshot(tape("A", 3, age_s=299), drives=1, in_flight=(busy("A", 2),)))
    assert chosen(young) == [] and young.waiting["A"] == JOIN_WAIT
    assert young.wake_at == T0 + timedelta(seconds=1)  # time alone makes them join: the replay wakes then
    old = policy.plan(snapshot(tape("A", 3, age_s=300), tape("B", 9), drives=1, in_flight=(busy("A", 2),)))
    assert chosen(old) == ["A"] and "no free drive" in old.waiting["B"]
    only_when_read = carousel(join_after_s=None)
    plan = only_when_read.plan(snapshot(tape("A", 3, age_s=10**4), drives=1, in_flight=(busy("A", 2),)))
    assert chosen(plan) == [] and plan.waiting["A"] == JOIN_WAIT


ROBOT_COSTS = replace(COSTS, robot_s=60.0)


def test_while_the_robot_has_more_work_left_than_the_drives_short_mounts_go_first():
    # 30 one-file tapes (60 s of robot each: 1,800 s) against 2 drives' 2 x ~9,500 s: the drives bind,
    # the tapes streaming most go first; with 400 one-file tapes the robot binds, the shortest go first
    long = [tape(f"L{n}", 200, size=GB) for n in range(2)]
    few = carousel().plan(
        snapshot(*long, *(tape(f"s{n:03d}", 1) for n in range(30)), drives=2, costs=ROBOT_COSTS)
    )
    assert chosen(few) == ["L0", "L1"]
    many = [tape(f"s{n:03d}", 1) for n in range(400)]
    plan = carousel().plan(snapshot(tape("mid", 20, size=GB), *many, drives=2, costs=ROBOT_COSTS))
    assert chosen(plan) == ["s000", "s001"]
    # a tape long enough to decide the end goes first whatever the robot
    plan = carousel().plan(snapshot(tape("huge", 5000, size=GB), *many, drives=2, costs=ROBOT_COSTS))
    assert chosen(plan)[0] == "huge"
    # a library that publishes no robot figures keeps the plain ranking
    plain = carousel().plan(snapshot(tape("mid", 20, size=GB), *many, drives=2, costs=COSTS))
    assert chosen(plain)[0] == "mid"


def test_an_idle_mounted_tape_competes_without_a_mount_to_pay():
    equal = (tape("fresh", 5), tape("mounted", 5))
    plan = carousel().plan(snapshot(*equal, drives=1, mounted=("mounted",)))
    assert chosen(plan) == ["mounted"]
    no_keep = carousel(keep_mounted=False).plan(snapshot(*equal, drives=1, mounted=("mounted",)))
    assert chosen(no_keep) == ["fresh"]  # same score: the tape id decides


def test_a_starving_tape_goes_first_and_stops_others_from_growing_their_mounts():
    policy = carousel(max_wait_s=3600)
    plan = policy.plan(
        snapshot(
            tape("busy", 40),
            tape("good", 200, age_s=100),
            tape("old", 1, age_s=3600),
            drives=2,
            in_flight=(busy("busy", 5),),
        )
    )
    assert chosen(plan) == ["old"]
    assert "waiting too long" in plan.waiting["busy"]
    assert plan.waiting["good"].startswith("no free drive")


def test_near_saturation_a_tape_waits_until_its_files_have_waited_as_long_as_a_mount_costs():
    # 3 of 4 drives busy: u = 0.75, ρ = (0.75 − 0.5) / 0.25 = 1: a mount is worth n·age ≥ mount + unmount
    held = tuple(busy(f"X{n}") for n in range(3))
    fixed = COSTS.mount_s + COSTS.unmount_s
    plan = carousel().plan(snapshot(tape("small", 1, age_s=10), drives=4, in_flight=held))
    assert plan.selections == ()
    assert "gathering work" in plan.waiting["small"]
    assert plan.wake_at == T0 - timedelta(seconds=10) + timedelta(seconds=fixed)
    ready = carousel().plan(snapshot(tape("small", 1, age_s=fixed), drives=4, in_flight=held))
    assert chosen(ready) == ["small"]
    many = carousel().plan(snapshot(tape("many", 20, age_s=10), drives=4, in_flight=held))
    assert chosen(many) == ["many"]
    never_wait = carousel(patience=0).plan(snapshot(tape("small", 1), drives=4, in_flight=held))
    assert chosen(never_wait) == ["small"]


def test_a_library_without_costs_plans_with_the_configured_ones():
    slow_mounts = CostOptions(mount_s=5000.0, unmount_s=5000.0)
    held = tuple(busy(f"X{n}") for n in range(3))
    snap = snapshot(tape("small", 4, age_s=300), drives=4, in_flight=held, costs=None)
    assert chosen(carousel().plan(snap)) == ["small"]  # default figures: 4 · 300 s > 124 s
    assert carousel(costs=slow_mounts).plan(snap).selections == ()


def test_a_claim_is_bounded():
    plan = carousel(max_files_per_mount=100).plan(snapshot(tape("A", 5000, size=MB)))
    assert [s.max_files for s in plan.selections] == [100]


def test_options_are_checked():
    with pytest.raises(ValueError, match="knee"):
        CarouselOptions(knee=1.0)


def test_files_whose_read_failed_never_join_a_mount_of_their_tape():
    policy = carousel()
    at_once = carousel(join_when_read=False)
    busy_with_retries = at_once.plan(snapshot(tape("A", 5, retries=2), in_flight=(busy("A"),)))
    (join,) = busy_with_retries.selections
    assert (join.tape, join.max_files, join.first_attempts_only) == ("A", 3, True)
    read_with_retries = policy.plan(snapshot(tape("A", 5, retries=2), mounted=("A",)))
    (join,) = read_with_retries.selections
    assert (join.tape, join.max_files, join.first_attempts_only) == ("A", 3, True)
    only_retries = policy.plan(snapshot(tape("A", 2, retries=2), in_flight=(busy("A"),)))
    assert only_retries.selections == ()
    assert "later one" in only_retries.waiting["A"]
    still_mounted = policy.plan(snapshot(tape("A", 2, retries=2), mounted=("A",)))
    assert still_mounted.selections == ()
    unmounted = policy.plan(snapshot(tape("A", 2, retries=2)))
    assert [(s.max_files, s.first_attempts_only) for s in unmounted.selections] == [(2, False)]


def test_a_mount_stops_growing_once_its_retries_have_waited_too_long():
    plan = carousel(max_wait_s=3600).plan(
        snapshot(tape("A", 5, retries=1, age_s=3600), in_flight=(busy("A"),))
    )
    assert plan.selections == ()
    assert "retries have waited too long" in plan.waiting["A"]

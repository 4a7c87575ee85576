"""The projection follows the policy's own plans on the library's cost figures: times worked out by hand
from the costs, a policy that holds tapes back followed until it lets them go, late binding, the library
offline or without figures, the rough placement beyond the horizon, the disk buffer's room shared by the
plans of the snapshot's instant, and a property over random queues."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carousel.domain.buffer import BUFFER_FULL, BufferView
from carousel.domain.planning import Plan, Snapshot
from carousel.outlook.projection import project
from policies.carousel import JOIN_WAIT
from policies.registry import build_policy
from tests.unit.policies.snapshots import COSTS, MB, T0, busy, snapshot, snapshots, tape

SIZE = 100 * MB


def seconds(s: float) -> timedelta:
    return timedelta(seconds=s)


class near:  # noqa: N801 (reads as a comparison)
    """A time compared to within a few microseconds (timedelta arithmetic rounds)."""

    def __init__(self, when: datetime) -> None:
        self.when = when

    def __eq__(self, other: object) -> bool:
        return isinstance(other, datetime) and abs(other - self.when) <= timedelta(microseconds=5)

    __hash__ = None  # type: ignore[assignment]  # compared, never hashed

    def __repr__(self) -> str:
        return f"near({self.when.isoformat()})"


def mount_service(files: int) -> float:
    """mount, one pass over `files` files of SIZE bytes: until the last read ends (no unmount)."""
    return COSTS.mount_s + COSTS.pass_s(files, files * SIZE)


def test_free_drives_take_tapes_at_once_and_the_third_waits_for_one() -> None:
    policy = build_policy("carousel")
    queue = snapshot(tape("A", 10, age_s=60), tape("B", 5, age_s=50), tape("C", 3, age_s=10), drives=2)

    projection = project(queue, policy.plan)

    first = {t.tape for t in projection.plan.selections if t.tape}
    assert first == {"A", "B"}
    a, b, c = (projection.tapes[n] for n in "ABC")
    assert a.selected and b.selected and not c.selected
    assert c.reason == "no free drive"
    assert a.eta == near(T0 + seconds(mount_service(10)))
    assert b.eta == near(T0 + seconds(mount_service(5)))
    # C takes the drive B leaves, after B's unmount
    c_starts = T0 + seconds(mount_service(5) + COSTS.unmount_s + COSTS.mount_s)
    assert c.starts_at == near(c_starts)
    assert c.eta == near(c_starts + seconds(COSTS.pass_s(3, 3 * SIZE)))
    assert (a.files_ahead, b.files_ahead, c.files_ahead) == (0, 0, 15)
    assert projection.complete and projection.note is None
    assert projection.drained_at == max(a.eta, c.eta)


def test_a_mounted_tape_in_flight_reads_without_a_mount_and_late_arrivals_join_its_pass() -> None:
    policy = build_policy("carousel")
    queue = snapshot(tape("A", 4), in_flight=(busy("A", 6, size=SIZE),), mounted=("A",), drives=2)

    projection = project(queue, policy.plan)

    a = projection.tapes["A"]
    # carousel hands the arrivals over in one batch once the drive has read what it holds (join_when_read):
    # not selected now, and still read in the same mount, right after the first pass
    assert (a.queued, a.in_flight, a.selected) == (4, 6, False)
    assert a.reason == JOIN_WAIT
    first_pass = T0 + seconds(COSTS.pass_s(6, 6 * SIZE))
    joined = [p for p in projection.passes if p.joined]
    assert len(joined) == 1
    assert joined[0].reads_from == near(first_pass)
    per_file = COSTS.locate_per_file_s(10) + COSTS.overhead_s
    assert a.eta == near(first_pass + seconds(4 * per_file + COSTS.read_s(4 * SIZE)))
    assert a.starts_at == T0 and a.files_ahead == 0


def test_a_policy_that_holds_tapes_back_is_followed_until_it_lets_them_go() -> None:
    """cta mounts a tape once its oldest request is min_age_s old: the projection waits with it."""
    policy = build_policy("cta", {"min_age_s": 600})
    queue = snapshot(tape("A", 2, age_s=100), tape("B", 2, age_s=400), drives=4)

    projection = project(queue, policy.plan)

    assert projection.plan.selections == ()
    assert projection.tapes["A"].reason is not None
    assert projection.tapes["A"].reason.startswith("below the mount thresholds")
    b_due = T0 + seconds(200)
    a_due = T0 + seconds(500)
    assert projection.tapes["B"].starts_at == near(b_due + seconds(COSTS.mount_s))
    assert projection.tapes["A"].starts_at == near(a_due + seconds(COSTS.mount_s))
    assert projection.tapes["A"].eta == near(a_due + seconds(mount_service(2)))
    assert projection.complete


def test_files_handed_over_one_by_one_take_a_mount_each() -> None:
    policy = build_policy("fifo")
    queue = snapshot(tape("A", 3), drives=1)

    projection = project(queue, policy.plan)

    assert [p.files for p in projection.passes] == [1, 1, 1]
    one = mount_service(1) + COSTS.unmount_s
    assert projection.tapes["A"].eta == near(T0 + seconds(2 * one + mount_service(1)))


def test_an_offline_library_or_one_without_figures_gets_reasons_but_no_times() -> None:
    policy = build_policy("carousel")
    offline = project(snapshot(tape("A", 2), online=False), policy.plan)
    assert offline.tapes["A"].reason == "the library is offline"
    assert offline.tapes["A"].eta is None and offline.note is not None and "offline" in offline.note

    unknown = project(snapshot(tape("A", 2), costs=None), build_policy("carousel").plan)
    assert unknown.tapes["A"].selected and unknown.tapes["A"].eta is None
    assert unknown.note is not None and "cost figures" in unknown.note


def test_beyond_the_plan_budget_the_rest_is_placed_roughly_in_priority_then_arrival_order() -> None:
    policy = build_policy("carousel")
    tapes = (
        tape("A", 2, age_s=30),
        tape("B", 2, age_s=20),
        tape("C", 2, age_s=10, priority=1),
        tape("D", 2, priority=1),
        tape("E", 2, age_s=5),
    )
    projection = project(snapshot(*tapes, drives=1), policy.plan, max_plans=1)

    assert not projection.complete and projection.note is not None
    placed = [p.tape for p in sorted(projection.passes, key=lambda p: p.reads_from)]
    assert placed[0] == "C" and not projection.tapes["C"].rough  # the policy's own choice: priority, age
    assert placed[1:] == ["D", "A", "B", "E"]
    assert all(projection.tapes[t].rough and projection.tapes[t].eta is not None for t in placed[1:])


def test_costs_on_a_faster_clock_shorten_every_duration() -> None:
    queue = snapshot(tape("A", 5), drives=1)
    plain = project(queue, build_policy("carousel").plan)
    assert queue.library.costs is not None
    faster = replace(queue, library=replace(queue.library, costs=queue.library.costs.per_clock(100.0)))
    fast = project(faster, build_policy("carousel").plan)
    assert plain.tapes["A"].eta is not None and fast.tapes["A"].eta is not None
    assert (fast.tapes["A"].eta - T0) * 100 == pytest.approx(
        plain.tapes["A"].eta - T0, abs=timedelta(milliseconds=1)
    )


@settings(max_examples=60)
@given(
    queue=snapshots(),
    name=st.sampled_from(["fifo", "star2006", "cta", "carousel", "carousel+fair_share"]),
)
def test_every_tape_with_work_gets_an_outlook(queue: Snapshot, name: str) -> None:
    policy_name, _, wrapped = name.partition("+")
    options = {"fair_share": {"weights": {"atlas": 2}}} if wrapped else {}
    policy = build_policy(policy_name, options)
    first = build_policy(policy_name, options).plan(queue)

    projection = project(queue, policy.plan, max_plans=50)

    assert projection.plan == first  # the next cycle's plan, as the scheduler would make it
    with_work = {t.tape for t in queue.tapes} | {t.tape for t in queue.in_flight_tapes if t.files > 0}
    assert set(projection.tapes) == with_work
    timed = queue.library.costs is not None and queue.library.drives_total > 0
    for outlook in projection.tapes.values():
        assert (outlook.eta is not None) == timed
        if outlook.eta is not None:
            assert outlook.starts_at is not None and queue.now <= outlook.starts_at <= outlook.eta
            assert outlook.files_ahead is not None and outlook.files_ahead >= 0
    taken = sum(p.files for p in projection.passes if p.plan != 0)
    assert taken == (sum(t.files for t in queue.tapes) if timed else 0)


def _plan_of(plan: Plan) -> set[str]:
    return {s.tape for s in plan.selections if s.tape is not None}


def test_a_cartridge_handed_over_file_by_file_is_in_one_drive_at_a_time() -> None:
    policy = build_policy("fifo")
    queue = snapshot(tape("A", 2), tape("B", 1, age_s=0), drives=2)

    projection = project(queue, policy.plan)

    a_passes = [p for p in projection.passes if p.tape == "A"]
    (b_pass,) = [p for p in projection.passes if p.tape == "B"]
    one = mount_service(1) + COSTS.unmount_s
    # A's second mount waits for its first pass and unmount, on the drive A left; B takes the other drive
    assert [p.drive for p in a_passes] == [0, 0] and b_pass.drive == 1
    assert a_passes[1].reads_from == near(T0 + seconds(one + COSTS.mount_s))
    assert b_pass.reads_from == near(T0 + seconds(COSTS.mount_s))
    assert projection.tapes["A"].eta == near(T0 + seconds(one + mount_service(1)))


def test_plans_made_at_the_snapshots_instant_share_the_buffers_room() -> None:
    # two drives, A and B of one 100 MB file each, room for 150 MB: the next cycle hands over A, and B waits
    # for space; a plan made at the same instant finds no more room, so B is read once time has moved on
    queue = snapshot(tape("A", 1, age_s=2), tape("B", 1, age_s=1), drives=2)
    room = BufferView(1000 * MB, 0, 0, 0, free_bytes=150 * MB, admissible_bytes=150 * MB)
    buffered = project(replace(queue, buffer=room), build_policy("star2006").plan)
    whole = project(queue, build_policy("star2006").plan)

    assert buffered.plan.waiting.get("B") == BUFFER_FULL
    assert buffered.claimed_bytes == SIZE
    a, b = buffered.tapes["A"], buffered.tapes["B"]
    assert a.eta == whole.tapes["A"].eta and a.eta is not None
    assert b.starts_at is not None and b.starts_at > a.eta  # not beside A on the free drive
    assert whole.tapes["B"].starts_at == whole.tapes["A"].starts_at

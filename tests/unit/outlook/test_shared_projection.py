"""The API's shared projection: made once per refresh interval whoever asks, made anew for a request newer
than its snapshot (not more than once per min_refresh_s), and one at a time: a caller arriving while it is
being made gets the one there is."""

from __future__ import annotations

from datetime import datetime, timedelta

from carousel.domain.clock import ManualClock
from carousel.outlook.projection import Projection, project
from carousel.outlook.shared import SharedProjection
from policies.registry import build_policy
from tests.unit.policies.snapshots import T0, snapshot, tape


def projections() -> tuple[list[Projection], SharedProjection, ManualClock]:
    made: list[Projection] = []
    clock = ManualClock(T0)
    policy = build_policy("carousel")

    def compute() -> Projection:
        at = clock.now()
        made.append(project(snapshot(tape("A", 3, now=at), now=at), policy.plan))
        return made[-1]

    return made, SharedProjection(compute, clock=clock, refresh_s=10.0, min_refresh_s=1.0), clock


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_one_projection_per_refresh_interval() -> None:
    made, shared, clock = projections()

    first = shared.get()
    clock.set(at(9.9))
    again = shared.get()
    clock.set(at(10.0))
    later = shared.get()

    assert again is first and later is not first and len(made) == 2 and shared.computed == 2
    assert later.now == at(10)


def test_a_request_newer_than_the_snapshot_gets_a_new_one_at_most_once_a_second() -> None:
    made, shared, clock = projections()
    first = shared.get()
    submitted = at(0.5)

    clock.set(at(0.5))
    too_soon = shared.get(covering=submitted)
    clock.set(at(1.0))
    fresh = shared.get(covering=submitted)
    clock.set(at(2.0))
    covered = shared.get(covering=submitted)

    assert too_soon is first
    assert fresh is not first and fresh.now >= submitted
    assert covered is fresh and len(made) == 2


def test_a_caller_arriving_while_it_is_made_gets_the_current_one() -> None:
    clock = ManualClock(T0)
    policy = build_policy("carousel")
    seen: list[Projection] = []
    shared: SharedProjection

    def compute() -> Projection:
        if shared.computed:  # the second making: another caller asks meanwhile
            seen.append(shared.get())
        return project(snapshot(tape("A", 3)), policy.plan)

    shared = SharedProjection(compute, clock=clock, refresh_s=10.0)
    first = shared.get()
    clock.set(at(20.0))
    second = shared.get()

    assert seen == [first] and second is not first and shared.computed == 2


def test_a_failed_projection_lets_the_next_caller_try() -> None:
    clock = ManualClock(T0)
    policy = build_policy("carousel")
    calls: list[int] = []

    def compute() -> Projection:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the database is away")
        return project(snapshot(tape("A", 3)), policy.plan)

    shared = SharedProjection(compute, clock=clock, refresh_s=10.0)
    try:
        shared.get()
    except RuntimeError as exc:
        assert str(exc) == "the database is away"
    else:
        raise AssertionError("the failure was not passed on")

    assert shared.get().tapes["A"].queued == 3 and len(calls) == 2

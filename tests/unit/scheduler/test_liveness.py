"""The liveness watch on its own: quiet time from the library's physics, the stall, the probe, the end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from carousel.domain.planning import GroupDemand, LibraryCosts, TapeInFlight
from carousel.scheduler.liveness import LivenessRule, LivenessWatch, physics_quiet_s
from hsm_adapters.base import Event, EventKind

T0 = datetime(2026, 1, 1, tzinfo=UTC)
COSTS = LibraryCosts(
    mount_s=20.0, unmount_s=60.0, rate_bytes_per_s=100e6, overhead_s=2.0, locate_s=((1, 50.0), (100, 10.0))
)
TAPES = (TapeInFlight("A", 4, (GroupDemand("g", 4, 4 * 10**9),)),)  # 1 GB files: 10 s each


def event(kind: EventKind, at_s: float) -> Event:
    return Event(kind=kind, at=T0 + timedelta(seconds=at_s), seq=int(at_s) + 1, file_key="1")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_quiet_time_is_an_exchange_a_locate_and_a_read_of_the_largest_mean_file() -> None:
    assert physics_quiet_s(COSTS, TAPES) == pytest.approx(60 + 20 + 50 + 2 + 10)
    assert physics_quiet_s(None, TAPES) == 0.0  # no cost figures: the floor alone


def test_a_quiet_library_with_work_stalls_after_factor_times_physics_and_ends_at_its_next_event() -> None:
    watch = LivenessWatch(LivenessRule(factor=3.0, floor_s=100.0, probe_files=5), COSTS)
    watch.after_pass(4, TAPES, at(0))  # work goes to an idle library at 0 s
    assert watch.expected_quiet.total_seconds() == pytest.approx(3 * 142)
    assert watch.stalled_since(at(426)) is None
    assert watch.stalled_since(at(427)) == at(0)
    assert watch.probe_budget(at(427)) == 5
    watch.probed(5, at(427))
    assert watch.probe_budget(at(500)) == 0  # one probe per quiet time
    assert watch.probe_budget(at(427 + 426)) == 5
    assert not watch.observe_events([event(EventKind.UNMOUNTED, 900)])  # not progress
    assert watch.observe_events([event(EventKind.FILE_STARTED, 950)])  # the stall ends
    assert watch.stalled_since(at(960)) is None
    assert watch.stalled_since(at(950 + 427)) == at(950)  # quiet again since its last progress


def test_the_floor_holds_and_an_idle_library_never_stalls() -> None:
    watch = LivenessWatch(LivenessRule(factor=1.0, floor_s=1000.0, probe_files=0), COSTS)
    watch.after_pass(4, TAPES, at(0))
    assert watch.stalled_since(at(999)) is None
    watch.after_pass(0, (), at(999))  # nothing in flight: nothing owed
    assert watch.stalled_since(at(5000)) is None


def test_an_outage_starts_the_watch_afresh() -> None:
    watch = LivenessWatch(LivenessRule(factor=1.0, floor_s=10.0, probe_files=1), COSTS)
    watch.after_pass(4, TAPES, at(0))
    assert watch.stalled_since(at(500)) == at(0)
    watch.observe_offline()
    watch.after_pass(4, TAPES, at(3600))
    assert watch.stalled_since(at(3601)) is None

"""The recovery ramp: full pace until an outage, the start budget when it ends, linear growth, full again."""

from __future__ import annotations

from datetime import timedelta

import pytest

from carousel.domain.clock import ManualClock
from carousel.scheduler.pace import RecoveryPace
from hsm_adapters.base import Health


def test_full_pace_until_something_goes_wrong(clock: ManualClock) -> None:
    pace = RecoveryPace(max_files=1000, start_files=50, ramp_s=600)
    pace.observe_health(Health.ONLINE, clock.now())
    pace.observe_health(Health.DEGRADED, clock.now())
    assert pace.budget(clock.now()) == 1000 and not pace.recovering


def test_after_an_outage_the_budget_ramps_up_linearly(clock: ManualClock) -> None:
    pace = RecoveryPace(max_files=1000, start_files=50, ramp_s=600)
    pace.observe_health(Health.OFFLINE, clock.now())
    clock.advance(3600)
    pace.observe_health(Health.OFFLINE, clock.now())
    pace.observe_health(Health.ONLINE, clock.now())
    budgets = []
    for _ in range(8):
        budgets.append(pace.budget(clock.now()))
        clock.advance(100)
    assert budgets == [50, 166, 333, 500, 666, 833, 1000, 1000]
    assert not pace.recovering


def test_refused_batches_restart_the_ramp(clock: ManualClock) -> None:
    pace = RecoveryPace(max_files=1000, start_files=50, ramp_s=600)
    pace.observe_refusals(0, clock.now())
    assert pace.budget(clock.now()) == 1000
    pace.observe_refusals(3, clock.now())
    assert pace.budget(clock.now()) == 50
    clock.advance(300)
    assert pace.budget(clock.now()) == 500


def test_no_ramp_when_ramp_s_is_zero(clock: ManualClock) -> None:
    pace = RecoveryPace(max_files=1000, start_files=50, ramp_s=0)
    pace.observe_health(Health.OFFLINE, clock.now())
    pace.observe_health(Health.ONLINE, clock.now() + timedelta(seconds=1))
    assert pace.budget(clock.now()) == 1000


def test_bad_pace_is_refused() -> None:
    with pytest.raises(ValueError, match="bad pace"):
        RecoveryPace(max_files=0, start_files=1, ramp_s=1)

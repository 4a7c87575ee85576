"""The library offline for an hour of virtual time under load: nothing fails for it, submissions pause, and
after recovery the backlog is released at the configured pace (recovery_start_files, growing linearly to
max_files_per_cycle over recovery_ramp_s), not as a flood."""

from __future__ import annotations

from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from hsm_adapters.base import Health
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import all_in, catalogue_files, file_states, make_cycle, run_until

OUTAGE = (600.0, 4200.0)  # library seconds; scale 1: the same on the clock
STEP_S = 20.0


def test_an_hour_offline_fails_nothing_pauses_submission_and_ramps_up_after(
    session_factory, make_adapter, clock: ManualClock
):
    adapter = make_adapter(
        drives=2,
        queue_depth={"default": 5000},
        catalogue={"generate": {"seed": 3, "cartridges": 10, "files_per_cartridge": 60}},
        faults={"offline_windows": [{"start_s": OUTAGE[0], "end_s": OUTAGE[1]}]},
    )
    files = catalogue_files(adapter, 600, clock.now())
    add_request(session_factory, files[:150], clock.now())
    cycle = make_cycle(
        session_factory,
        adapter,
        clock,
        policy_options={"max_files": 5000},
        max_files_per_cycle=300,
        recovery_start_files=10,
        recovery_ramp_s=600,
    )
    start = clock.now()

    def t() -> float:
        return (clock.now() - start).total_seconds()

    reports = []
    arrived = False
    while t() < OUTAGE[1] + 900:
        if not arrived and t() >= OUTAGE[0] + 100:  # more work arrives during the outage
            add_request(session_factory, files[150:], clock.now())
            arrived = True
        reports.append((t(), cycle.run_once()))
        assert "FAILED" not in file_states(session_factory).values()  # nothing fails for the outage
        clock.advance(STEP_S)

    before = [r for at, r in reports if at < OUTAGE[0]]
    during = [r for at, r in reports if OUTAGE[0] <= at < OUTAGE[1]]
    after = [r for at, r in reports if at >= OUTAGE[1]]
    assert sum(r.files_submitted for r in before) == 150
    assert {r.health for r in during} == {Health.OFFLINE}
    assert sum(r.claimed + r.files_submitted + r.resolved for r in during) == 0  # submissions pause
    assert all(r.budget == 0 for r in during)

    backlog = 450
    submitted_after = [r.files_submitted for r in after]
    budgets = [r.budget for r in after]
    print(f"\nafter recovery, files submitted per {STEP_S:g} s cycle: {submitted_after}")
    assert submitted_after[0] == 10  # the first cycle after the outage: recovery_start_files, not 450
    assert all(r.files_submitted <= r.budget for r in after)
    assert budgets == sorted(budgets) and budgets[0] == 10 and budgets[-1] == 300  # linear ramp to full
    ramp = [b for b in budgets if b < 300]
    assert len(ramp) * STEP_S <= 600 + STEP_S  # full pace again within recovery_ramp_s
    assert sum(submitted_after) == backlog

    run_until(cycle, clock, all_in(session_factory, FileState.STAGED), step_s=60)
    assert adapter.library.stats().files_failed == 0
    assert adapter.library.stats().files_staged == 600


def test_without_a_ramp_the_backlog_goes_at_once(session_factory, make_adapter, clock: ManualClock):
    """The same outage with recovery_ramp_s = 0: the baseline the ramp is measured against."""
    adapter = make_adapter(
        queue_depth={"default": 5000},
        faults={"offline_windows": [{"start_s": 0, "end_s": 3600}]},
    )
    add_request(session_factory, catalogue_files(adapter, 80, clock.now()), clock.now())
    cycle = make_cycle(session_factory, adapter, clock, policy_options={"max_files": 5000}, recovery_ramp_s=0)
    assert cycle.run_once().files_submitted == 0
    clock.advance(3700)
    assert cycle.run_once().files_submitted == 80

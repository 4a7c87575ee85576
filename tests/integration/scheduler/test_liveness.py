"""A library that says ONLINE, takes batches and then moves nothing for an hour of virtual time: the cycle
notices from the library's physics, gives it only a small probe while it is stalled, every waiting tape says
why, the metric shows it, and when the library moves again the backlog goes out at the recovery pace."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from carousel.observability.metrics import ServiceMetrics
from carousel.outlook.reasons import WaitCode, classify
from carousel.scheduler.cycle import CycleReport
from hsm_adapters.base import Health
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import all_in, catalogue_files, file_states, make_cycle, run_until

STALL = (600.0, 4200.0)  # library seconds; scale 1: the same on the clock
STEP_S = 20.0
FIRST, SECOND, DURING = 150, 450, 200  # files at 0 s, at 500 s, and at 1,400 s (inside the stall)
SETTINGS: dict[str, Any] = {
    "max_files_per_cycle": 300,
    "recovery_start_files": 10,
    "recovery_ramp_s": 600,
    "liveness_factor": 3.0,
    "liveness_floor_s": 300.0,
    "liveness_probe_files": 5,
}


def stalled_run(session_factory, make_adapter, clock: ManualClock, **overrides: Any):
    adapter = make_adapter(
        drives=2,
        queue_depth={"default": 5000},
        catalogue={"generate": {"seed": 3, "cartridges": 10, "files_per_cartridge": 80}},
        faults={"stall_windows": [{"start_s": STALL[0], "end_s": STALL[1]}]},
    )
    files = catalogue_files(adapter, FIRST + SECOND + DURING, clock.now())
    cycle = make_cycle(
        session_factory, adapter, clock, policy_options={"max_files": 5000}, **{**SETTINGS, **overrides}
    )
    metrics = ServiceMetrics()
    start = clock.now()
    arrivals = {0.0: files[:FIRST], 500.0: files[FIRST : FIRST + SECOND], 1400.0: files[FIRST + SECOND :]}
    # (second, report, stalled gauge, the quiet time the watch expected when the cycle began)
    reports: list[tuple[float, CycleReport, float, float]] = []
    while (at := (clock.now() - start).total_seconds()) < STALL[1] + 900:
        if at in arrivals:
            add_request(session_factory, arrivals.pop(at), clock.now())
        quiet = cycle.feed.liveness.expected_quiet.total_seconds()
        report = cycle.run_once()
        metrics.observe_cycle(report)
        gauge = metrics.registry.get_sample_value("carousel_hsm_stalled") or 0.0
        reports.append((at, report, gauge, quiet))
        assert "FAILED" not in file_states(session_factory).values()
        clock.advance(STEP_S)
    return adapter, cycle, reports


def test_a_stalled_library_is_noticed_probed_explained_and_released_at_the_recovery_pace(
    session_factory, make_adapter, clock: ManualClock
):
    adapter, cycle, reports = stalled_run(session_factory, make_adapter, clock)
    start = clock.now() - timedelta(seconds=reports[-1][0] + STEP_S)
    assert {r.health for _, r, _, _ in reports} == {Health.ONLINE}  # the library never says anything is wrong

    stalled = [(at, r, gauge) for at, r, gauge, _ in reports if r.stalled_since is not None]
    assert stalled, "the stall was not noticed"
    detected_at, first, _ = stalled[0]
    assert first.stalled_since is not None
    since_s = (first.stalled_since - start).total_seconds()
    assert since_s < STALL[0] + 60  # the last progress: reads going when the stall began finished
    # noticed once the library was quiet for longer than its physics explain, within one cycle of that
    quiet = next(q for at, _, _, q in reports if at == detected_at)
    costs = cycle.path.costs
    assert costs is not None
    assert quiet >= max(300.0, 3.0 * (costs.mount_s + costs.unmount_s))
    assert since_s + quiet < detected_at <= since_s + quiet + STEP_S
    # until the first read starts after the window: a mount later
    assert all(STALL[0] <= at <= STALL[1] + costs.mount_s + STEP_S for at, _, _ in stalled)
    assert all(gauge == 1.0 for _, _, gauge in stalled)
    assert all(gauge == 0.0 for _, r, gauge, _ in reports if r.stalled_since is None)

    # while stalled: only probes, each at most probe_files, at most once per expected quiet time
    probes = [(at, r.files_submitted) for at, r, _ in stalled if r.files_submitted]
    assert probes and all(files <= 5 for _, files in probes)
    assert all(b - a >= quiet for (a, _), (b, _) in itertools.pairwise(probes))
    # every tape with queued work says why it waits
    during = [r for at, r, _ in stalled if r.tapes_with_work]
    assert during
    for r in during:
        assert r.plan is not None and len(r.plan.waiting) == r.tapes_with_work
        assert {classify(reason) for reason in r.plan.waiting.values()} == {WaitCode.LIBRARY_STALLED}
        assert all("library not progressing since" in reason for reason in r.plan.waiting.values())

    # the library moves again: the stall ends at its first event, and the backlog goes out at the pace
    after = [(at, r) for at, r, _, _ in reports if at >= STALL[1]]
    ended = [at for at, r in after if r.stall_ended]
    assert ended and ended[0] <= STALL[1] + costs.mount_s + STEP_S
    released = [r.files_submitted for at, r in after if at >= ended[0]]
    budgets = [r.budget for at, r in after if at >= ended[0]]
    backlog = DURING - sum(files for _, files in probes)
    print(
        f"\nstall from {since_s:g} s (last progress), noticed at {detected_at:g} s"
        f" (expected quiet {quiet:.0f} s); probes {probes}; after the stall, per {STEP_S:g} s cycle:"
        f" {released[:12]}, budgets {budgets[:12]}"
    )
    assert released[0] == 10  # recovery_start_files, not the whole backlog
    assert budgets == sorted(budgets) and budgets[-1] == 300
    assert len([b for b in budgets if b < 300]) * STEP_S <= 600 + STEP_S
    assert sum(released) == backlog

    run_until(cycle, clock, all_in(session_factory, FileState.STAGED), step_s=60)
    assert adapter.library.stats().files_failed == 0
    assert adapter.library.stats().files_staged == FIRST + SECOND + DURING


def test_without_the_watch_the_stalled_library_gets_the_whole_backlog(
    session_factory, make_adapter, clock: ManualClock
):
    """The baseline the watch is measured against: a floor longer than the stall, so it never fires."""
    _, _, reports = stalled_run(session_factory, make_adapter, clock, liveness_floor_s=10 * 3600.0)
    assert all(r.stalled_since is None for _, r, _, _ in reports)
    into_stall = sum(r.files_submitted for at, r, _, _ in reports if STALL[0] <= at < STALL[1])
    assert into_stall == DURING  # all of it handed to a library that reads nothing

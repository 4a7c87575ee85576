"""After an outage the service and the replay release the backlog alike: the database cycle stepped every
tick on a virtual clock and the replay over its memory store hand the library the same files per pass, at
the recovery pace, and end with the same reads and mounts, on PostgreSQL and on SQLite."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from carousel.domain.clock import ManualClock
from carousel.replay.driver import EPOCH, ReplayConfig, replay, replay_library
from carousel.replay.library_setup import LibraryFile
from carousel.replay.trace import Trace, TraceRow, make_trace
from carousel.scheduler.cycle import Cycle
from carousel.scheduler.feed import FeedSettings
from hsm_adapters.simulated.costs import library_costs
from policies.registry import build_policy
from tests.integration.replay.test_live_equals_replay import (
    live_mounts,
    live_reads,
    replay_mounts,
    replay_reads,
)
from tests.integration.scheduler.rows import add_request, queued
from tests.integration.scheduler.support import settings

GB = 10**9
STEP_S = 20.0
OUTAGE = (100.0, 1900.0)
PACE = {"recovery_start_files": 10, "recovery_ramp_s": 600.0}


def outage_trace() -> Trace:
    """80 files of 1 GB on 8 LTO-8 cartridges, arriving every 20 s: most while the library is away."""
    rows = [
        TraceRow(n * 20.0, f"r{n}", f"/d/T{n % 8}/{n}", GB, f"T{n % 8}", (n // 8) * 20 * GB, "g", 0)
        for n in range(80)
    ]
    return make_trace(rows, "outage")


CONFIG = ReplayConfig(
    profile="lto8",
    drives=2,
    policy="fifo",
    policy_options={"max_files": 5000},
    library=LibraryFile(faults={"offline_windows": [{"start_s": OUTAGE[0], "end_s": OUTAGE[1]}]}),
    cycle_interval_s=STEP_S,
    max_files_per_cycle=100,
    max_attempts=3,
    retry_backoff_s=100.0,
    feed=FeedSettings(**PACE),  # type: ignore[arg-type]
)


def run_live(factory: sessionmaker[Session], trace: Trace) -> dict[float, int]:
    built = replay_library(trace, CONFIG)
    clock = ManualClock(EPOCH)
    cycle = Cycle(
        settings(max_files_per_cycle=CONFIG.max_files_per_cycle, **PACE),
        factory,
        built.adapter(clock),
        build_policy(CONFIG.policy, CONFIG.policy_options),
        clock,
        costs=library_costs(built.physics),
    )
    handed: dict[float, int] = {}
    rows = trace.rows
    arrived = 0
    for tick in range(1_000):
        now_s = tick * STEP_S
        clock.set(EPOCH + timedelta(seconds=now_s))
        while arrived < len(rows) and rows[arrived].arrival_s <= now_s:
            row = rows[arrived]
            at = EPOCH + timedelta(seconds=row.arrival_s)
            file = queued(row.path, row.tape, row.position_bytes, at, size=row.size_bytes)
            add_request(factory, [file], at)
            arrived += 1
        handed[now_s] = cycle.run_once().files_submitted
        if arrived == len(rows) and len(live_reads(factory)) == len(rows):
            break
    while (t := built.library.next_event_time()) is not None:  # the last unmounts
        clock.set(max(clock.now(), EPOCH + timedelta(seconds=t + 1e-6)))
        cycle.run_once()
    return handed


def test_the_service_and_the_replay_release_an_outages_backlog_at_the_same_pace(session_factory):
    trace = outage_trace()
    replayed = replay(trace, CONFIG)
    live = run_live(session_factory, trace)

    by_replay = dict(replayed.handovers)
    assert {t: n for t, n in live.items() if n} == {t: n for t, n in by_replay.items() if n}
    after = [n for t, n in sorted(live.items()) if t >= OUTAGE[1] and n]
    print(f"\nhanded over per {STEP_S:g} s pass after the outage, service and replay: {after}")
    # the budget: recovery_start_files, then 100 x elapsed / 600 s, each pass after the library is back
    budgets = [max(10, int(100 * k * STEP_S / 600)) for k in range(len(after))]
    assert after[:-1] == budgets[:-1] and after[-1] <= budgets[-1]  # the last pass takes what is left
    assert live_reads(session_factory) == replay_reads(trace, replayed.store)
    assert live_mounts(session_factory) == replay_mounts(replayed.store)

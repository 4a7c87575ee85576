"""The replay feeds a library that comes back, or stalls, as the service's cycle does
(carousel.scheduler.feed): after an outage the backlog goes out at the recovery pace, not at once; a stalled
library gets only probes."""

from __future__ import annotations

from carousel.replay.driver import PassSeen, ReplayConfig, replay
from carousel.replay.library_setup import LibraryFile
from carousel.replay.trace import Trace, TraceRow, make_trace
from carousel.scheduler.feed import FeedSettings

GB = 10**9
OUTAGE = (100.0, 3700.0)
STEP_S = 20.0


def trace(files: int, *, every_s: float) -> Trace:
    """1 GB files on 8 LTO-8 cartridges, one request each, arriving `every_s` apart."""
    rows = [
        TraceRow(n * every_s, f"r{n}", f"/d/T{n % 8}/{n}", GB, f"T{n % 8}", (n // 8) * 20 * GB, "g", 0)
        for n in range(files)
    ]
    return make_trace(rows, "feed")


def config(faults: dict, **feed: float) -> ReplayConfig:
    return ReplayConfig(
        profile="lto8",
        drives=2,
        policy="fifo",
        policy_options={"max_files": 5000},
        library=LibraryFile(faults=faults),
        cycle_interval_s=STEP_S,
        max_files_per_cycle=300,
        feed=FeedSettings(recovery_start_files=10, **feed),  # type: ignore[arg-type]
    )


def test_after_an_outage_the_replay_releases_the_backlog_at_the_recovery_pace():
    work = trace(400, every_s=8.0)  # 400 files over 3,200 s: most arrive while the library is away
    offline = {"offline_windows": [{"start_s": OUTAGE[0], "end_s": OUTAGE[1]}]}
    paced = replay(work, config(offline, recovery_ramp_s=600.0))
    after = [files for t, files in paced.handovers if t >= OUTAGE[1]]
    print(f"\nreplay, files handed over per {STEP_S:g} s pass after the outage: {after[:10]}")
    assert sum(files for t, files in paced.handovers if OUTAGE[0] <= t < OUTAGE[1]) == 0
    assert after[0] == 10  # recovery_start_files, as the service's first cycle after an outage
    assert after[:5] == [10, 10, 20, 30, 40]  # budget 300 x elapsed / 600 s, as in the service's test
    assert paced.store.active == 0 and paced.library.files_staged == 400

    flood = replay(work, config(offline, recovery_ramp_s=0.0))
    before = sum(files for t, files in flood.handovers if t < OUTAGE[0])
    first = next(files for t, files in flood.handovers if t >= OUTAGE[1])
    assert first == min(300, 400 - before)  # without a ramp: all the cycle's budget in the first pass


def test_a_stalled_library_gets_only_probes_in_the_replay_and_every_tape_says_why():
    work = trace(200, every_s=20.0)  # files keep arriving through the stall
    stall = {"stall_windows": [{"start_s": 300.0, "end_s": 3900.0}]}
    seen: list[PassSeen] = []
    result = replay(work, config(stall, liveness_floor_s=300.0, liveness_probe_files=2), observer=seen.append)
    inside = [(t, files) for t, files in result.handovers if 1200.0 <= t < 3900.0]
    assert inside and all(files <= 2 for _, files in inside)  # probes, not the 135 files that arrived
    assert sum(files for _, files in inside) < 20
    assert result.store.active == 0 and result.library.files_staged == 200
    assert seen  # the observer still sees every pass

    unwatched = replay(work, config(stall, liveness_floor_s=100_000.0))
    assert sum(files for t, files in unwatched.handovers if 1200.0 <= t < 3900.0) > 100

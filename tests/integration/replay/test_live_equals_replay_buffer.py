"""The service and the replay plan alike with a disk buffer: the same small trace, a buffer of three files
whose pins last a lifetime after landing (the service's default lifetime; the replay's release_after_s), on
both databases. Work waits for space in both, and both make the same mounts and reads in the same order. The
service's library writes real bytes; the replay only accounts."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.layout import BufferLayout
from carousel.domain.buffer import BufferLimits
from carousel.domain.clock import ManualClock
from carousel.replay.driver import EPOCH, ReplayConfig, replay, replay_library
from carousel.replay.trace import Trace, TraceRow, make_trace
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.costs import library_costs
from policies.registry import build_policy
from tests.integration.replay.test_live_equals_replay import (
    INTERVAL_S,
    _all_final,
    config,
    live_mounts,
    live_reads,
    replay_mounts,
    replay_reads,
)
from tests.integration.scheduler.rows import add_request, queued
from tests.integration.scheduler.support import settings

GB = 10**9
SIZE = 64 * 1024
LIFETIME_S = 300
LIMITS = BufferLimits(3 * SIZE, high_watermark=1.0, low_watermark=0.7)


def small_files_trace() -> Trace:
    """20 files of 64 KiB on 4 LTO-8 cartridges, asked for one by one over five minutes, interleaved."""
    rows = []
    for n in range(20):
        tape = f"L{n % 4 + 1}"
        position = (n * 7919 % 11) * 900 * GB + (n % 4) * 3 * GB
        rows.append(
            TraceRow(n * 15.0, f"r{n:02d}", f"/data/{tape}/{n:02d}", SIZE, tape, position, "g", n % 3)
        )
    return make_trace(rows, "live-vs-replay-buffer")


def run_live(factory: sessionmaker[Session], trace: Trace, replay_config: ReplayConfig, root: Path) -> int:
    """The service stepped every tick; returns the most files it saw waiting for buffer space."""
    built = replay_library(trace, replay_config)
    clock = ManualClock(EPOCH)
    layout = BufferLayout.at(root)
    layout.prepare()
    buffer = {
        "enabled": True,
        "directory": str(root),
        "capacity_bytes": LIMITS.capacity_bytes,
        "high_watermark": LIMITS.high_watermark,
        "low_watermark": LIMITS.low_watermark,
        "default_lifetime_s": LIFETIME_S,
    }
    cycle = Cycle(
        settings(buffer=buffer),
        factory,
        built.adapter(clock),
        build_policy(replay_config.policy, replay_config.policy_options),
        clock,
        costs=library_costs(built.physics),
    )
    rows = trace.rows
    arrived = waited = 0
    for tick in range(2_000):
        now_s = tick * INTERVAL_S
        clock.set(EPOCH + timedelta(seconds=now_s))
        while arrived < len(rows) and rows[arrived].arrival_s <= now_s:
            row = rows[arrived]
            at = EPOCH + timedelta(seconds=row.arrival_s)
            file = queued(row.path, row.tape, row.position_bytes, at, size=row.size_bytes, grp=row.group)
            file.priority = row.priority
            add_request(factory, [file], at, grp=row.group)
            arrived += 1
        waited = max(waited, cycle.run_once().waiting_for_space)
        if arrived == len(rows) and _all_final(factory):
            break
    else:
        raise AssertionError("the service did not finish the trace")
    while (t := built.library.next_event_time()) is not None:  # the last unmounts
        clock.set(max(clock.now(), EPOCH + timedelta(microseconds=math.ceil(t * 1e6))))
        cycle.run_once()
    return waited


@pytest.mark.parametrize("policy", ["carousel", "fifo"])
def test_the_service_and_the_replay_plan_alike_with_a_buffer(session_factory, tmp_path, policy):
    trace = small_files_trace()
    buffered = replace(config(policy), buffer=LIMITS, release_after_s=float(LIFETIME_S))
    waits: list[int] = []
    replayed = replay(trace, buffered, observer=lambda seen: waits.append(seen.dispatch.waiting_for_space))
    live_waited = run_live(session_factory, trace, buffered, tmp_path / "buffer")

    reads = live_reads(session_factory)
    assert len(reads) == len(trace.rows)
    assert reads == replay_reads(trace, replayed.store)
    assert live_mounts(session_factory) == replay_mounts(replayed.store)
    assert live_waited > 0 and max(waits) > 0  # the buffer held work back in both
    unbuffered = replay(trace, config(policy))
    assert replay_reads(trace, unbuffered.store) != replay_reads(trace, replayed.store)  # and it mattered

"""The service and the replay plan alike: the database cycle stepped on a virtual clock, every tick, and the
replay over its memory store (skipping idle ticks) give the same mounts and the same reads in the same order,
on PostgreSQL and on SQLite, for every built-in policy."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import Mount, QueuedFileRow, Recall
from carousel.domain.clock import ManualClock
from carousel.replay.driver import EPOCH, ReplayConfig, replay, replay_library
from carousel.replay.library_setup import LibraryFile
from carousel.replay.memory_store import MemoryQueueStore
from carousel.replay.trace import Trace, TraceRow, make_trace
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.costs import library_costs
from policies.registry import build_policy
from tests.integration.scheduler.rows import add_request, queued
from tests.integration.scheduler.support import settings

GB = 10**9
INTERVAL_S = 10.0


def small_trace() -> Trace:
    """20 files of 1 GB on 4 LTO-8 cartridges, asked for one by one over five minutes, interleaved."""
    rows = []
    for n in range(20):
        tape = f"L{n % 4 + 1}"
        position = (n * 7919 % 11) * 900 * GB + (n % 4) * 3 * GB
        rows.append(TraceRow(n * 15.0, f"r{n:02d}", f"/data/{tape}/{n:02d}", GB, tape, position, "g", n % 3))
    return make_trace(rows, "live-vs-replay")


def config(policy: str) -> ReplayConfig:
    options = {"min_age_s": 60.0} if policy == "cta" else {}
    return ReplayConfig(
        profile="lto8",
        drives=2,
        policy=policy,
        policy_options=options,
        cycle_interval_s=INTERVAL_S,
        max_attempts=3,
        retry_backoff_s=100.0,
    )


def run_live(factory: sessionmaker[Session], trace: Trace, replay_config: ReplayConfig) -> None:
    built = replay_library(trace, replay_config)
    clock = ManualClock(EPOCH)
    cycle = Cycle(
        settings(),
        factory,
        built.adapter(clock),
        build_policy(replay_config.policy, replay_config.policy_options),
        clock,
        costs=library_costs(built.physics),
    )
    rows = trace.rows
    arrived = 0
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
        cycle.run_once()
        if arrived == len(rows) and _all_final(factory):
            break
    else:
        raise AssertionError("the service did not finish the trace")
    while (t := built.library.next_event_time()) is not None:  # the last unmounts
        clock.set(max(clock.now(), EPOCH + timedelta(microseconds=math.ceil(t * 1e6))))
        cycle.run_once()


def _all_final(factory: sessionmaker[Session]) -> bool:
    with factory() as session:
        states = set(session.scalars(select(QueuedFileRow.state)))
    return states <= {"STAGED", "FAILED", "CANCELLED"}


def live_reads(factory: sessionmaker[Session]) -> list[tuple]:
    with factory() as session:
        found = session.execute(
            select(QueuedFileRow.path, QueuedFileRow.started_at, QueuedFileRow.finished_at, Recall.drive)
            .join(Recall, Recall.file_id == QueuedFileRow.id)
            .where(Recall.outcome == "STAGED")
        ).all()
    return sorted((tuple(r) for r in found), key=lambda r: (r[1], r[0]))


def live_mounts(factory: sessionmaker[Session]) -> list[tuple]:
    with factory() as session:
        found = session.execute(
            select(Mount.tape, Mount.drive, Mount.mounted_at, Mount.unmounted_at, Mount.files, Mount.bytes)
        ).all()
    return sorted((tuple(r) for r in found), key=lambda r: (r[2], r[1]))


def replay_reads(trace: Trace, store: MemoryQueueStore) -> list[tuple]:
    found = [(row.path, o.start, o.end, o.drive) for row, o in zip(trace.rows, store.rows, strict=True)]
    return sorted(found, key=lambda r: (r[1], r[0]))


def replay_mounts(store: MemoryQueueStore) -> list[tuple]:
    found = [(m.tape, m.drive, m.mounted, m.unmounted, m.files, m.bytes) for m in store.mounts]
    return sorted(found, key=lambda r: (r[2], r[1]))


@pytest.mark.parametrize("policy", ["carousel", "star2006", "cta", "fifo"])
def test_the_service_and_the_replay_make_the_same_mounts_and_reads(session_factory, policy):
    trace = small_trace()
    replayed = replay(trace, config(policy))
    run_live(session_factory, trace, config(policy))

    reads = live_reads(session_factory)
    assert len(reads) == len(trace.rows)
    assert reads == replay_reads(trace, replayed.store)
    mounts = live_mounts(session_factory)
    assert mounts == replay_mounts(replayed.store)
    assert len({m[0] for m in mounts}) == 4
    assert replayed.cycles < replayed.ticks  # the replay skipped idle ticks, the service ran them all


HUNG = "/data/L1/00"  # its first read starts and never ends


def live_failures(factory: sessionmaker[Session]) -> list[tuple]:
    with factory() as session:
        found = session.execute(
            select(QueuedFileRow.path, Recall.started_at, Recall.finished_at)
            .join(Recall, Recall.file_id == QueuedFileRow.id)
            .where(Recall.outcome == "FAILED")
        ).all()
    return sorted(tuple(r) for r in found)


def test_a_read_that_hangs_is_timed_out_alike(session_factory):
    hung = replace(
        config("carousel"),
        library=LibraryFile(faults={"hung_reads": [{"path": HUNG, "reads": 1}]}),
    )
    trace = small_trace()
    replayed = replay(trace, hung)
    run_live(session_factory, trace, hung)

    [(path, started_at, failed_at)] = live_failures(session_factory)
    limit_s = 3 * library_costs(replay_library(trace, hung).physics).read_s(GB) + 600  # the default rule
    assert path == HUNG and limit_s < (failed_at - started_at).total_seconds() <= limit_s + 60 + INTERVAL_S
    reads = live_reads(session_factory)
    assert len(reads) == len(trace.rows), "the hung file is read again, on a later mount, and staged"
    assert reads == replay_reads(trace, replayed.store)
    assert live_mounts(session_factory) == replay_mounts(replayed.store)
    [again] = [read for read in reads if read[0] == HUNG]
    assert again[1] >= failed_at + timedelta(seconds=hung.retry_backoff_s)  # after the back-off

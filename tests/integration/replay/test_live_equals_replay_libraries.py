"""A site of two libraries (LTO-9 × 8 and LTO-7 × 4) with files of three groups over both, the same tape IDs
in each: the service's site cycle stepped on a virtual clock every tick and the replay plan alike, library by
library (the same mounts and the same reads), on PostgreSQL and on SQLite; with one library offline for an
hour, the other's work is exactly as if it had not been, and nothing fails."""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import Mount, QueuedFileRow, Recall
from carousel.domain.clock import ManualClock
from carousel.replay.driver import EPOCH, ReplayConfig, ReplayResult, replay, site_libraries
from carousel.replay.library_setup import LibraryFile
from carousel.replay.trace import Trace, TraceRow, make_trace
from carousel.replay.workloads import TWO_LIBRARIES
from carousel.scheduler.queue_store import DatabaseQueueStore
from carousel.scheduler.site_cycle import SiteCycle
from hsm_adapters.site import Site
from policies.registry import build_policy
from tests.integration.scheduler.rows import add_request, queued
from tests.integration.scheduler.support import settings

GB = 10**9
INTERVAL_S = 10.0
GROUPS = ("atlas", "cms", "lhcb")
FAIR = {"fair_share": {"weights": {"atlas": 3, "cms": 2, "lhcb": 1}}}
NEW, OLD = (spec.name for spec in TWO_LIBRARIES)  # lto9 (8 drives), lto7 (4 drives)
OUTAGE = LibraryFile(faults={"offline_windows": [{"start_s": 120.0, "end_s": 3720.0}]})


def site_trace() -> Trace:
    """36 files of 2 GB: in each library three tapes T1..T3 (the same IDs), two files of each group on each,
    asked for one by one over six minutes, interleaved between the libraries."""
    rows = []
    for n in range(36):
        library = (NEW, OLD)[n % 2]
        tape = f"T{n // 2 % 3 + 1}"
        group = GROUPS[n // 6 % 3]
        position = (n * 7919 % 13) * 400 * GB + (n % 5) * 3 * GB  # within an LTO-7 cartridge (6 TB)
        path = f"/{library}/{tape}/{n:02d}"
        rows.append(TraceRow(n * 10.0, f"r{n:02d}", path, 2 * GB, tape, position, group, library=library))
    return make_trace(rows, "two libraries live-vs-replay")


def config(policy_options: dict, *, old_changes: LibraryFile | None = None) -> ReplayConfig:
    new, old = TWO_LIBRARIES
    return ReplayConfig(
        profile=new.profile,
        drives=new.drives,
        policy="carousel",
        policy_options=policy_options,
        cycle_interval_s=INTERVAL_S,
        max_attempts=3,
        retry_backoff_s=100.0,
        libraries=(new, replace(old, changes=old_changes)),
    )


def run_live(factory: sessionmaker[Session], trace: Trace, replay_config: ReplayConfig) -> None:
    built = site_libraries(trace, replay_config)
    clock = ManualClock(EPOCH)
    adapters = {name: library.adapter(clock) for name, library in built.items()}
    # each library plans with a policy of its own, as in the replay
    own = {name: build_policy(replay_config.policy, replay_config.policy_options) for name in built}
    policies = {name: functools.partial(own.__getitem__, name) for name in built}
    cycle = SiteCycle(settings(), factory, adapters, policies, clock, lookup=Site(adapters))
    rows = trace.rows
    arrived = 0
    for tick in range(2_000):
        now_s = tick * INTERVAL_S
        clock.set(EPOCH + timedelta(seconds=now_s))
        while arrived < len(rows) and rows[arrived].arrival_s <= now_s:
            row = rows[arrived]
            at = EPOCH + timedelta(seconds=row.arrival_s)
            file = queued(row.path, row.tape, row.position_bytes, at, size=row.size_bytes, grp=row.group)
            file.library = row.library
            add_request(factory, [file], at, grp=row.group)
            arrived += 1
        report = cycle.run_once()
        assert report.leader and set(report.libraries) == {NEW, OLD}
        if arrived == len(rows) and _all_final(factory):
            break
    else:
        raise AssertionError("the service did not finish the trace")
    for library in built.values():  # the last unmounts
        while (t := library.library.next_event_time()) is not None:
            clock.set(max(clock.now(), EPOCH + timedelta(microseconds=math.ceil(t * 1e6))))
            cycle.run_once()
    # the libraries share each fold: each read the whole tape queues once, however many cycles ran
    stores = [c.store.inner for c in cycle.cycles.values()]
    assert [s.assembly.reloads for s in stores if isinstance(s, DatabaseQueueStore)] == [1, 1]


def _all_final(factory: sessionmaker[Session]) -> bool:
    with factory() as session:
        states = set(session.scalars(select(QueuedFileRow.state)))
    return states <= {"STAGED", "FAILED", "CANCELLED"}


def live_reads(factory: sessionmaker[Session], library: str) -> list[tuple]:
    with factory() as session:
        found = session.execute(
            select(QueuedFileRow.path, QueuedFileRow.started_at, QueuedFileRow.finished_at, Recall.drive)
            .join(Recall, Recall.file_id == QueuedFileRow.id)
            .where(Recall.outcome == "STAGED", Recall.library == library, QueuedFileRow.library == library)
        ).all()
    return sorted((tuple(r) for r in found), key=lambda r: (r[1], r[0]))


def live_mounts(factory: sessionmaker[Session], library: str) -> list[tuple]:
    with factory() as session:
        found = session.execute(
            select(
                Mount.tape, Mount.drive, Mount.mounted_at, Mount.unmounted_at, Mount.files, Mount.bytes
            ).where(Mount.library == library)
        ).all()
    return sorted((tuple(r) for r in found), key=lambda r: (r[2], r[1]))


def replay_reads(result: ReplayResult, library: str) -> list[tuple]:
    found = [
        (row.path, o.start, o.end, o.drive)
        for row, o in zip(result.trace.rows, result.store.rows, strict=True)
        if row.library == library
    ]
    return sorted(found, key=lambda r: (r[1], r[0]))


def replay_mounts(result: ReplayResult, library: str) -> list[tuple]:
    found = [
        (m.tape, m.drive, m.mounted, m.unmounted, m.files, m.bytes)
        for m in result.store.mounts
        if m.library == library
    ]
    return sorted(found, key=lambda r: (r[2], r[1]))


@pytest.mark.parametrize("options", [{}, FAIR], ids=["carousel", "fair-share"])
def test_the_site_cycle_and_the_replay_make_the_same_mounts_and_reads_per_library(session_factory, options):
    trace = site_trace()
    replayed = replay(trace, config(options))
    run_live(session_factory, trace, config(options))
    for library in (NEW, OLD):
        reads = live_reads(session_factory, library)
        assert len(reads) == 18
        assert reads == replay_reads(replayed, library)
        mounts = live_mounts(session_factory, library)
        assert mounts == replay_mounts(replayed, library)
        assert {m[0] for m in mounts} == {"T1", "T2", "T3"}


def test_one_library_offline_for_an_hour_pauses_its_own_work_only(session_factory):
    trace = site_trace()
    calm = replay(trace, config({}))
    down = config({}, old_changes=OUTAGE)
    replayed_down = replay(trace, down)
    run_live(session_factory, trace, down)
    with session_factory() as session:
        assert set(session.scalars(select(QueuedFileRow.state))) == {"STAGED"}  # nothing failed
    # the LTO-9 library's work is exactly what it is when the old one never goes down
    assert live_reads(session_factory, NEW) == replay_reads(calm, NEW)
    assert live_mounts(session_factory, NEW) == replay_mounts(calm, NEW)
    # the LTO-7 library's waited for the outage's end, as in the replay
    old = live_reads(session_factory, OLD)
    assert old == replay_reads(replayed_down, OLD)
    late = [r for r in old if r[1] >= EPOCH + timedelta(seconds=3720)]
    assert late and len(old) == 18

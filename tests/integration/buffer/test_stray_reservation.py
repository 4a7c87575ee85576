"""Files in flight in a library the settings no longer name reserve no room in the disk buffer, on both
databases: no cycle hears of them, so their bytes cannot arrive. The cycle admits the running library's
work into the whole room, the outlook and the dashboard show the same reserved bytes, and once the library
is named again its files count again."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import BufferSettings
from carousel.dashboard.render import render_dashboard
from carousel.dashboard.view import build_dashboard
from carousel.db.models import QueuedFileRow
from carousel.domain.clock import ManualClock
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.states import FILE_IN_FLIGHT, FileState
from carousel.replay.driver import EPOCH, ReplayConfig, replay_library
from carousel.replay.trace import TraceRow, make_trace
from carousel.scheduler.cycle import Cycle
from carousel.scheduler.live_snapshot import live_buffer
from hsm_adapters.base import HsmAdapter
from policies.registry import build_policy
from tests.integration.scheduler.rows import add_request, queued
from tests.integration.scheduler.support import settings

MB = 10**6
CAPACITY = 10 * MB
BUFFER = BufferSettings(enabled=True, capacity_bytes=CAPACITY, high_watermark=1.0, low_watermark=0.5)
OURS = 5  # files of the running library, 1 MB each, queued on one tape
STRAYS = 8  # files of `old` (taken out of the settings) handed to it before: 8 of the 10 MB


def adapter(clock: ManualClock) -> HsmAdapter:
    rows = [TraceRow(0.0, "r", f"/ours/{n}", MB, "T1", n * MB) for n in range(OURS)]
    return replay_library(
        make_trace(rows, "ours"), ReplayConfig(profile="lto8", drives=2, policy="fifo")
    ).adapter(clock)


def add_files(factory: sessionmaker[Session]) -> None:
    strays = [
        queued(f"/old/{n}", "T9", n * MB, EPOCH, size=MB, state=FileState.SUBMITTED) for n in range(STRAYS)
    ]
    for row in strays:
        row.library = "old"
    add_request(factory, strays, EPOCH)
    add_request(factory, [queued(f"/ours/{n}", "T1", n * MB, EPOCH, size=MB) for n in range(OURS)], EPOCH)


def ours_in_flight(factory: sessionmaker[Session]) -> int:
    with factory() as session:
        count = session.scalar(
            select(func.count()).where(
                QueuedFileRow.library == DEFAULT_LIBRARY,
                QueuedFileRow.state.in_([s.value for s in FILE_IN_FLIGHT]),
            )
        )
    return int(count or 0)


def dashboard_reserved(factory: sessionmaker[Session], library: HsmAdapter, now) -> int:
    with factory() as session:
        view = build_dashboard(session, library, now, None, site="t", buffer=BUFFER.limits())
    html = render_dashboard(view, refresh_s=60)
    return int(re.findall(r'data-buffer="reserved" data-bytes="(\d+)"', html)[0])


def test_files_of_a_library_not_in_the_settings_reserve_no_room(session_factory):
    add_files(session_factory)
    clock = ManualClock(EPOCH)
    library = adapter(clock)
    gauge = live_buffer(settings(buffer=BUFFER), session_factory, [DEFAULT_LIBRARY])
    assert gauge is not None
    assert gauge.usage(clock.now()).reserved_bytes == 0  # the outlook's and dry run's figure
    assert dashboard_reserved(session_factory, library, clock.now()) == 0

    cycle = Cycle(settings(buffer=BUFFER), session_factory, library, build_policy("fifo"), clock)
    report = cycle.run_once()
    cycle.close()
    # all five admitted: `old`'s 8 MB, which cannot arrive, did not leave room for 2
    assert ours_in_flight(session_factory) == OURS
    # the metrics' figure, at the snapshot: `old`'s 8 MB are not in it
    assert report.buffer_space is not None and report.buffer_space.reserved_bytes == 0
    clock.set(clock.now() + timedelta(seconds=1))
    assert gauge.usage(clock.now()).reserved_bytes == OURS * MB
    assert dashboard_reserved(session_factory, library, clock.now()) == OURS * MB

    # `old` named again: its files are handed over again, and their bytes reserved again
    both = live_buffer(settings(buffer=BUFFER), session_factory, [DEFAULT_LIBRARY, "old"])
    assert both is not None
    assert both.usage(clock.now()).reserved_bytes == (OURS + STRAYS) * MB

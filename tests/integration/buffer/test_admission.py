"""Space-aware admission in the service, on both databases: a disk buffer of 10 files and a request for 200,
whose client reads each file once it is staged and then releases it. The cycle never hands the library more
than the buffer takes, evicts least recently used unpinned files to make room (evict_on_release is off here,
so only admission evicts), and every file is staged, none failed. The library writes real bytes."""

from __future__ import annotations

import zlib
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.layout import BufferLayout
from carousel.db import intake_queries
from carousel.db.engine import transaction
from carousel.db.models import QueuedFileRow, RequestFile
from carousel.domain.clock import ManualClock
from carousel.domain.states import FILE_IN_FLIGHT, FileState, LinkState
from carousel.replay.driver import EPOCH, ReplayConfig, replay_library
from carousel.replay.trace import Trace, TraceRow, make_trace
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.costs import library_costs
from policies.registry import build_policy
from tests.integration.scheduler.rows import add_request, queued
from tests.integration.scheduler.support import settings

SIZE = 64 * 1024
FILES = 200
CAPACITY_FILES = 10
STEP_S = 60.0


def bulk_trace() -> Trace:
    rows = [
        TraceRow(0.0, "bulk", f"/bulk/{n:03d}", SIZE, f"L{n % 4}", (n // 4) * 2 * SIZE) for n in range(FILES)
    ]
    return make_trace(rows, "bulk")


def files_on_disk(layout: BufferLayout) -> list[Path]:
    return [p for p in layout.root.rglob("*") if p.is_file()]


def read_and_release(factory: sessionmaker[Session], layout: BufferLayout, clock: ManualClock) -> int:
    """The client: reads every staged file it holds, checks its bytes, releases it. Returns files read."""
    with transaction(factory) as session:
        held = session.execute(
            select(QueuedFileRow.path, QueuedFileRow.checksum, RequestFile.request_id)
            .join(RequestFile, RequestFile.file_id == QueuedFileRow.id)
            .where(
                RequestFile.state == LinkState.COMPLETED.value,
                RequestFile.released_at.is_(None),
                QueuedFileRow.disk_used_at.is_not(None),
            )
        ).all()
        for path, checksum, request_id in held:
            data = layout.final_path(path).read_bytes()
            assert len(data) == SIZE and f"{zlib.adler32(data):08x}" == checksum
            intake_queries.release_links(
                session, owner="alice", request_id=request_id, paths=[path], now=clock.now()
            )
    return len(held)


def bytes_in_buffer(factory: sessionmaker[Session]) -> tuple[int, int]:
    """(bytes the rows say are on disk, bytes in flight)."""
    with factory() as session:
        on_disk = session.scalar(
            select(func.coalesce(func.sum(QueuedFileRow.size_bytes), 0)).where(
                QueuedFileRow.disk_used_at.is_not(None)
            )
        )
        flying = session.scalar(
            select(func.coalesce(func.sum(QueuedFileRow.size_bytes), 0)).where(
                QueuedFileRow.state.in_([s.value for s in FILE_IN_FLIGHT])
            )
        )
    return int(on_disk or 0), int(flying or 0)


def states(factory: sessionmaker[Session]) -> dict[str, int]:
    with factory() as session:
        return dict(
            session.execute(select(QueuedFileRow.state, func.count()).group_by(QueuedFileRow.state)).all()  # type: ignore[arg-type]
        )


def test_a_ten_file_buffer_stages_a_200_file_request_as_its_client_reads_and_releases(
    session_factory, tmp_path
):
    trace = bulk_trace()
    built = replay_library(trace, ReplayConfig(profile="lto8", drives=2, policy="fifo"))
    clock = ManualClock(EPOCH)
    layout = BufferLayout.at(tmp_path / "buffer")
    layout.prepare()
    buffer = {
        "enabled": True,
        "directory": str(layout.root),
        "capacity_bytes": CAPACITY_FILES * SIZE,
        "high_watermark": 1.0,
        "low_watermark": 0.8,
        "evict_on_release": False,  # only admission makes room
    }
    cycle = Cycle(
        settings(buffer=buffer),
        session_factory,
        built.adapter(clock),
        build_policy("fifo"),
        clock,
        costs=library_costs(built.physics),
    )
    rows = [queued(r.path, r.tape, r.position_bytes, EPOCH, size=r.size_bytes) for r in trace.rows]
    add_request(session_factory, rows, EPOCH)

    peak_files = peak_used = read = evicted = waited = 0
    for _ in range(500):
        report = cycle.run_once()
        evicted += report.evicted_files
        waited = max(waited, report.waiting_for_space)
        on_disk, flying = bytes_in_buffer(session_factory)
        peak_used = max(peak_used, on_disk + flying)
        peak_files = max(peak_files, len(files_on_disk(layout)))
        assert on_disk + flying <= CAPACITY_FILES * SIZE  # never more than the buffer takes
        read += read_and_release(session_factory, layout, clock)
        if states(session_factory) == {FileState.STAGED.value: FILES}:
            break
        clock.set(clock.now() + timedelta(seconds=STEP_S))
    else:
        raise AssertionError(f"not all staged: {states(session_factory)}")

    assert read == FILES  # every file's bytes were read, whole and matching the library's checksum
    assert CAPACITY_FILES >= peak_files > 1
    assert peak_used > CAPACITY_FILES * SIZE // 2  # the buffer was used, not trickled one file at a time
    assert evicted >= FILES - CAPACITY_FILES  # admission evicted what clients released
    assert waited > 0  # work waited for space (buffer_full) rather than failing

"""A file larger than the disk buffer can ever hold fails at intake with the reason, on both databases;
the request's other files are recalled as usual. With the buffer off, the same file is queued."""

from __future__ import annotations

from sqlalchemy import select

from carousel.config import BufferSettings
from carousel.db.engine import transaction
from carousel.db.models import QueuedFileRow, RequestFile
from carousel.domain.callers import ANONYMOUS
from carousel.domain.clock import ManualClock
from carousel.intake.model import Api, StageOrder
from carousel.intake.submit import submit
from carousel.replay.driver import EPOCH, ReplayConfig, replay_library
from carousel.replay.trace import TraceRow, make_trace

MB = 10**6
SMALL, BIG = "/data/small.root", "/data/big.root"
BUFFER = BufferSettings(enabled=True, capacity_bytes=10 * MB, high_watermark=0.9, low_watermark=0.5)


def adapter():
    trace = make_trace(
        [TraceRow(0, "r", SMALL, MB, "T1", 0), TraceRow(0, "r", BIG, 9 * MB + 1, "T1", 10 * MB)]
    )
    return replay_library(trace, ReplayConfig(profile="lto8", drives=1, policy="fifo")).adapter(
        ManualClock(EPOCH)
    )


def stage(factory, buffer: BufferSettings) -> dict[str, tuple[str, str, str | None]]:
    order = StageOrder(paths=(SMALL, BIG), api=Api.NATIVE, list_field="paths", path_field="paths[{}]")
    with transaction(factory) as session:
        submit(
            session,
            adapter(),
            ManualClock(EPOCH),
            ANONYMOUS,
            order,
            max_files=10,
            max_path_bytes=4096,
            buffer=buffer,
        )
    with factory() as session:
        rows = session.execute(
            select(QueuedFileRow.path, QueuedFileRow.state, RequestFile.state, RequestFile.error).join(
                RequestFile, RequestFile.file_id == QueuedFileRow.id
            )
        ).all()
    return {path: (state, link, error) for path, state, link, error in rows}


def test_a_file_larger_than_the_buffer_fails_at_intake_with_the_reason(session_factory):
    files = stage(session_factory, BUFFER)
    assert files[SMALL] == ("QUEUED", "PENDING", None)
    state, link, error = files[BIG]
    assert (state, link) == ("FAILED", "FAILED")
    assert (
        error is not None
        and "larger than the disk buffer can ever hold" in error
        and "9000000 bytes" in error
    )


def test_with_the_buffer_off_it_is_queued(session_factory):
    files = stage(session_factory, BufferSettings(enabled=False))
    assert files[BIG][:2] == ("QUEUED", "PENDING")

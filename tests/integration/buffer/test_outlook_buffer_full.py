"""The outlook (what users and the dry run see) reads the disk buffer from the database as the cycle does: a
buffer full of pinned files holds the queue back with the code buffer_full, on both databases."""

from __future__ import annotations

from sqlalchemy import update

from carousel.config import BufferSettings
from carousel.db.engine import transaction
from carousel.db.models import QueuedFileRow, RequestFile
from carousel.domain.buffer import epoch_s
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from carousel.outlook.live import live_projection
from carousel.outlook.reasons import WaitCode, classify
from carousel.replay.driver import EPOCH, ReplayConfig, replay_library
from carousel.replay.trace import TraceRow, make_trace
from policies.registry import build_policy
from tests.integration.scheduler.rows import add_request, queued
from tests.integration.scheduler.support import settings

MB = 10**6
BUFFER = BufferSettings(enabled=True, capacity_bytes=100 * MB, high_watermark=1.0, low_watermark=0.5)


def projected(factory, buffer: BufferSettings):
    trace = make_trace([TraceRow(0, "r", "/q/1", 20 * MB, "T2", 0)], "outlook")
    clock = ManualClock(EPOCH)
    adapter = replay_library(trace, ReplayConfig(profile="lto8", drives=2, policy="fifo")).adapter(clock)
    return live_projection(settings(buffer=buffer), factory, adapter, clock, build_policy("fifo"))


def fill_the_buffer(factory) -> None:
    held = queued("/held", "T1", 0, EPOCH, size=90 * MB, state=FileState.STAGED)
    add_request(factory, [held], EPOCH)
    add_request(factory, [queued("/q/1", "T2", 0, EPOCH, size=20 * MB)], EPOCH)
    with transaction(factory) as session:
        session.execute(update(QueuedFileRow).where(QueuedFileRow.id == held.id).values(disk_used_at=EPOCH))
        session.execute(
            update(RequestFile)
            .where(RequestFile.file_id == held.id)
            .values(state="COMPLETED", pin_until_s=epoch_s(EPOCH) + 3600)
        )


def test_a_full_buffer_shows_in_the_outlook_as_buffer_full(session_factory):
    fill_the_buffer(session_factory)
    projection = projected(session_factory, BUFFER)
    assert projection.plan.selections == ()
    assert classify(projection.plan.waiting["T2"]) is WaitCode.BUFFER_FULL


def test_with_the_buffer_off_the_same_queue_is_taken(session_factory):
    fill_the_buffer(session_factory)
    projection = projected(session_factory, BufferSettings(enabled=False))
    assert [s.tape for s in projection.plan.selections] in (["T2"], [None])
    assert "T2" not in projection.plan.waiting

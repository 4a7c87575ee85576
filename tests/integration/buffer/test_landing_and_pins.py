"""The data path's rows and bytes, on both databases: staged bytes land verified (or the read is retried),
completion marks them on disk and pins them for each request's lifetime, and the scheduler's upkeep evicts
what no pin holds (released, deleted, expired) and notices bytes deleted behind carousel's back. The test
plays the library: it writes a file's bytes at its destination and sends the events a library would."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.layout import BufferLayout
from carousel.completion.apply import apply_events
from carousel.completion.landing import land_staged
from carousel.db import queue_queries as q
from carousel.db.engine import transaction
from carousel.db.models import QueuedFileRow, RequestFile, StageRequest
from carousel.domain.buffer import Pinning, epoch_s
from carousel.domain.clock import ManualClock
from carousel.domain.completion import RetryRule
from carousel.domain.planning import Selection
from carousel.domain.states import FileState, LinkState, RequestState
from carousel.scheduler.buffer_upkeep import BufferUpkeep, UpkeepReport
from hsm_adapters.base import Event, EventKind
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued

RETRY = RetryRule(max_attempts=3, backoff_s=600)
DEFAULT_LIFETIME_S = 3600


class Library:
    """What a library does for the data path: writes bytes at a destination, reports what it read."""

    def __init__(self, layout: BufferLayout, clock: ManualClock) -> None:
        self.layout = layout
        self.clock = clock
        self._seq = itertools.count(1)
        self.evicted: list[str] = []

    def write(self, file_id: int, data: bytes) -> None:
        self.layout.incoming_path(str(file_id)).write_bytes(data)

    def staged(self, file_id: int, path: str, data: bytes, *, checksum: str | None = "auto") -> Event:
        told = f"{zlib.adler32(data):08x}" if checksum == "auto" else checksum
        return Event(
            EventKind.FILE_STAGED,
            self.clock.now(),
            next(self._seq),
            tape="T1",
            file_key=str(file_id),
            path=path,
            batch_key="b1",
            bytes=len(data),
            checksum=told,
        )

    # the one adapter call the upkeep makes
    def evict(self, paths: Sequence[str]) -> None:
        self.evicted.extend(paths)


@pytest.fixture
def layout(tmp_path: Path) -> BufferLayout:
    layout = BufferLayout.at(tmp_path / "buffer")
    layout.prepare()
    return layout


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def handed_over(
    factory: sessionmaker[Session], files: dict[str, bytes], **lifetime: int
) -> tuple[str, dict[str, int]]:
    """Files of one request, claimed and submitted under batch b1, as a cycle leaves them."""
    rows = [queued(path, "T1", n * 100, T0, size=len(data)) for n, (path, data) in enumerate(files.items())]
    request_id = add_request(factory, rows, T0)
    with transaction(factory) as session:
        if lifetime:
            session.execute(
                update(RequestFile).where(RequestFile.request_id == request_id).values(**lifetime)
            )
        claimed = q.claim(session, Selection(tape="T1", max_files=len(files)), "claim", T0)
        q.record_handed_over(session, [q.HandedOver("b1", "T1", tuple(f.id for f in claimed))], T0)
    return request_id, {f.path: f.id for f in claimed}


def deliver(
    factory: sessionmaker[Session], layout: BufferLayout, clock: ManualClock, events: list[Event]
) -> list[Event]:
    """What the cycle does with the library's events: land the bytes, then apply."""
    landed, _ = land_staged(layout, factory, events)
    with transaction(factory) as session:
        apply_events(session, "lib", landed, RETRY, Pinning(clock.now(), DEFAULT_LIFETIME_S))
    return landed


def file_row(factory: sessionmaker[Session], path: str) -> QueuedFileRow:
    with factory() as session:
        row = session.scalars(select(QueuedFileRow).where(QueuedFileRow.path == path)).one()
        session.expunge(row)
        return row


def links(factory: sessionmaker[Session], request_id: str) -> list[RequestFile]:
    with factory() as session:
        found = list(session.scalars(select(RequestFile).where(RequestFile.request_id == request_id)))
        for row in found:
            session.expunge(row)
        return found


def upkeep(
    factory: sessionmaker[Session], layout: BufferLayout, library: Library, clock: ManualClock
) -> UpkeepReport:
    report = UpkeepReport()
    BufferUpkeep(layout, factory, {"default": library}, clock, evict_on_release=True).run(report)  # type: ignore[arg-type]
    return report


DATA = b"event data " * 1000


def test_good_bytes_land_and_the_file_is_on_disk_pinned_for_the_lifetime(session_factory, layout, clock):
    request_id, ids = handed_over(session_factory, {"/data/run1/f.root": DATA}, lifetime_s=120)
    library = Library(layout, clock)
    library.write(ids["/data/run1/f.root"], DATA)
    clock.advance(10)
    deliver(
        session_factory, layout, clock, [library.staged(ids["/data/run1/f.root"], "/data/run1/f.root", DATA)]
    )

    row = file_row(session_factory, "/data/run1/f.root")
    assert row.state == FileState.STAGED.value and row.on_disk
    assert row.checksum == f"{zlib.adler32(DATA):08x}"
    assert row.disk_used_at == clock.now()
    (link,) = links(session_factory, request_id)
    assert link.state == LinkState.COMPLETED.value
    assert link.pin_until_s == epoch_s(clock.now()) + 120
    assert (layout.root / "data" / "run1" / "f.root").read_bytes() == DATA
    assert list(layout.incoming.iterdir()) == []


@pytest.mark.parametrize(
    ("write", "told", "reason"),
    [
        (True, "00000001", "checksum mismatch"),
        (False, "auto", "no bytes at the destination"),
    ],
)
def test_bad_or_missing_bytes_fail_the_attempt_and_it_is_retried(
    session_factory, layout, clock, write, told, reason
):
    _, ids = handed_over(session_factory, {"/data/f": DATA})
    library = Library(layout, clock)
    if write:
        library.write(ids["/data/f"], DATA)
    landed = deliver(
        session_factory, layout, clock, [library.staged(ids["/data/f"], "/data/f", DATA, checksum=told)]
    )

    assert landed[0].kind is EventKind.FILE_FAILED and landed[0].retryable
    row = file_row(session_factory, "/data/f")
    assert row.state == FileState.QUEUED.value  # back in the queue, for a later mount
    assert row.attempts == 1 and reason in (row.error or "")
    assert row.disk_used_at is None and not row.on_disk
    assert not (layout.root / "data" / "f").exists()
    assert list(layout.incoming.iterdir()) == []


def test_an_os_error_while_landing_is_a_retryable_failure(session_factory, layout, clock):
    _, ids = handed_over(session_factory, {"/blocked/f": DATA})
    (layout.root / "blocked").write_bytes(b"")  # where the file's directory should be: mkdir fails
    library = Library(layout, clock)
    library.write(ids["/blocked/f"], DATA)
    deliver(session_factory, layout, clock, [library.staged(ids["/blocked/f"], "/blocked/f", DATA)])
    row = file_row(session_factory, "/blocked/f")
    assert row.state == FileState.QUEUED.value and "landing in the buffer failed" in (row.error or "")
    assert row.disk_used_at is None
    assert list(layout.incoming.iterdir()) == []


def test_a_lookups_checksum_is_what_the_bytes_must_match(session_factory, layout, clock):
    _, ids = handed_over(session_factory, {"/data/f": DATA})
    with transaction(session_factory) as session:
        session.execute(update(QueuedFileRow).values(checksum="0badf00d"))
    library = Library(layout, clock)
    library.write(ids["/data/f"], DATA)
    deliver(session_factory, layout, clock, [library.staged(ids["/data/f"], "/data/f", DATA)])
    assert "expected 0badf00d" in (file_row(session_factory, "/data/f").error or "")


def test_a_pin_holds_until_its_lifetime_ends_in_virtual_time(session_factory, layout, clock):
    _, ids = handed_over(session_factory, {"/data/f": DATA}, lifetime_s=60)
    library = Library(layout, clock)
    library.write(ids["/data/f"], DATA)
    deliver(session_factory, layout, clock, [library.staged(ids["/data/f"], "/data/f", DATA)])

    clock.advance(59)
    assert upkeep(session_factory, layout, library, clock).evicted == 0
    assert file_row(session_factory, "/data/f").disk_used_at is not None
    clock.advance(1)  # the pin lasts to now + 60: over at that second
    report = upkeep(session_factory, layout, library, clock)
    assert report.evicted == 1 and report.evicted_bytes == len(DATA)
    row = file_row(session_factory, "/data/f")
    assert row.disk_used_at is None and not row.on_disk and row.state == FileState.STAGED.value
    assert not (layout.root / "data").exists()
    assert library.evicted == ["/data/f"]


def test_release_evicts_a_file_no_other_pin_holds_and_never_a_pinned_one(session_factory, layout, clock):
    first, ids = handed_over(session_factory, {"/data/f": DATA})
    second = add_request(session_factory, [ids["/data/f"]], T0)  # a second request waits for the same file
    library = Library(layout, clock)
    library.write(ids["/data/f"], DATA)
    deliver(session_factory, layout, clock, [library.staged(ids["/data/f"], "/data/f", DATA)])

    with transaction(session_factory) as session:
        session.execute(
            update(RequestFile).where(RequestFile.request_id == first).values(released_at=clock.now())
        )
    assert upkeep(session_factory, layout, library, clock).evicted == 0  # the second request's pin holds it
    assert (layout.root / "data" / "f").exists()

    with transaction(session_factory) as session:  # the second request is deleted
        session.execute(
            update(StageRequest).where(StageRequest.id == second).values(state=RequestState.DELETED.value)
        )
    assert upkeep(session_factory, layout, library, clock).evicted == 1
    assert not (layout.root / "data" / "f").exists()


def test_bytes_deleted_behind_carousels_back_are_found_and_marked(session_factory, layout, clock):
    _, ids = handed_over(session_factory, {"/data/a": DATA, "/data/b": DATA})
    library = Library(layout, clock)
    for path in ("/data/a", "/data/b"):
        library.write(ids[path], DATA)
    deliver(session_factory, layout, clock, [library.staged(ids[p], p, DATA) for p in ("/data/a", "/data/b")])
    (layout.root / "data" / "a").unlink()

    report = upkeep(session_factory, layout, library, clock)
    assert report.missing == 1 and report.evicted == 0
    assert file_row(session_factory, "/data/a").disk_used_at is None
    assert not file_row(session_factory, "/data/a").on_disk
    assert file_row(session_factory, "/data/b").disk_used_at is not None


def test_an_event_delivered_again_after_a_lost_commit_lands_again(session_factory, layout, clock):
    _, ids = handed_over(session_factory, {"/data/f": DATA})
    library = Library(layout, clock)
    library.write(ids["/data/f"], DATA)
    event = library.staged(ids["/data/f"], "/data/f", DATA)
    land_staged(layout, session_factory, [event])  # landed; the transaction that follows never commits
    again, report = land_staged(layout, session_factory, [event])
    assert again[0].kind is EventKind.FILE_STAGED and report.landed == 1


def test_late_news_of_a_read_already_ended_leaves_no_bytes(session_factory, layout, clock):
    _, ids = handed_over(session_factory, {"/data/f": DATA})
    with transaction(session_factory) as session:
        session.execute(update(QueuedFileRow).values(state=FileState.QUEUED.value, batch_key=None))
    library = Library(layout, clock)
    library.write(ids["/data/f"], DATA)
    deliver(session_factory, layout, clock, [library.staged(ids["/data/f"], "/data/f", DATA)])
    assert list(layout.incoming.iterdir()) == [] and not (layout.root / "data").exists()


def test_files_marked_on_disk_without_bytes_in_the_buffer_are_put_right(session_factory, layout, clock):
    # staged while the buffer was off: on disk by the old rule, no bytes in the buffer
    add_request(session_factory, [queued("/old/f", "T1", 0, T0, state=FileState.STAGED)], T0)
    with transaction(session_factory) as session:
        session.execute(update(QueuedFileRow).values(on_disk=True))
    library = {"default": Library(layout, clock)}
    upkeep_of = BufferUpkeep(layout, session_factory, library, clock, evict_on_release=True)  # type: ignore[arg-type]
    assert upkeep_of.reconcile() == 1
    assert not file_row(session_factory, "/old/f").on_disk
    assert upkeep_of.reconcile() == 0

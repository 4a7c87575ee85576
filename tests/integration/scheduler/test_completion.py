"""Completion: events written as the HSM would send them, applied on both databases."""

from __future__ import annotations

import itertools
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.completion.apply import CompletionReport, apply_events
from carousel.db import queue_queries as q
from carousel.db.engine import transaction
from carousel.db.models import Mount, QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.domain.completion import RetryRule
from carousel.domain.planning import Selection
from carousel.domain.states import LinkState
from hsm_adapters.base import Event, EventKind
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued

RETRY = RetryRule(max_attempts=3, backoff_s=600)


class Hsm:
    """Writes events with increasing sequence numbers, as one adapter instance does."""

    def __init__(self) -> None:
        self._seq = itertools.count(1)

    def event(self, kind: EventKind, at_s: float, **fields: object) -> Event:
        return Event(kind=kind, at=T0 + timedelta(seconds=at_s), seq=next(self._seq), **fields)  # type: ignore[arg-type]


def handed_over(factory: sessionmaker[Session], batch_key: str, paths: list[str]) -> dict[str, int]:
    """Files claimed and submitted under batch_key, as a cycle leaves them."""
    request_id = add_request(
        factory, [queued(p, "T1", n * 100, T0, size=100) for n, p in enumerate(paths)], T0
    )
    with transaction(factory) as session:
        claimed = q.claim(session, Selection(tape="T1", max_files=len(paths)), "claim", T0)
        q.record_handed_over(session, [q.HandedOver(batch_key, "T1", tuple(f.id for f in claimed))], T0)
    assert request_id
    return {f.path: f.id for f in claimed}


def apply(factory: sessionmaker[Session], events: list[Event]) -> CompletionReport:
    with transaction(factory) as session:
        return apply_events(session, "simulated", events, RETRY)


def rows(factory: sessionmaker[Session]) -> dict[str, QueuedFileRow]:
    with factory() as session:
        return {r.path: r for r in session.scalars(select(QueuedFileRow))}


def test_events_applied_twice_change_nothing_the_second_time(session_factory):
    ids = handed_over(session_factory, "b1", ["/f1", "/f2"])
    hsm = Hsm()
    events = [
        hsm.event(EventKind.MOUNTED, 10, tape="T1", drive="d0"),
        hsm.event(
            EventKind.FILE_STARTED, 11, tape="T1", drive="d0", file_key=str(ids["/f1"]), batch_key="b1"
        ),
        hsm.event(
            EventKind.FILE_STAGED,
            12,
            tape="T1",
            drive="d0",
            file_key=str(ids["/f1"]),
            batch_key="b1",
            bytes=100,
        ),
        hsm.event(EventKind.UNMOUNTED, 20, tape="T1", drive="d0"),
    ]
    first = apply(session_factory, events)
    again = apply(session_factory, events)
    assert (first.applied, first.staged, first.duplicates) == (4, 1, 0)
    assert (again.applied, again.staged, again.duplicates) == (0, 0, 4)
    with session_factory() as session:
        mount = session.scalars(select(Mount)).one()
        assert (mount.files, mount.bytes, mount.drive) == (1, 100, "d0")
        assert mount.unmounted_at == T0 + timedelta(seconds=20)
        recall = session.scalars(select(Recall).where(Recall.file_id == ids["/f1"])).one()
        assert (recall.outcome, recall.bytes, recall.drive) == ("STAGED", 100, "d0")
        assert recall.started_at == T0 + timedelta(seconds=11)
        request = session.scalars(select(StageRequest)).one()
        assert request.started_at == T0 + timedelta(seconds=11)  # its first file began
        assert request.state == "ACTIVE"  # /f2 still pending
    state = rows(session_factory)
    assert (state["/f1"].state, state["/f1"].on_disk, state["/f2"].state) == ("STAGED", True, "SUBMITTED")


def test_request_is_done_when_its_last_file_ends(session_factory):
    ids = handed_over(session_factory, "b1", ["/f1", "/f2"])
    hsm = Hsm()
    apply(
        session_factory,
        [
            hsm.event(
                EventKind.FILE_STAGED, 5, tape="T1", file_key=str(ids["/f1"]), batch_key="b1", bytes=100
            ),
            hsm.event(
                EventKind.FILE_FAILED,
                6,
                tape="T1",
                file_key=str(ids["/f2"]),
                batch_key="b1",
                reason="not on this tape",
                retryable=False,
            ),
        ],
    )
    with session_factory() as session:
        request = session.scalars(select(StageRequest)).one()
        links = {link.path: link for link in session.scalars(select(RequestFile))}
    assert (request.state, request.completed_at) == ("DONE", T0 + timedelta(seconds=6))
    assert (links["/f1"].state, links["/f1"].error) == ("COMPLETED", None)
    assert (links["/f2"].state, links["/f2"].error) == ("FAILED", "not on this tape")
    assert rows(session_factory)["/f2"].attempts == 1


def test_retryable_failure_waits_for_a_later_mount(session_factory):
    ids = handed_over(session_factory, "b1", ["/f1"])
    report = apply(
        session_factory,
        [
            Hsm().event(
                EventKind.FILE_FAILED, 30, file_key=str(ids["/f1"]), batch_key="b1", reason="read error"
            )
        ],
    )
    assert report.retried == 1
    row = rows(session_factory)["/f1"]
    assert (row.state, row.attempts, row.batch_key) == ("QUEUED", 1, None)
    assert row.not_before == T0 + timedelta(seconds=30 + 600)
    with session_factory() as session:
        assert session.scalars(select(RequestFile.state)).one() == LinkState.PENDING.value


def test_events_of_a_batch_the_file_has_left_are_ignored(session_factory):
    ids = handed_over(session_factory, "new-batch", ["/f1"])
    hsm = Hsm()
    report = apply(
        session_factory,
        [
            hsm.event(EventKind.FILE_FAILED, 5, file_key=str(ids["/f1"]), batch_key="old-batch", reason="x"),
            hsm.event(EventKind.FILE_CANCELLED, 6, file_key=str(ids["/f1"]), batch_key="old-batch"),
            hsm.event(EventKind.FILE_STAGED, 7, file_key="not-ours", batch_key="old-batch"),
        ],
    )
    assert len(report.stale) == 3
    row = rows(session_factory)["/f1"]
    assert (row.state, row.attempts, row.batch_key) == ("SUBMITTED", 0, "new-batch")


def test_a_read_that_reached_disk_counts_whichever_batch_did_it(session_factory):
    ids = handed_over(session_factory, "new-batch", ["/f1"])
    apply(
        session_factory,
        [Hsm().event(EventKind.FILE_STAGED, 5, file_key=str(ids["/f1"]), batch_key="old-batch", bytes=100)],
    )
    assert rows(session_factory)["/f1"].state == "STAGED"


def test_hsm_cancel_of_a_wanted_file_queues_it_again(session_factory):
    ids = handed_over(session_factory, "b1", ["/wanted", "/unwanted"])
    with transaction(session_factory) as session:
        session.execute(
            RequestFile.__table__.update()
            .where(RequestFile.file_id == ids["/unwanted"])
            .values(state=LinkState.CANCELLED.value)
        )
    hsm = Hsm()
    report = apply(
        session_factory,
        [
            hsm.event(
                EventKind.FILE_CANCELLED, 5, file_key=str(ids["/wanted"]), batch_key="b1", reason="drained"
            ),
            hsm.event(EventKind.FILE_CANCELLED, 6, file_key=str(ids["/unwanted"]), batch_key="b1"),
        ],
    )
    assert (report.requeued, report.cancelled) == (1, 1)
    state = rows(session_factory)
    assert (state["/wanted"].state, state["/wanted"].attempts) == ("QUEUED", 0)
    assert state["/unwanted"].state == "CANCELLED"

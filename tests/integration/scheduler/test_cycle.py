"""The cycle end to end on both databases, against the simulated library stepped in virtual time."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from carousel.db import queue_queries as q
from carousel.db.engine import transaction
from carousel.db.models import AppliedEvent, Mount, QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.domain.clock import ManualClock
from carousel.domain.errors import Unavailable
from carousel.domain.planning import Selection
from carousel.domain.states import FileState, LinkState
from hsm_adapters.base import Batch, Health
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.scheduler.rows import add_request, queued
from tests.integration.scheduler.support import (
    all_in,
    catalogue_files,
    count,
    file_states,
    make_cycle,
    request_state,
    run_until,
)


def test_files_go_from_queue_to_disk(session_factory, make_adapter, clock: ManualClock):
    adapter = make_adapter()
    request_id = add_request(session_factory, catalogue_files(adapter, 8, clock.now(), tapes=2), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)

    reports = run_until(cycle, clock, lambda: request_state(session_factory, request_id) == "DONE")

    assert all(r.leader for r in reports)
    assert set(file_states(session_factory).values()) == {"STAGED"}
    with session_factory() as session:
        links = session.execute(select(RequestFile.state, RequestFile.finished_at)).all()
        assert {state for state, _ in links} == {LinkState.COMPLETED.value}
        assert all(finished is not None for _, finished in links)
        request = session.get(StageRequest, request_id)
        assert request is not None
        assert request.started_at is not None and request.completed_at is not None
        assert request.started_at < request.completed_at <= clock.now()
        recalls = session.execute(select(Recall.outcome, Recall.bytes, Recall.started_at)).all()
        assert len(recalls) == 8  # fifo: one batch per file, each read once
        assert {outcome for outcome, _, _ in recalls} == {"STAGED"}
        assert all(size > 0 and started is not None for _, size, started in recalls)
        mounts = session.execute(select(Mount.tape, Mount.files, Mount.bytes, Mount.unmounted_at)).all()
        assert sum(files for _, files, _, _ in mounts) == 8
        assert sum(b for _, _, b, _ in mounts) == sum(b for _, b, _ in recalls)
        assert {tape for tape, _, _, _ in mounts} == set(adapter.library.catalogue.tapes[:2])
        on_disk = session.scalars(select(QueuedFileRow.on_disk)).all()
        assert all(on_disk)
    assert count(session_factory, AppliedEvent) == adapter._seq
    assert sum(r.files_submitted for r in reports) == 8


def test_fifo_feeds_no_more_than_the_library_queue_holds(session_factory, make_adapter, clock):
    adapter = make_adapter(queue_depth={"default": 3})
    add_request(session_factory, catalogue_files(adapter, 10, clock.now()), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)

    first = cycle.run_once()
    assert first.files_submitted == 3
    assert cycle.run_once().files_submitted == 0  # nothing finished: no room
    reports = run_until(cycle, clock, all_in(session_factory, FileState.STAGED))
    assert sum(r.files_submitted for r in [first, *reports]) == 10
    assert max(r.files_submitted for r in reports) <= 3


def test_outage_stops_submission_and_recovery_resumes_it(session_factory, make_adapter, clock):
    adapter = make_adapter(faults={"offline_windows": [{"start_s": 0, "end_s": 600}]})
    add_request(session_factory, catalogue_files(adapter, 4, clock.now()), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)

    during = [cycle.run_once() for _ in range(5) if clock.advance(100)]
    assert {r.health for r in during} == {Health.OFFLINE}
    assert sum(r.claimed + r.files_submitted for r in during) == 0
    assert set(file_states(session_factory).values()) == {"QUEUED"}
    assert during[-1].plan is not None and during[-1].plan.waiting  # the reason is kept for users

    clock.advance(200)  # the window has closed
    after = cycle.run_once()
    assert after.health is Health.ONLINE
    assert after.files_submitted == 4
    run_until(cycle, clock, all_in(session_factory, FileState.STAGED))


class RefusesFirstBatches:
    """The simulated library behind a front that refuses the first few submissions (a transient error)."""

    def __init__(self, inner: SimulatedAdapter, refusals: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.refusals = refusals

    def submit(self, batch: Batch) -> None:
        if self.refusals > 0:
            self.refusals -= 1
            raise Unavailable(f"the library front end refused batch {batch.key}")
        self.inner.submit(batch)

    def __getattr__(self, attribute: str) -> object:
        return getattr(self.inner, attribute)


def test_refused_batches_go_back_to_the_queue(session_factory, make_adapter, clock):
    adapter = RefusesFirstBatches(make_adapter(), refusals=2)
    add_request(session_factory, catalogue_files(adapter.inner, 3, clock.now()), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)  # type: ignore[arg-type]

    first = cycle.run_once()
    assert (first.claimed, first.files_submitted, first.returned_to_queue) == (3, 1, 2)
    assert sorted(file_states(session_factory).values()) == ["QUEUED", "QUEUED", "SUBMITTED"]
    assert len(first.errors) == 2 and "refused batch" in first.errors[0]
    with session_factory() as session:
        queued_back = session.scalars(select(QueuedFileRow).where(QueuedFileRow.state == "QUEUED")).all()
        assert all(f.batch_key is None and f.attempts == 0 and f.error is None for f in queued_back)
    run_until(cycle, clock, all_in(session_factory, FileState.STAGED))


def test_stale_claims_of_a_crashed_cycle_are_recovered(session_factory, make_adapter, clock):
    adapter = make_adapter()
    add_request(session_factory, catalogue_files(adapter, 3, clock.now()), clock.now())
    with transaction(session_factory) as session:  # a cycle that claimed, committed, and died
        crashed = q.claim(session, Selection(tape=None, max_files=10), "crashed", clock.now())
    assert len(crashed) == 3
    cycle = make_cycle(session_factory, adapter, clock, claim_timeout_s=300)

    early = cycle.run_once()
    assert (early.recovered_claims, early.claimed) == (0, 0)
    clock.advance(301)
    late = cycle.run_once()
    assert late.recovered_claims == 3
    assert late.files_submitted == 3
    run_until(cycle, clock, all_in(session_factory, FileState.STAGED))


def test_failed_reads_are_retried_later_then_fail_with_the_reason(session_factory, make_adapter, clock):
    adapter = make_adapter(faults={"read_error_probability": 1.0})
    request_id = add_request(session_factory, catalogue_files(adapter, 1, clock.now()), clock.now())
    cycle = make_cycle(session_factory, adapter, clock, max_attempts=3, retry_backoff_s=500)

    run_until(cycle, clock, all_in(session_factory, FileState.FAILED), step_s=50)

    with session_factory() as session:
        file = session.scalars(select(QueuedFileRow)).one()
        assert file.attempts == 3
        recalls = session.execute(
            select(Recall.submitted_at, Recall.finished_at, Recall.outcome).order_by(Recall.submitted_at)
        ).all()
        link = session.scalars(select(RequestFile)).one()
    assert [r.outcome for r in recalls] == ["FAILED"] * 3
    for before, after in itertools.pairwise(recalls):
        assert after.submitted_at - before.finished_at >= timedelta(seconds=500)  # a later mount
    assert link.state == LinkState.FAILED.value
    assert link.error is not None and "gave up after 3 attempts" in link.error
    assert request_state(session_factory, request_id) == "DONE"


def test_unretryable_failure_fails_at_once(session_factory, make_adapter, clock):
    adapter = make_adapter()
    bad_tape = adapter.library.catalogue.tapes[0]
    adapter = make_adapter(faults={"bad_cartridges": [bad_tape]})
    add_request(session_factory, catalogue_files(adapter, 2, clock.now(), tapes=1), clock.now())
    cycle = make_cycle(session_factory, adapter, clock, max_attempts=3)

    run_until(cycle, clock, all_in(session_factory, FileState.FAILED))
    with session_factory() as session:
        assert session.scalars(select(QueuedFileRow.attempts)).all() == [1, 1]
        assert count(session_factory, Recall) == 2
        errors = session.scalars(select(RequestFile.error)).all()
    assert all(e and "gave up" not in e for e in errors)


def cancel_links(factory: sessionmaker[Session], request_id: str, paths: Sequence[str], at: datetime) -> None:
    """What intake's cancel does to the requester's own links."""
    with transaction(factory) as session:
        session.execute(
            update(RequestFile)
            .where(RequestFile.request_id == request_id, RequestFile.path.in_(paths))
            .values(state=LinkState.CANCELLED.value, finished_at=at)
        )


def test_cancel_reaches_the_library(session_factory, make_adapter, clock):
    adapter = make_adapter(drives=1)
    files = catalogue_files(adapter, 12, clock.now(), tapes=1)
    request_id = add_request(session_factory, files, clock.now())
    cycle = make_cycle(session_factory, adapter, clock)
    assert cycle.run_once().files_submitted == 12  # all handed over; the one drive is still mounting

    unwanted = [f.path for f in files[6:]]
    cancel_links(session_factory, request_id, unwanted, clock.now())
    report = cycle.run_once()
    assert report.cancels_pushed == 6
    assert report.cancelled == 6
    assert adapter.library.stats().files_cancelled == 6

    run_until(cycle, clock, lambda: request_state(session_factory, request_id) == "DONE")
    states = file_states(session_factory)
    assert {states[p] for p in unwanted} == {"CANCELLED"}
    assert {states[f.path] for f in files[:6]} == {"STAGED"}
    with session_factory() as session:
        read = session.scalars(select(Recall.file_id).where(Recall.outcome == "STAGED")).all()
    assert len(read) == 6


def test_unresolved_files_are_looked_up_again(session_factory, make_adapter, clock):
    adapter = make_adapter(faults={"offline_windows": [{"start_s": 0, "end_s": 100}]})
    known = catalogue_files(adapter, 1, clock.now())[0]
    request_id = add_request(
        session_factory,
        [
            queued(known.path, "?", 0, clock.now(), state=FileState.UNRESOLVED),
            queued("/not/in/the/library", "?", 0, clock.now(), state=FileState.UNRESOLVED),
        ],
        clock.now(),
    )
    with transaction(session_factory) as session:
        session.execute(update(QueuedFileRow).values(tape=None, position_bytes=None, size_bytes=None))
    cycle = make_cycle(session_factory, adapter, clock)

    offline = cycle.run_once()
    assert (offline.resolved, offline.not_on_tape) == (0, 0)
    clock.advance(150)
    online = cycle.run_once()
    assert (online.resolved, online.not_on_tape) == (1, 1)
    with session_factory() as session:
        link = session.scalars(select(RequestFile).where(RequestFile.path == "/not/in/the/library")).one()
        assert link.state == LinkState.FAILED.value
        assert link.error == "not in the library"
        row = session.scalars(select(QueuedFileRow).where(QueuedFileRow.path == known.path)).one()
        assert (row.tape, row.size_bytes) == (known.tape, known.size_bytes)
    run_until(cycle, clock, lambda: request_state(session_factory, request_id) == "DONE")
    assert file_states(session_factory)[known.path] == "STAGED"

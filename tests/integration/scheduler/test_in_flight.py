"""Files SUBMITTED to a library that lost them are handed over again, under their batch key, and read once.

A restarted scheduler has a new simulated library (it lives in the process), which never heard of the files
SUBMITTED to the old one; a real HSM may drop requests. Both databases, virtual time.
"""

from __future__ import annotations

from sqlalchemy import select

from carousel.db.models import AppliedEvent, QueuedFileRow, Recall
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from hsm_adapters.base import Batch
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import (
    all_in,
    catalogue_files,
    count,
    file_states,
    make_cycle,
    run_until,
)


def batch_keys(factory) -> dict[int, str | None]:
    with factory() as session:
        return dict(session.execute(select(QueuedFileRow.id, QueuedFileRow.batch_key)).all())


def test_a_restarted_scheduler_hands_the_submitted_files_to_its_new_library(
    session_factory, make_adapter, clock
):
    before = make_adapter()
    add_request(session_factory, catalogue_files(before, 6, clock.now(), tapes=2), clock.now())
    dead = make_cycle(session_factory, before, clock)
    assert dead.run_once().files_submitted == 6  # then the process dies: its library goes with it
    keys = batch_keys(session_factory)
    assert before.library.stats().files_staged == 0

    after = make_adapter()  # the new process: a new, empty library
    restarted = make_cycle(session_factory, after, clock)
    first = restarted.run_once()
    assert first.new_term and first.resubmitted == 6
    reports = run_until(restarted, clock, all_in(session_factory, FileState.STAGED))

    assert after.library.stats().files_staged == 6  # each read once, by the library that has them now
    assert batch_keys(session_factory) == keys  # under the batch keys they were submitted with
    assert sum(r.resubmitted for r in reports) == 0  # once per term
    assert count(session_factory, Recall) == 6  # the same recall, not a new one
    with session_factory() as session:
        outcomes = session.scalars(select(Recall.outcome)).all()
        streams = set(session.scalars(select(AppliedEvent.adapter)))
    assert outcomes == ["STAGED"] * 6
    assert len(streams) == 1  # the new library's events, counted from 1 again, were not taken for old ones


def test_a_new_term_with_the_same_library_reads_nothing_twice(session_factory, make_adapter, clock):
    adapter = make_adapter()
    add_request(session_factory, catalogue_files(adapter, 8, clock.now(), tapes=2), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)
    assert cycle.run_once().files_submitted == 8
    clock.advance(200)
    cycle.run_once()
    staged_so_far = adapter.library.stats().files_staged

    cycle.inflight.new_term()  # as when the leader lock is lost and taken again by this same process
    again = cycle.run_once()
    assert again.resubmitted == 8 - staged_so_far
    run_until(cycle, clock, all_in(session_factory, FileState.STAGED))
    assert adapter.library.stats().files_staged == 8  # the library took each batch key once


class DropsFirstSubmissions:
    """The simulated library behind a front end that loses the first submission of each batch (accepts it
    and forgets it), as an HSM that restarted and lost its queue would."""

    def __init__(self, inner: SimulatedAdapter) -> None:
        self.inner = inner
        self.name = inner.name
        self.dropped: set[str] = set()

    def submit(self, batch: Batch) -> None:
        if batch.key not in self.dropped:
            self.dropped.add(batch.key)
            return
        self.inner.submit(batch)

    def __getattr__(self, attribute: str) -> object:
        return getattr(self.inner, attribute)


def test_files_without_news_are_handed_over_again_after_the_in_flight_timeout(
    session_factory, make_adapter, clock: ManualClock
):
    adapter = DropsFirstSubmissions(make_adapter())
    add_request(session_factory, catalogue_files(adapter.inner, 4, clock.now(), tapes=1), clock.now())
    cycle = make_cycle(session_factory, adapter, clock, inflight_timeout_s=1000)  # type: ignore[arg-type]
    assert cycle.run_once().files_submitted == 4
    keys = batch_keys(session_factory)

    quiet = [cycle.run_once() for _ in range(9) if clock.advance(100)]
    assert sum(r.resubmitted for r in quiet) == 0  # 900 s: not yet
    assert set(file_states(session_factory).values()) == {"SUBMITTED"}
    clock.advance(200)
    assert cycle.run_once().resubmitted == 4
    run_until(cycle, clock, all_in(session_factory, FileState.STAGED))

    assert adapter.inner.library.stats().files_staged == 4
    assert batch_keys(session_factory) == keys
    assert count(session_factory, Recall) == 4

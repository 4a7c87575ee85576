"""The service's completion (carousel.completion.apply, over database rows) and the replay's (the memory
store) end reads alike: for any run of reads that end on disk, fail (retryable or not) or are cancelled by
the library, about the present batch, an old one or none, both leave the file in the same state with the same
attempts, the same wait before a retry, and give its requester the same answer, on PostgreSQL and SQLite."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.completion.apply import apply_events
from carousel.db import queue_queries as q
from carousel.db.engine import transaction
from carousel.db.models import QueuedFileRow, RequestFile
from carousel.domain.completion import RetryRule
from carousel.domain.planning import Selection
from carousel.domain.queue import HandedOver
from carousel.domain.states import FILE_TERMINAL, FileState, LinkState
from carousel.replay.memory_store import MemoryQueueStore
from hsm_adapters.base import Event, EventKind
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued

RULE = RetryRule(max_attempts=3, backoff_s=600)
ANSWER = {
    LinkState.COMPLETED: FileState.STAGED,
    LinkState.FAILED: FileState.FAILED,
    LinkState.CANCELLED: FileState.CANCELLED,
}
_tapes = itertools.count()
_seqs = itertools.count(1)  # one event stream for every example: the database remembers what it applied

ends = st.tuples(
    st.sampled_from([EventKind.FILE_STAGED, EventKind.FILE_FAILED, EventKind.FILE_CANCELLED]),
    st.booleans(),  # retryable
    st.sampled_from(["present", "old", "none"]),  # the batch the event names
)


class Live:
    """One file of one request in the service's database, claimed and ended as the cycle would."""

    def __init__(self, factory: sessionmaker[Session], tape: str, path: str) -> None:
        self.factory = factory
        self.tape = tape
        add_request(factory, [queued(path, tape, 0, T0, size=100)], T0)
        with factory() as session:
            self.id = session.scalars(select(QueuedFileRow.id).where(QueuedFileRow.path == path)).one()

    def hand_over(self, key: str, now) -> None:
        with transaction(self.factory) as session:
            claimed = q.claim(session, Selection(tape=self.tape, max_files=1), key, now)
            q.record_handed_over(session, [HandedOver(key, self.tape, tuple(f.id for f in claimed))], now)

    def apply(self, event: Event) -> None:
        with transaction(self.factory) as session:
            apply_events(session, "agree", [event], RULE)

    def now(self):
        with self.factory() as session:
            row = session.get(QueuedFileRow, self.id)
            link = session.scalars(select(RequestFile).where(RequestFile.file_id == self.id)).one()
            assert row is not None
            answer = None if link.state == LinkState.PENDING else ANSWER[LinkState(link.state)]
            return FileState(row.state), row.attempts, row.not_before, answer


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ends, min_size=1, max_size=8))
def test_both_stores_end_reads_alike(session_factory, steps):
    tape = f"T{next(_tapes)}"
    path = f"/agree/{tape}/f"
    live = Live(session_factory, tape, path)
    memory = MemoryQueueStore(RULE)
    row = memory.add(path=path, tape=tape, position=0, size=100, group="default", priority=0, at=T0)
    file = memory.files[0]
    now = T0
    batch: str | None = None
    keys = (f"b{n}" for n in itertools.count(1))
    for step, (kind, retryable, named) in enumerate(steps, start=1):
        if file.state is FileState.QUEUED:  # claimed and handed over again, in both stores, once due
            now = max(now, file.not_before or now)
            [(_, batch, claimed)] = memory.claim([Selection(tape=tape, max_files=1)], keys.__next__, now)
            memory.handed_over([HandedOver(batch, tape, tuple(f.id for f in claimed))], [], now)
            live.hand_over(batch, now)
        now += timedelta(seconds=10)
        event = Event(
            kind,
            now,
            next(_seqs),
            tape=tape,
            file_key=str(file.id),
            batch_key={"present": batch, "old": "b0", "none": None}[named],
            retryable=retryable,
            reason="drive error",
        )
        memory.apply([event])
        live.apply(replace(event, file_key=str(live.id)))

        state, attempts, not_before, answer = live.now()
        assert (state, attempts) == (file.state, file.attempts), f"after {kind} {named} (step {step})"
        if state is FileState.QUEUED:
            assert not_before == file.not_before
        assert answer == memory.rows[row].state
        assert (state in FILE_TERMINAL) == (memory.active == 0)

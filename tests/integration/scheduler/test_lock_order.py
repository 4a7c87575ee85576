"""Deadlocks on PostgreSQL: the scheduler's multi-row updates take their row locks in the one order every
transaction follows (links by request and ordinal, then files by path), so a transaction that locks files in
path order (as intake does) waits for them instead of deadlocking with them; and a transaction that does
lose to a deadlock is run again whole.

Each test interleaves two real transactions on their own connections: the "intake" one locks the first file
in path order, waits until the scheduler's transaction is blocked behind it, then locks the second file.
Scheduler code that locked in any other order would hold the second file by then: PostgreSQL would detect a
deadlock and fail one of the two.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from carousel.completion.apply import apply_events
from carousel.db import queue_queries as q
from carousel.db.engine import make_engine, make_session_factory, run_transaction, transaction
from carousel.db.models import QueuedFileRow
from carousel.domain.completion import RetryRule
from carousel.domain.planning import Selection
from carousel.domain.queue import HandedOver
from hsm_adapters.base import Event, EventKind
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued

pytestmark = pytest.mark.postgres

WAIT_S = 20.0
PATHS = ["/lock/a", "/lock/b"]  # path order: a before b


@pytest.fixture
def engine(postgres_databases, postgres_template) -> Iterator[Engine]:
    url: URL = postgres_databases.create(template=postgres_template)
    engine = make_engine(url, pool_size=4)
    yield engine
    engine.dispose()
    postgres_databases.drop(url)


def waiting_for_a_lock(engine: Engine) -> bool:
    with engine.connect() as connection:
        found = connection.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock'"
            )
        ).scalar_one()
    return bool(found)


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "the scheduler's transaction never waited for the intake one"
        time.sleep(0.01)


def race_with_intake(
    engine: Engine, factory: sessionmaker[Session], scheduler_work: Callable[[], None]
) -> None:
    """Runs scheduler_work against a transaction that locks the files in path order, a at first, b once
    scheduler_work waits for a lock. Raises whatever either side raised (a deadlock, say)."""
    errors: list[BaseException] = []

    def scheduler_side() -> None:
        try:
            scheduler_work()
        except BaseException as exc:  # reported to the test below
            errors.append(exc)

    worker = threading.Thread(target=scheduler_side)
    with transaction(factory) as session:
        ids = dict(session.execute(select(QueuedFileRow.path, QueuedFileRow.id)).all())
        lock = select(QueuedFileRow.id).with_for_update(key_share=True)
        session.execute(lock.where(QueuedFileRow.id == ids[PATHS[0]]))
        worker.start()
        until(lambda: waiting_for_a_lock(engine) or not worker.is_alive())
        session.execute(lock.where(QueuedFileRow.id == ids[PATHS[1]]))
    worker.join(WAIT_S)
    assert not worker.is_alive()
    if errors:
        raise errors[0]


def submitted_files(factory: sessionmaker[Session]) -> dict[str, int]:
    add_request(factory, [queued(p, "T1", n * 100, T0, size=100) for n, p in enumerate(PATHS)], T0)
    with transaction(factory) as session:
        claimed = q.claim(session, Selection(tape="T1", max_files=2), "batch", T0)
        q.record_handed_over(session, [HandedOver("batch", "T1", tuple(f.id for f in claimed))], T0)
    return {f.path: f.id for f in claimed}


def test_completion_of_files_in_an_order_other_than_their_paths_waits_instead_of_deadlocking(engine):
    factory = make_session_factory(engine)
    ids = submitted_files(factory)
    # the library read b first: its events name b, then a
    events = [
        Event(
            EventKind.FILE_STAGED, T0 + timedelta(seconds=n + 1), n + 1, "T1", None, str(ids[p]), p, "batch"
        )
        for n, p in enumerate(reversed(PATHS))
    ]

    def complete() -> None:
        with transaction(factory) as session:
            apply_events(session, "simulated", events, RetryRule(max_attempts=3, backoff_s=60))

    race_with_intake(engine, factory, complete)
    with factory() as session:
        assert set(session.scalars(select(QueuedFileRow.state))) == {"STAGED"}


def test_recording_a_hand_over_in_batch_order_waits_instead_of_deadlocking(engine):
    factory = make_session_factory(engine)
    add_request(factory, [queued(p, "T1", n * 100, T0, size=100) for n, p in enumerate(PATHS)], T0)
    with transaction(factory) as session:
        claimed = q.claim(session, Selection(tape="T1", max_files=2), "batch", T0)
    by_path = {f.path: f.id for f in claimed}
    batch_order = tuple(by_path[p] for p in reversed(PATHS))  # the batch reads b before a

    def record() -> None:
        with transaction(factory) as session:
            q.record_handed_over(session, [HandedOver("batch", "T1", batch_order)], T0)

    race_with_intake(engine, factory, record)
    with factory() as session:
        assert set(session.scalars(select(QueuedFileRow.state))) == {"SUBMITTED"}


def test_a_transaction_lost_to_a_deadlock_is_run_again_whole(engine):
    """Two transactions lock the two files in opposite orders (as no carousel code does): PostgreSQL kills
    one; run_transaction runs it again and both end."""
    factory = make_session_factory(engine)
    ids = submitted_files(factory)
    both_hold_one = threading.Barrier(2, timeout=WAIT_S)
    attempts = {PATHS[0]: 0, PATHS[1]: 0}

    def lock_both(first: str, second: str) -> Callable[[Session], None]:
        def work(session: Session) -> None:
            attempts[first] += 1
            lock = select(QueuedFileRow.id).with_for_update(key_share=True)
            session.execute(lock.where(QueuedFileRow.id == ids[first]))
            if attempts[first] == 1:
                both_hold_one.wait()
            session.execute(lock.where(QueuedFileRow.id == ids[second]))
            session.execute(
                text("UPDATE files SET priority = priority + 1 WHERE id = :id"), {"id": ids[first]}
            )

        return work

    errors: list[BaseException] = []

    def run(first: str, second: str) -> None:
        try:
            run_transaction(factory, lock_both(first, second), sleep=lambda _: None)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=order) for order in (PATHS, PATHS[::-1])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(thread.is_alive() for thread in threads), "a transaction never ended"
    assert not errors
    # at least one lost and ran again until it ended; its retry, run at once, may lock its first file before
    # the winner took it and deadlock again, and then the winner may be the one killed (both ran twice: seen
    # on a loaded machine). Each committed its work exactly once, whatever the losses (below).
    assert max(attempts.values()) >= 2, attempts
    with factory() as session:
        assert sorted(session.scalars(select(QueuedFileRow.priority))) == [1, 1]

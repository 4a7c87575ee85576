"""Several schedulers on one PostgreSQL database: exactly one plans at a time, and it stays the leader until
it stops (its lock connection closes); the next cycle of a standby then takes over, in a new term."""

from __future__ import annotations

import threading

import pytest

from carousel.db.engine import make_engine, make_session_factory
from carousel.db.leader_lock import AdvisoryLock, SingleProcessLock, leader_lock_for
from carousel.domain.planning import Plan, Snapshot
from carousel.scheduler.cycle import Cycle, CycleReport
from policies.fifo import FifoPolicy
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import catalogue_files, file_states, settings

WAIT_S = 60  # bounded, and generous: each wait ends as soon as its event happens


class PausingFifo(FifoPolicy):
    """fifo that holds its cycle (and so the leader lock) open until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.planning = threading.Event()
        self.go_on = threading.Event()

    def plan(self, snapshot: Snapshot) -> Plan:
        self.planning.set()
        assert self.go_on.wait(WAIT_S)
        return super().plan(snapshot)


@pytest.mark.postgres
def test_two_cycles_at_once_only_one_plans(postgres_databases, postgres_template, make_adapter, clock):
    url = postgres_databases.create(template=postgres_template)
    engine = make_engine(url)
    try:
        factory = make_session_factory(engine)
        first_adapter = make_adapter()
        add_request(factory, catalogue_files(first_adapter, 4, clock.now()), clock.now())
        pausing = PausingFifo()
        first = Cycle(settings(), factory, first_adapter, pausing, clock)
        second = Cycle(settings(), factory, make_adapter(), FifoPolicy(), clock)
        assert isinstance(first.leader_lock, AdvisoryLock)

        reports: list[CycleReport] = []
        runner = threading.Thread(target=lambda: reports.append(first.run_once()))
        runner.start()
        try:
            assert pausing.planning.wait(WAIT_S)
            shut_out = second.run_once()
        finally:
            pausing.go_on.set()
            runner.join(WAIT_S)
        assert not runner.is_alive() and reports, "the first cycle did not end"
        assert not shut_out.leader
        assert shut_out.plan is None and shut_out.claimed == 0
        assert reports[0].leader and reports[0].files_submitted == 4
        assert set(file_states(factory).values()) == {"SUBMITTED"}

        assert not second.run_once().leader  # the leader keeps the lock between its cycles
        assert first.run_once().leader

        first.close()  # the leader stops
        taken_over = second.run_once()
        assert taken_over.leader and taken_over.new_term
        assert not first.run_once().leader
        second.close()
    finally:
        engine.dispose()
        postgres_databases.drop(url)


def test_the_lock_suits_the_database(fresh_database_url):
    engine = make_engine(fresh_database_url)
    try:
        lock = leader_lock_for(make_session_factory(engine))
        assert isinstance(lock, AdvisoryLock if engine.dialect.name == "postgresql" else SingleProcessLock)
        with lock.hold() as leader:
            assert leader and lock.term == 1
        with lock.hold() as leader:
            assert leader and lock.term == 1  # still the same term
        lock.release()
    finally:
        engine.dispose()


def test_sessions_bound_to_one_connection_need_no_lock(session_factory):
    assert isinstance(leader_lock_for(session_factory), SingleProcessLock)

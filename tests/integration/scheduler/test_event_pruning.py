"""applied_events is pruned: rows of events older than the retention go, in bounded batches; newer ones stay
and still make a redelivered event a duplicate. On both databases, in virtual time."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import AppliedEvent
from carousel.domain.clock import ManualClock
from carousel.scheduler.event_pruning import AppliedEventsPruner
from hsm_adapters.base import Event, EventKind
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.test_completion import apply

DAY_S = 86_400.0
WEEK_S = 7 * DAY_S


def mounts(first_seq: int, count: int, at_s: float) -> list[Event]:
    """Events completion records but that touch no file: mounts of a tape nobody asked for."""
    at = T0 + timedelta(seconds=at_s)
    return [
        Event(kind=EventKind.MOUNTED, at=at, seq=seq, tape="T9", drive="d0")
        for seq in range(first_seq, first_seq + count)
    ]


def stored(factory: sessionmaker[Session]) -> list[int]:
    with factory() as session:
        return sorted(session.scalars(select(AppliedEvent.seq)))


def test_events_older_than_the_retention_are_forgotten_and_newer_still_count(session_factory):
    old, recent = mounts(1, 30, at_s=0.0), mounts(31, 5, at_s=6 * DAY_S)
    assert apply(session_factory, old + recent).applied == 35
    clock = ManualClock(T0 + timedelta(seconds=WEEK_S + 1))
    pruner = AppliedEventsPruner(session_factory, clock, WEEK_S, batch_rows=7, batches_per_run=10)

    report = pruner.run_once()

    assert (report.deleted, report.more_left) == (30, False)
    assert stored(session_factory) == list(range(31, 36))
    assert apply(session_factory, recent).duplicates == 5, "within the retention a redelivery changes nothing"
    assert pruner.run_once().deleted == 0


def test_one_run_deletes_at_most_its_batches_and_the_next_run_goes_on(session_factory):
    apply(session_factory, mounts(1, 25, at_s=0.0))
    clock = ManualClock(T0 + timedelta(seconds=2 * WEEK_S))
    pruner = AppliedEventsPruner(session_factory, clock, WEEK_S, batch_rows=4, batches_per_run=3)

    first = pruner.run_once()
    assert (first.deleted, first.more_left) == (12, True)
    with session_factory() as session:
        assert session.scalar(select(func.count()).select_from(AppliedEvent)) == 13
    assert [pruner.run_once().deleted for _ in range(3)] == [12, 1, 0]
    assert stored(session_factory) == []


def test_each_row_keeps_the_time_of_its_event(session_factory):
    apply(session_factory, mounts(1, 1, at_s=123.5))
    with session_factory() as session:
        row = session.scalars(select(AppliedEvent)).one()
    assert row.event_at == T0 + timedelta(seconds=123.5)
    assert row.event_at.tzinfo is not None

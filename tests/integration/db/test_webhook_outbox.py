"""The outbox's hand-over between deliverers: a taken delivery is leased (no other deliverer takes it until
the lease runs out), an outcome recorded after the lease was lost changes nothing, and on PostgreSQL a
delivery another deliverer holds locked is skipped, not waited for."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from carousel.db import webhook_queries as q
from carousel.db.engine import make_engine, make_session_factory, transaction
from carousel.db.models import RequestWebhook, StageRequest, WebhookDelivery
from carousel.domain.states import DeliveryState
from tests.integration.conftest import PostgresDatabases

AT = datetime(2026, 1, 1, tzinfo=UTC)
LEASE_S = 600.0


def add_deliveries(session: Session, n: int) -> None:
    session.execute(
        insert(StageRequest).values(
            id="r1", owner="alice", api="native", state="DONE", files_total=0, created_at=AT
        )
    )
    session.execute(
        insert(RequestWebhook).values(id="w1", request_id="r1", url="http://127.0.0.1/x", created_at=AT)
    )
    for i in range(n):
        session.execute(
            insert(WebhookDelivery).values(
                id=f"d{i}",
                webhook_id="w1",
                request_id="r1",
                payload={"i": i},
                state="PENDING",
                attempts=0,
                created_at=AT,
                next_attempt_at=AT + timedelta(seconds=i),
            )
        )


def test_a_taken_delivery_is_leased_and_a_late_outcome_changes_nothing(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as session:
        add_deliveries(session, 1)
    with transaction(session_factory) as session:
        (first,) = q.take_due(session, AT, limit=10, lease_s=LEASE_S)
    assert first.attempt == 1
    with transaction(session_factory) as session:
        assert q.take_due(session, AT + timedelta(seconds=LEASE_S - 1), limit=10, lease_s=LEASE_S) == []
    with transaction(session_factory) as session:  # the first deliverer died: another takes it over
        (again,) = q.take_due(session, AT + timedelta(seconds=LEASE_S), limit=10, lease_s=LEASE_S)
    assert (again.id, again.attempt) == (first.id, 2)
    late = {"at": AT, "next_attempt_at": None, "status": 200, "error": None}
    with transaction(session_factory) as session:
        assert not q.record_outcome(session, first, state=DeliveryState.DELIVERED, **late)
        assert q.record_outcome(session, again, state=DeliveryState.DELIVERED, **late)
    with session_factory() as session:
        assert session.get(WebhookDelivery, first.id).state == "DELIVERED"  # type: ignore[union-attr]


def test_due_deliveries_are_taken_oldest_first_up_to_the_batch(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as session:
        add_deliveries(session, 5)
    with transaction(session_factory) as session:
        taken = q.take_due(session, AT + timedelta(seconds=3), limit=3, lease_s=LEASE_S)
    assert [d.id for d in taken] == ["d0", "d1", "d2"]
    with transaction(session_factory) as session:
        taken = q.take_due(session, AT + timedelta(seconds=3), limit=3, lease_s=LEASE_S)
    assert [d.id for d in taken] == ["d3"]  # d4 is not due yet


@pytest.fixture
def postgres_engine(postgres_databases: PostgresDatabases, postgres_template: str) -> Iterator[Engine]:
    url = postgres_databases.create(template=postgres_template)
    engine = make_engine(url)
    yield engine
    engine.dispose()
    postgres_databases.drop(url)


@pytest.mark.postgres
def test_deliverers_on_postgresql_skip_what_another_holds(postgres_engine: Engine) -> None:
    factory = make_session_factory(postgres_engine)
    with transaction(factory) as session:
        add_deliveries(session, 3)
    with transaction(factory) as holder:
        held = q.take_due(holder, AT + timedelta(seconds=10), limit=2, lease_s=LEASE_S)
        assert [d.id for d in held] == ["d0", "d1"]
        # before the holder commits, another deliverer neither waits nor takes the held ones
        with transaction(factory) as other:
            other.execute(text("SET LOCAL lock_timeout = '2s'"))
            taken = q.take_due(other, AT + timedelta(seconds=10), limit=10, lease_s=LEASE_S)
        assert [d.id for d in taken] == ["d2"]

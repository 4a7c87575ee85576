"""Migration 0004 (request webhooks) goes down and up again on both databases, keeping the requests."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert, inspect, select
from sqlalchemy.engine import URL

from carousel.db.engine import current_revision, downgrade_to, make_engine, upgrade_to_head
from carousel.db.models import RequestWebhook, StageRequest, WebhookDelivery

AT = datetime(2026, 1, 1, tzinfo=UTC)
WEBHOOK_TABLES = {"request_webhooks", "webhook_deliveries"}


def _tables(url: URL) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_0004_down_drops_the_webhook_tables_and_keeps_requests_then_up_again(empty_database_url: URL) -> None:
    upgrade_to_head(empty_database_url)
    engine = make_engine(empty_database_url)
    try:
        with engine.begin() as connection:
            connection.execute(
                insert(StageRequest).values(
                    id="r1", owner="alice", api="native", state="DONE", files_total=0, created_at=AT
                )
            )
            connection.execute(
                insert(RequestWebhook).values(
                    id="w1", request_id="r1", url="https://h.example/x", created_at=AT
                )
            )
            connection.execute(
                insert(WebhookDelivery).values(
                    id="d1",
                    webhook_id="w1",
                    request_id="r1",
                    payload={"n": 1},
                    state="PENDING",
                    attempts=0,
                    created_at=AT,
                    next_attempt_at=AT,
                )
            )
        assert _tables(empty_database_url) >= WEBHOOK_TABLES

        downgrade_to(empty_database_url, "0003")
        assert current_revision(engine) == "0003"
        assert not WEBHOOK_TABLES & _tables(empty_database_url)
        with engine.connect() as connection:
            assert connection.scalars(select(StageRequest.id)).all() == ["r1"]

        upgrade_to_head(empty_database_url)
        assert _tables(empty_database_url) >= WEBHOOK_TABLES
        with engine.connect() as connection:
            assert connection.scalars(select(RequestWebhook.id)).all() == []
            assert connection.scalars(select(StageRequest.id)).all() == ["r1"]
    finally:
        engine.dispose()

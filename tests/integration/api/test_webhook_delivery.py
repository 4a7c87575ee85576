"""Webhook deliveries over real HTTP, on both databases, in virtual time: a receiver on 127.0.0.1 in a
thread, the deliverer run once at a time by the test (as its job in the scheduler would), the cycle stepped
against the simulated library."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from carousel.config.webhooks import WebhookSettings
from carousel.db.engine import make_engine, make_session_factory, transaction
from carousel.db.models import StageRequest, WebhookDelivery
from carousel.domain.callers import ANONYMOUS
from carousel.domain.clock import ManualClock
from carousel.intake import cancel as cancel_case
from carousel.intake.model import Api, StageOrder
from carousel.intake.submit import submit
from carousel.observability.metrics import ServiceMetrics
from carousel.webhooks import register as webhooks_case
from carousel.webhooks import signing
from carousel.webhooks.deliverer import WebhookDeliverer, backoff_s
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.api.conftest import SyncApi
from tests.integration.api.webhook_receiver import Answer, Received, closed_port_url, receiving
from tests.integration.scheduler.support import make_cycle

NATIVE = "/api/native/v1"
SECRET = "a-secret-of-some-length"
LOOPBACK = ("127.0.0.1",)
MAX_RUNS = 50


def make_deliverer(
    factory: sessionmaker[Session], clock: ManualClock, rng: random.Random | None = None, **settings: Any
) -> tuple[WebhookDeliverer, ServiceMetrics]:
    metrics = ServiceMetrics()
    values: dict[str, Any] = {"allowed_hosts": LOOPBACK, "jitter": 0.0, **settings}
    deliverer = WebhookDeliverer(
        WebhookSettings(**values), factory, clock, rng=rng, on_report=metrics.observe_webhooks
    )
    return deliverer, metrics


def delivered(metrics: ServiceMetrics, outcome: str) -> float:
    value = metrics.registry.get_sample_value("carousel_webhook_deliveries_total", {"outcome": outcome})
    return float(value or 0)


def only_delivery(factory: sessionmaker[Session]) -> WebhookDelivery:
    with factory() as session:
        return session.scalars(select(WebhookDelivery)).one()


def done_request_with_webhook(api: SyncApi, paths: list[str], url: str, secret: str | None = None) -> str:
    """A request with a webhook, then cancelled: DONE, its delivery due now."""
    webhook: dict[str, Any] = {"url": url} if secret is None else {"url": url, "secret": secret}
    response = api.post(f"{NATIVE}/requests", json={"paths": paths, "webhook": webhook})
    assert response.status_code == 201, response.text
    request_id: str = response.json()["id"]
    assert api.post(f"{NATIVE}/requests/{request_id}/cancel").status_code == 200
    return request_id


def test_told_once_when_the_request_completes_with_a_signature_that_verifies(
    make_api: Callable[..., SyncApi],
    library: SimulatedAdapter,
    library_paths: list[str],
    session_factory: sessionmaker[Session],
    clock: ManualClock,
) -> None:
    api = make_api(webhooks={"allowed_hosts": LOOPBACK})
    cycle = make_cycle(session_factory, library, clock)
    deliverer, metrics = make_deliverer(session_factory, clock)
    with receiving() as receiver:
        response = api.post(
            f"{NATIVE}/requests",
            json={"paths": library_paths[:4], "webhook": {"url": receiver.url, "secret": SECRET}},
        )
        request_id = response.json()["id"]
        for _ in range(MAX_RUNS):  # the cycle and the deliverer side by side, as in the scheduler
            cycle.run_once()
            deliverer.run_once()
            state = api.get(f"{NATIVE}/requests/{request_id}").json()["request"]["state"]
            if state == "DONE":
                break
            assert receiver.received == []  # nothing before the request is done
            clock.advance(20)
        assert state == "DONE"
        if not receiver.received:  # done by this very cycle: the deliverer's next run tells
            deliverer.run_once()
        for _ in range(3):  # and never again
            clock.advance(3600)
            deliverer.run_once()
        deliverer.close()

    (got,) = receiver.received
    request = api.get(f"{NATIVE}/requests/{request_id}").json()["request"]
    payload = json.loads(got.body)
    delivery = only_delivery(session_factory)
    assert payload == {
        "event": "request.done",
        "delivery_id": delivery.id,
        "webhook_id": response.json()["webhook_id"],
        "request_id": request_id,
        "state": "DONE",
        "files_total": 4,
        "counts": {"COMPLETED": 4, "FAILED": 0, "CANCELLED": 0},
        "finished_at": request["completed_at"],
    }
    assert got.path == "/hook"
    assert got.headers["content-type"] == "application/json"
    assert got.headers["x-carousel-delivery"] == delivery.id
    assert got.headers["x-carousel-event"] == "request.done"
    assert got.headers["x-carousel-attempt"] == "1"
    # the receiver's side, written here from the documentation, not with carousel's code
    fields = dict(part.split("=", 1) for part in got.headers["x-carousel-signature"].split(","))
    expected = hmac.new(SECRET.encode(), fields["t"].encode() + b"." + got.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(fields["v1"], expected)
    assert not signing.verify("another-secret-entirely", got.body, got.headers["x-carousel-signature"])
    assert not signing.verify(SECRET, got.body + b" ", got.headers["x-carousel-signature"])
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("DELIVERED", 1, 200)
    assert delivered(metrics, "delivered") == 1


def test_a_failing_receiver_is_retried_at_the_backoff_times_then_delivered(
    make_api: Callable[..., SyncApi],
    library_paths: list[str],
    session_factory: sessionmaker[Session],
    clock: ManualClock,
) -> None:
    api = make_api(webhooks={"allowed_hosts": LOOPBACK})
    deliverer, metrics = make_deliverer(session_factory, clock, backoff_s=30.0)
    start = clock.now()
    seen_at: list[datetime] = []
    with receiving([500, Answer(503)], on_request=lambda _: seen_at.append(clock.now())) as receiver:
        request_id = done_request_with_webhook(api, library_paths[:2], receiver.url)
        for _ in range(200):  # a run every second of virtual time
            deliverer.run_once()
            if only_delivery(session_factory).state != "PENDING":
                break
            clock.advance(1)
        deliverer.close()

    assert [t - start for t in seen_at] == [timedelta(0), timedelta(seconds=30), timedelta(seconds=90)]
    assert [r.headers["x-carousel-attempt"] for r in receiver.received] == ["1", "2", "3"]
    assert len({r.headers["x-carousel-delivery"] for r in receiver.received}) == 1  # one delivery id
    assert len({r.body for r in receiver.received}) == 1
    (hook,) = api.get(f"{NATIVE}/requests/{request_id}/webhooks").json()["webhooks"]
    assert hook["delivery"]["state"] == "DELIVERED"
    assert (hook["delivery"]["attempts"], hook["delivery"]["last_status"]) == (3, 200)
    assert (delivered(metrics, "retrying"), delivered(metrics, "delivered")) == (2, 1)


def test_a_receiver_that_is_down_is_tried_up_to_the_limit_then_failed_with_the_reason(
    make_api: Callable[..., SyncApi],
    library_paths: list[str],
    session_factory: sessionmaker[Session],
    clock: ManualClock,
) -> None:
    api = make_api(webhooks={"allowed_hosts": LOOPBACK})
    settings = {"max_attempts": 4, "backoff_s": 10.0, "jitter": 0.5}
    deliverer, metrics = make_deliverer(session_factory, clock, random.Random(7), **settings)
    request_id = done_request_with_webhook(api, library_paths[:2], closed_port_url())
    start = clock.now()
    tried_at: list[datetime] = []
    for _ in range(MAX_RUNS):  # the clock jumps to each next attempt
        tried_at.append(clock.now())
        report = deliverer.run_once()
        assert report.attempted == 1
        delivery = only_delivery(session_factory)
        if delivery.state != "PENDING":
            break
        assert delivery.next_attempt_at is not None
        clock.set(delivery.next_attempt_at)
    deliverer.close()

    assert (delivery.state, delivery.attempts, delivery.last_status) == ("FAILED", 4, None)
    assert delivery.last_error is not None and "ConnectError" in delivery.last_error
    # waits of 10, 20, 40 s, each stretched by up to half, from the seeded source
    same = random.Random(7)
    jittered = WebhookSettings(allowed_hosts=LOOPBACK, **settings)
    waits = [(b - a).total_seconds() for a, b in itertools.pairwise(tried_at)]
    assert waits == pytest.approx([backoff_s(jittered, n, same) for n in (1, 2, 3)], abs=1e-6)  # to the µs
    assert all(base <= wait <= 1.5 * base for wait, base in zip(waits, (10, 20, 40), strict=True))
    assert tried_at[0] == start
    (hook,) = api.get(f"{NATIVE}/requests/{request_id}/webhooks").json()["webhooks"]
    assert hook["delivery"]["state"] == "FAILED"
    assert "ConnectError" in hook["delivery"]["last_error"]
    assert (delivered(metrics, "retrying"), delivered(metrics, "failed")) == (3, 1)
    clock.advance(86400)
    assert deliverer.run_once().attempted == 0  # failed is final


def test_a_redirect_is_not_followed(
    make_api: Callable[..., SyncApi],
    library_paths: list[str],
    session_factory: sessionmaker[Session],
    clock: ManualClock,
) -> None:
    api = make_api(webhooks={"allowed_hosts": LOOPBACK})
    deliverer, _ = make_deliverer(session_factory, clock, max_attempts=1)
    with receiving() as elsewhere, receiving([Answer(302, (("Location", elsewhere.url),))]) as receiver:
        done_request_with_webhook(api, library_paths[:1], receiver.url)
        deliverer.run_once()
        deliverer.close()
    assert len(receiver.received) == 1
    assert elsewhere.received == []
    delivery = only_delivery(session_factory)
    assert (delivery.state, delivery.last_status) == ("FAILED", 302)
    assert delivery.last_error is not None and "redirects are not followed" in delivery.last_error


def test_a_host_no_longer_allowed_fails_without_a_call(
    make_api: Callable[..., SyncApi],
    library_paths: list[str],
    session_factory: sessionmaker[Session],
    clock: ManualClock,
) -> None:
    api = make_api(webhooks={"allowed_hosts": LOOPBACK})
    deliverer, _ = make_deliverer(session_factory, clock, allowed_hosts=("hooks.example.org",))
    with receiving() as receiver:
        done_request_with_webhook(api, library_paths[:1], receiver.url)
        deliverer.run_once()
        deliverer.close()
    assert receiver.received == []
    delivery = only_delivery(session_factory)
    assert (delivery.state, delivery.attempts) == ("FAILED", 1)
    assert delivery.last_error == "host '127.0.0.1' is no longer in webhooks.allowed_hosts"


def test_no_transaction_is_open_while_the_receiver_answers(
    fresh_database_url: URL, library: SimulatedAdapter, library_paths: list[str], clock: ManualClock
) -> None:
    """During the call another connection changes the delivery's row at once: the deliverer holds no lock
    on it (PostgreSQL: lock_timeout; SQLite: any write transaction open would block this one)."""
    engine = make_engine(fresh_database_url)
    factory = make_session_factory(engine)
    writes: list[str] = []

    def write_the_row(got: Received) -> None:
        with engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(text("SET LOCAL lock_timeout = '2s'"))
            delivery_id = got.headers["x-carousel-delivery"]
            changed = connection.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == delivery_id)
                .values(last_status=WebhookDelivery.last_status)
            ).rowcount
            writes.append(f"{changed} row")

    try:
        with receiving(on_request=write_the_row) as receiver:
            settings = WebhookSettings(allowed_hosts=LOOPBACK)
            order = StageOrder(
                paths=tuple(library_paths[:2]), api=Api.NATIVE, list_field="paths", path_field="p"
            )
            with transaction(factory) as session:
                request_id = submit(
                    session, library, clock, ANONYMOUS, order, max_files=10, max_path_bytes=4096
                ).request_id
                webhooks_case.register(
                    session, clock, ANONYMOUS, request_id, url=receiver.url, secret=None, settings=settings
                )
            with transaction(factory) as session:
                cancel_case.cancel(session, clock, ANONYMOUS, request_id, None, max_path_bytes=4096)
            deliverer, _ = make_deliverer(factory, clock)
            assert deliverer.run_once().delivered == 1
            deliverer.close()
        assert writes == ["1 row"]
        with factory() as session:
            assert session.get(StageRequest, request_id) is not None
            assert session.scalars(select(WebhookDelivery.state)).one() == "DELIVERED"
    finally:
        engine.dispose()

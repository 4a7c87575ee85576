"""Posts due webhook deliveries. Runs beside the scheduling cycle, never inside it (its own job in the
scheduler process, carousel.scheduler.runner), so a slow or dead receiver never delays a cycle.

One run: take up to `batch` due deliveries in a short transaction (leased, FOR UPDATE SKIP LOCKED on
PostgreSQL: several deliverers share the work), post each with no transaction open (a short timeout, no
redirects followed), then record each outcome in a transaction of its own. A 2xx answer delivers; anything
else (another status, a redirect, a timeout, a refused connection) is retried after a backoff that doubles
each time (backoff_s, 2 backoff_s, ... up to max_backoff_s, stretched by up to `jitter` of itself), until
max_attempts attempts have failed; then the delivery is FAILED with the last error. At least once: a
deliverer that dies after posting posts again when the lease runs out; receivers deduplicate on the
delivery id.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import httpx
import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.config.webhooks import WebhookSettings
from carousel.db import webhook_queries as q
from carousel.db.engine import transaction
from carousel.domain.clock import Clock
from carousel.domain.states import DeliveryState
from carousel.webhooks import signing
from carousel.webhooks.urls import host_allowed

log = structlog.get_logger(__name__)

USER_AGENT = "carousel-webhooks/1"
MAX_ERROR_CHARS = 500


@dataclass(slots=True)
class DeliveryReport:
    """What one run did, by outcome."""

    delivered: int = 0
    retrying: int = 0  # failed attempts with another to come
    failed: int = 0  # failed for good
    lost_lease: int = 0  # outcomes not recorded: the delivery was taken again (lease over) or removed
    delivery_ids: list[str] = field(default_factory=list)

    @property
    def attempted(self) -> int:
        return self.delivered + self.retrying + self.failed + self.lost_lease


@dataclass(frozen=True, slots=True)
class _Attempt:
    status: int | None
    error: str | None  # None: delivered
    final: bool = False  # no later attempt could succeed


def backoff_s(settings: WebhookSettings, failed_attempts: int, rng: random.Random | None) -> float:
    """The wait after the nth failed attempt: backoff_s doubled each time, capped, with jitter on top."""
    wait: float = min(settings.max_backoff_s, settings.backoff_s * 2.0 ** (failed_attempts - 1))
    if rng is not None and settings.jitter > 0:
        wait += wait * settings.jitter * rng.random()
    return wait


class WebhookDeliverer:
    def __init__(
        self,
        settings: WebhookSettings,
        session_factory: sessionmaker[Session],
        clock: Clock,
        *,
        rng: random.Random | None = None,
        on_report: Callable[[DeliveryReport], None] | None = None,
    ) -> None:
        self.settings = settings
        self._factory = session_factory
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()  # jitter need not be secret
        self._on_report = on_report
        self._client: httpx.Client | None = None  # made on first use

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            # trust_env off: no proxy or netrc from the environment; the allow-list names whom we call
            self._client = httpx.Client(
                timeout=self.settings.timeout_s,
                follow_redirects=False,
                trust_env=False,
                headers={"User-Agent": USER_AGENT, "Content-Type": "application/json"},
            )
        return self._client

    def run_once(self) -> DeliveryReport:
        """Deliver what is due now (one batch); the outcome of each is recorded before returning."""
        with transaction(self._factory) as session:
            due = q.take_due(
                session, self._clock.now(), limit=self.settings.batch, lease_s=self.settings.lease_s
            )
        report = DeliveryReport()
        for delivery in due:  # no transaction is open from here to the recording
            attempt = self._post(delivery)
            self._record(delivery, attempt, report)
        if due and self._on_report is not None:
            self._on_report(report)
        return report

    def _post(self, delivery: q.DueDelivery) -> _Attempt:
        try:
            host = httpx.URL(delivery.url).host
        except httpx.InvalidURL as exc:
            return _Attempt(None, _short(f"not a valid URL: {exc}"), final=True)
        if not host_allowed(host, self.settings.allowed_hosts):
            return _Attempt(None, f"host {host!r} is no longer in webhooks.allowed_hosts", final=True)
        body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True).encode("utf-8")
        headers = {
            "X-Carousel-Event": str(delivery.payload.get("event", q.EVENT_REQUEST_DONE)),
            "X-Carousel-Delivery": delivery.id,
            "X-Carousel-Attempt": str(delivery.attempt),
        }
        if delivery.secret is not None:
            headers[signing.HEADER] = signing.sign(delivery.secret, body, self._clock.now())
        try:
            response = self._http().post(delivery.url, content=body, headers=headers)
        except Exception as exc:  # any failure to call is one failed attempt (httpx's, or a broken URL)
            return _Attempt(None, _short(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__))
        if 200 <= response.status_code < 300:
            return _Attempt(response.status_code, None)
        if response.is_redirect:
            where = response.headers.get("location", "")
            error = f"HTTP {response.status_code}: redirects are not followed (to {where})"
            return _Attempt(response.status_code, _short(error))
        return _Attempt(response.status_code, f"HTTP {response.status_code}")

    def _record(self, delivery: q.DueDelivery, attempt: _Attempt, report: DeliveryReport) -> None:
        now = self._clock.now()
        state, next_at = self._next(delivery, attempt, now)
        with transaction(self._factory) as session:
            recorded = q.record_outcome(
                session,
                delivery,
                state=state,
                at=now,
                next_attempt_at=next_at,
                status=attempt.status,
                error=attempt.error,
            )
        report.delivery_ids.append(delivery.id)
        fields = {
            "delivery_id": delivery.id,
            "request_id": delivery.request_id,
            "webhook_id": delivery.webhook_id,
            "attempt": delivery.attempt,
            "status": attempt.status,
        }
        if not recorded:
            report.lost_lease += 1
            log.warning("webhook outcome not recorded: the delivery was taken again or removed", **fields)
        elif state is DeliveryState.DELIVERED:
            report.delivered += 1
            log.info("webhook delivered", **fields)
        elif state is DeliveryState.PENDING:
            report.retrying += 1
            log.info("webhook attempt failed", error=attempt.error, next_attempt_at=next_at, **fields)
        else:
            report.failed += 1
            log.warning("webhook delivery failed", error=attempt.error, **fields)

    def _next(
        self, delivery: q.DueDelivery, attempt: _Attempt, now: datetime
    ) -> tuple[DeliveryState, datetime | None]:
        if attempt.error is None:
            return DeliveryState.DELIVERED, None
        if attempt.final or delivery.attempt >= self.settings.max_attempts:
            return DeliveryState.FAILED, None
        wait = backoff_s(self.settings, delivery.attempt, self._rng)
        return DeliveryState.PENDING, now + timedelta(seconds=wait)


def _short(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."

"""Webhooks' SQL: registrations, and the outbox of deliveries (carousel.webhooks).

A delivery is written by `enqueue_deliveries`, called in the transaction that makes requests DONE, so a
notification is never lost between the change and its sending. The deliverer takes due deliveries in one
short transaction (`take_due`: FOR UPDATE SKIP LOCKED on PostgreSQL, and a lease so no other deliverer takes
them meanwhile), calls the receivers with no transaction open, then records each outcome in another
(`record_outcome`), which changes nothing if the lease was lost. Callers own the transactions.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from carousel.db.models import RequestFile, RequestWebhook, StageRequest, WebhookDelivery
from carousel.domain.states import DeliveryState, LinkState, RequestState

EVENT_REQUEST_DONE = "request.done"
W = RequestWebhook
D = WebhookDelivery


def iso(at: datetime) -> str:
    """UTC as the API writes it: 2026-01-01T00:00:00Z."""
    return at.isoformat().replace("+00:00", "Z")


# --- registrations ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestForWebhooks:
    id: str
    state: str


def lock_request(session: Session, request_id: str) -> RequestForWebhooks | None:
    """The request's row, locked until the transaction ends: a registration and the change that makes the
    request DONE go one after the other, so the latter always sees the webhook or the former the DONE."""
    row = session.execute(
        select(StageRequest.id, StageRequest.state).where(StageRequest.id == request_id).with_for_update()
    ).one_or_none()
    return None if row is None else RequestForWebhooks(row.id, row.state)


def any_webhook(session: Session) -> bool:
    """Whether any request has a webhook: where none do (webhooks are off by default), closing requests costs
    this one look at an empty table, however many requests close (10,000 ids cost some 80 ms to match)."""
    return session.scalar(select(W.id).limit(1)) is not None


def count_webhooks(session: Session, request_id: str) -> int:
    return session.scalar(select(func.count()).select_from(W).where(W.request_id == request_id)) or 0


def has_url(session: Session, request_id: str, url: str) -> bool:
    return session.scalar(select(W.id).where(W.request_id == request_id, W.url == url)) is not None


def insert_webhook(session: Session, request_id: str, url: str, secret: str | None, now: datetime) -> str:
    webhook_id = str(uuid.uuid4())
    session.execute(
        insert(W).values(id=webhook_id, request_id=request_id, url=url, secret=secret, created_at=now)
    )
    return webhook_id


def remove_webhook(session: Session, request_id: str, webhook_id: str) -> bool:
    """Removes it and its deliveries (those not sent yet will not be). False: no such webhook there."""
    result = session.execute(delete(W).where(W.id == webhook_id, W.request_id == request_id))
    removed = bool(result.rowcount)  # type: ignore[attr-defined]
    if removed:  # SQLite enforces no ON DELETE CASCADE unless told: do not rely on it
        session.execute(delete(D).where(D.webhook_id == webhook_id))
    return removed


@dataclass(frozen=True, slots=True)
class WebhookView:
    id: str
    url: str
    signed: bool
    created_at: datetime
    delivery: DeliveryView | None  # the latest, if any


@dataclass(frozen=True, slots=True)
class DeliveryView:
    id: str
    state: str
    attempts: int
    next_attempt_at: datetime | None
    finished_at: datetime | None
    last_status: int | None
    last_error: str | None


def webhooks_of(session: Session, request_id: str) -> list[WebhookView]:
    hooks = session.execute(
        select(W.id, W.url, W.secret.is_not(None).label("signed"), W.created_at)
        .where(W.request_id == request_id)
        .order_by(W.created_at, W.id)
    ).all()
    latest: dict[str, DeliveryView] = {}
    for d in session.scalars(select(D).where(D.request_id == request_id).order_by(D.created_at, D.id)).all():
        latest[d.webhook_id] = DeliveryView(
            d.id, d.state, d.attempts, d.next_attempt_at, d.finished_at, d.last_status, d.last_error
        )
    return [WebhookView(h.id, h.url, bool(h.signed), h.created_at, latest.get(h.id)) for h in hooks]


# --- the outbox -------------------------------------------------------------------------------------------


def enqueue_deliveries(
    session: Session, request_ids: Collection[str], *, webhook_id: str | None = None
) -> int:
    """A PENDING delivery, due at once, for each webhook of these requests that are DONE (only webhook_id's
    when given). Returns how many were written. Cheap when no request has a webhook (one look)."""
    if not request_ids or not any_webhook(session):
        return 0
    query = (
        select(W.id, W.request_id)
        .join(StageRequest, StageRequest.id == W.request_id)
        .where(W.request_id.in_(sorted(request_ids)), StageRequest.state == RequestState.DONE.value)
    )
    if webhook_id is not None:
        query = query.where(W.id == webhook_id)
    hooks = session.execute(query).all()
    if not hooks:
        return 0
    wanted = {h.request_id for h in hooks}
    requests = {
        r.id: r
        for r in session.execute(
            select(StageRequest.id, StageRequest.files_total, StageRequest.completed_at).where(
                StageRequest.id.in_(wanted)
            )
        ).all()
    }
    counts: dict[str, dict[str, int]] = defaultdict(
        lambda: {s.value: 0 for s in (LinkState.COMPLETED, LinkState.FAILED, LinkState.CANCELLED)}
    )
    for request_id, state, n in session.execute(
        select(RequestFile.request_id, RequestFile.state, func.count())
        .where(RequestFile.request_id.in_(wanted))
        .group_by(RequestFile.request_id, RequestFile.state)
    ).all():
        counts[request_id][state] = n
    rows: list[dict[str, Any]] = []
    for hook in hooks:
        request = requests[hook.request_id]
        finished_at: datetime = request.completed_at
        delivery_id = str(uuid.uuid4())
        payload = {
            "event": EVENT_REQUEST_DONE,
            "delivery_id": delivery_id,
            "webhook_id": hook.id,
            "request_id": hook.request_id,
            "state": RequestState.DONE.value,
            "files_total": request.files_total,
            "counts": dict(counts[hook.request_id]),
            "finished_at": iso(finished_at),
        }
        rows.append(
            {
                "id": delivery_id,
                "webhook_id": hook.id,
                "request_id": hook.request_id,
                "payload": payload,
                "state": DeliveryState.PENDING.value,
                "attempts": 0,
                "created_at": finished_at,
                "next_attempt_at": finished_at,
            }
        )
    session.execute(insert(D), rows)
    return len(rows)


@dataclass(frozen=True, slots=True)
class DueDelivery:
    id: str
    webhook_id: str
    request_id: str
    url: str
    secret: str | None
    payload: dict[str, Any]
    attempt: int  # this attempt's number, from 1


def take_due(session: Session, now: datetime, *, limit: int, lease_s: float) -> list[DueDelivery]:
    """Up to `limit` PENDING deliveries due by `now`, oldest first, each counted as one attempt started and
    leased (due again only lease_s later, should this deliverer die before it records the outcome).
    Deliveries another deliverer holds locked are skipped, not waited for."""
    due = session.execute(
        select(D.id, D.webhook_id, D.request_id, D.payload, D.attempts, W.url, W.secret)
        .join(W, W.id == D.webhook_id)
        .where(D.state == DeliveryState.PENDING.value, D.next_attempt_at <= now)
        .order_by(D.next_attempt_at, D.id)
        .limit(limit)
        .with_for_update(of=D, skip_locked=True)
    ).all()
    if not due:
        return []
    session.execute(
        update(D)
        .where(D.id.in_([d.id for d in due]))
        .values(attempts=D.attempts + 1, next_attempt_at=now + timedelta(seconds=lease_s))
    )
    return [
        DueDelivery(d.id, d.webhook_id, d.request_id, d.url, d.secret, dict(d.payload), d.attempts + 1)
        for d in due
    ]


def record_outcome(
    session: Session,
    delivery: DueDelivery,
    *,
    state: DeliveryState,
    at: datetime,
    next_attempt_at: datetime | None,
    status: int | None,
    error: str | None,
) -> bool:
    """The attempt's outcome: DELIVERED, FAILED for good, or PENDING again at next_attempt_at. Only if the
    delivery is still this attempt's (False: its lease ran out and another deliverer took it)."""
    final = state is not DeliveryState.PENDING
    result = session.execute(
        update(D)
        .where(
            D.id == delivery.id,
            D.state == DeliveryState.PENDING.value,
            D.attempts == delivery.attempt,
        )
        .values(
            state=state.value,
            next_attempt_at=None if final else next_attempt_at,
            finished_at=at if final else None,
            last_status=status,
            last_error=error,
        )
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]

"""Registering, listing and removing a request's webhooks: the caller's own requests only (another's is not
found). A webhook registered on a request already DONE is told at once."""

from __future__ import annotations

from sqlalchemy.orm import Session

from carousel.config.webhooks import WebhookSettings
from carousel.db import webhook_queries as q
from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from carousel.domain.errors import Conflict, InvalidInput, NotFound
from carousel.domain.grants import require_some_poll_scope, require_some_stage_scope
from carousel.domain.states import RequestState
from carousel.intake.access import is_request_id, owned_request
from carousel.webhooks.urls import check_url

SECRET_MIN_LENGTH = 16
SECRET_MAX_LENGTH = 256


def check_webhook(url: str, secret: str | None, settings: WebhookSettings, *, field: str) -> None:
    """InvalidInput naming `<field>.url` or `<field>.secret` (field "" for a body of its own)."""
    prefix = f"{field}." if field else ""
    check_url(
        url, allowed_hosts=settings.allowed_hosts, max_length=settings.max_url_length, field=prefix + "url"
    )
    if secret is not None and not (
        SECRET_MIN_LENGTH <= len(secret) <= SECRET_MAX_LENGTH and secret.isascii() and secret.isprintable()
    ):
        raise InvalidInput(
            f"{prefix}secret: {SECRET_MIN_LENGTH} to {SECRET_MAX_LENGTH} printable ASCII characters "
            f"(got {len(secret)} characters)",
            field=prefix + "secret",
        )


def register(
    session: Session,
    clock: Clock,
    caller: Caller,
    request_id: str,
    *,
    url: str,
    secret: str | None,
    settings: WebhookSettings,
    field: str = "",
) -> str:
    """The new webhook's id. Nothing is written when the URL, the secret or the count is refused."""
    require_some_stage_scope(caller.grants, "registering a webhook")
    request = owned_request(session, caller, request_id)
    check_webhook(url, secret, settings, field=field)
    prefix = f"{field}." if field else ""
    locked = q.lock_request(session, request.id)
    if locked is None or locked.state == RequestState.DELETED.value:
        raise NotFound(f"no request {request_id[:80]!r}", field="id")
    if q.count_webhooks(session, request.id) >= settings.max_per_request:
        raise InvalidInput(
            f"{prefix}url: request {request.id} has {settings.max_per_request} webhooks, the limit "
            "(webhooks.max_per_request)",
            field=prefix + "url",
        )
    if q.has_url(session, request.id, url):
        detail = f"{prefix}url: request {request.id} already has a webhook to {url}"
        raise Conflict(detail, field=prefix + "url")
    webhook_id = q.insert_webhook(session, request.id, url, secret, clock.now())
    if locked.state == RequestState.DONE.value:
        q.enqueue_deliveries(session, [request.id], webhook_id=webhook_id)
    return webhook_id


def webhooks(session: Session, caller: Caller, request_id: str) -> list[q.WebhookView]:
    require_some_poll_scope(caller.grants, "listing webhooks")
    request = owned_request(session, caller, request_id)
    return q.webhooks_of(session, request.id)


def remove(session: Session, caller: Caller, request_id: str, webhook_id: str) -> None:
    require_some_stage_scope(caller.grants, "removing a webhook")
    request = owned_request(session, caller, request_id)
    # webhook ids are UUIDs: anything else names none (and is not sent to the database)
    if not is_request_id(webhook_id) or not q.remove_webhook(session, request.id, webhook_id):
        raise NotFound(f"no webhook {webhook_id[:80]!r} on request {request.id}", field="webhook_id")

"""Bodies of the webhook routes of the native API (and the `webhook` of a submit). The URL's rules (scheme,
host allow-list, length) are the service's settings, checked by carousel.webhooks.register."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from carousel.db.webhook_queries import DeliveryView, WebhookView


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        max_length=8192,
        description="http or https, no user or password, a host on the service's webhooks.allowed_hosts; "
        "told with a POST once the request is done",
    )
    secret: str | None = Field(
        default=None,
        max_length=8192,
        description="16 to 256 characters: each delivery is signed with HMAC-SHA256 under it "
        "(header X-Carousel-Signature); never shown again",
    )


class DeliveryOut(BaseModel):
    id: str = Field(description="the delivery id the receiver sees (X-Carousel-Delivery)")
    state: str = Field(description="PENDING, DELIVERED or FAILED")
    attempts: int
    next_attempt_at: datetime | None
    finished_at: datetime | None
    last_status: int | None = Field(description="HTTP status of the last answer, if any")
    last_error: str | None

    @classmethod
    def of(cls, view: DeliveryView) -> DeliveryOut:
        return cls(
            id=view.id,
            state=view.state,
            attempts=view.attempts,
            next_attempt_at=view.next_attempt_at,
            finished_at=view.finished_at,
            last_status=view.last_status,
            last_error=view.last_error,
        )


class WebhookOut(BaseModel):
    id: str
    url: str
    signed: bool = Field(description="whether deliveries carry a signature (a secret was given)")
    created_at: datetime
    delivery: DeliveryOut | None = Field(description="the latest delivery; null until the request is done")

    @classmethod
    def of(cls, view: WebhookView) -> WebhookOut:
        return cls(
            id=view.id,
            url=view.url,
            signed=view.signed,
            created_at=view.created_at,
            delivery=None if view.delivery is None else DeliveryOut.of(view.delivery),
        )


class WebhookListOut(BaseModel):
    webhooks: list[WebhookOut]

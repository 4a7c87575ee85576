"""Webhook settings (`webhooks.*`, CAROUSEL_WEBHOOKS__*): which hosts may be called, limits, retries; read by
carousel.webhooks.

No host is allowed by default: webhooks are refused until an operator lists the hosts the service may call
(docs/operations.md, docs/security.md).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class WebhookSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # Host name patterns (shell-style: "hooks.example.org", "*.example.org", "127.0.0.1"); case-insensitive,
    # matched against the URL's host only (any port). Empty: webhooks are refused.
    allowed_hosts: tuple[str, ...] = ()
    max_url_length: int = Field(default=2048, ge=16, le=2048)  # the column's width
    max_per_request: int = Field(default=5, ge=1, le=100)
    timeout_s: float = Field(default=5.0, gt=0, le=60)  # connect, write, read: each at most this
    max_attempts: int = Field(default=8, ge=1, le=100)
    backoff_s: float = Field(default=30.0, ge=0)  # before the 2nd attempt; doubled each time after
    max_backoff_s: float = Field(default=3600.0, ge=0)
    jitter: float = Field(default=0.1, ge=0, le=1)  # each wait is stretched by up to this fraction
    interval_s: float = Field(default=2.0, gt=0)  # how often the deliverer looks for due deliveries
    batch: int = Field(default=20, ge=1, le=1000)  # deliveries taken at once
    # A delivery taken by a deliverer is left alone by others this long: a deliverer that died mid-batch
    # is replaced after it. Longer than a whole batch's calls can last.
    lease_s: float = Field(default=600.0, gt=0)

    @model_validator(mode="after")
    def _lease_covers_a_batch(self) -> WebhookSettings:
        # each call may take the timeout for connecting, sending and reading
        if self.lease_s <= 3 * self.timeout_s * self.batch:
            raise ValueError(
                f"lease_s ({self.lease_s:g}) must exceed 3 * timeout_s * batch "
                f"({3 * self.timeout_s * self.batch:g}): a batch in progress would be taken again"
            )
        return self

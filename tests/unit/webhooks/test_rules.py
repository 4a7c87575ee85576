"""The webhook rules that need no database: host patterns, the backoff and its jitter, the settings' own
checks, the signature."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from carousel.config.webhooks import WebhookSettings
from carousel.domain.errors import InvalidInput
from carousel.webhooks import signing
from carousel.webhooks.deliverer import backoff_s
from carousel.webhooks.urls import check_url, host_allowed


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("hooks.example.org", True),
        ("HOOKS.Example.ORG", True),
        ("a.b.example.org", True),
        ("example.org", False),  # "*.example.org" names the hosts under it
        ("hooks.example.org.evil.test", False),
        ("evil-example.org", False),
        ("127.0.0.1", True),
        ("127.0.0.2", False),
    ],
)
def test_host_patterns(host: str, allowed: bool) -> None:
    assert host_allowed(host, ["*.example.org", "127.0.0.1"]) is allowed


def test_the_url_is_kept_as_given_when_allowed() -> None:
    url = "https://hooks.example.org:8443/carousel?x=1"
    assert check_url(url, allowed_hosts=["hooks.example.org"], max_length=100, field="url") == url


def test_ipv6_literal_hosts_match_without_brackets() -> None:
    assert check_url("http://[::1]:9000/x", allowed_hosts=["::1"], max_length=100, field="url")
    with pytest.raises(InvalidInput, match="'::2' is not among"):
        check_url("http://[::2]:9000/x", allowed_hosts=["::1"], max_length=100, field="url")


def test_backoff_doubles_up_to_the_cap_without_jitter() -> None:
    settings = WebhookSettings(backoff_s=30, max_backoff_s=200, jitter=0)
    assert [backoff_s(settings, n, random.Random(1)) for n in range(1, 6)] == [30, 60, 120, 200, 200]
    assert backoff_s(settings.model_copy(update={"jitter": 0.5}), 1, None) == 30  # no source: no jitter


def test_jitter_stretches_each_wait_by_at_most_its_fraction() -> None:
    settings = WebhookSettings(backoff_s=100, max_backoff_s=100, jitter=0.2)
    rng = random.Random(3)
    waits = [backoff_s(settings, 1, rng) for _ in range(200)]
    assert all(100 <= wait <= 120 for wait in waits)
    assert len(set(waits)) > 100  # spread, so receivers recovering are not hit all at once


def test_a_lease_shorter_than_a_batch_of_calls_is_refused() -> None:
    with pytest.raises(ValidationError, match="lease_s"):
        WebhookSettings(timeout_s=10, batch=20, lease_s=600)


def test_signature_round_trip_and_tampering() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    header = signing.sign("k" * 20, b'{"a":1}', at)
    assert header.startswith(f"t={int(at.timestamp())},v1=")
    assert signing.verify("k" * 20, b'{"a":1}', header)
    assert not signing.verify("k" * 20, b'{"a":2}', header)
    assert not signing.verify("k" * 20, b'{"a":1}', header.replace("t=", "t=1"))
    assert not signing.verify("k" * 20, b'{"a":1}', "garbage")

"""What the log scrubber replaces in a rendered line, and what it leaves alone."""

from __future__ import annotations

import pytest

from carousel.logging import REDACTED, redact_text

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("Authorization: Bearer 4QGW7pfY6T2T2zKUJq7e", "4QGW7pfY6T2T2zKUJq7e"),
        ("(b'authorization', b'Bearer 4QGW7pfY6T2T2zKUJq7e')", "4QGW7pfY6T2T2zKUJq7e"),
        ("(b'cookie', b'session=abc123def')", "session=abc123def"),
        ('{"cookie": "session=abc123def"}', "session=abc123def"),
        ("authorization=Basic YWxpY2U6c2VjcmV0", "YWxpY2U6c2VjcmV0"),
        (f"token {JWT} refused", JWT),
        ("GET /x?access_token=Bearer%20abcdefgh12345678", "abcdefgh12345678"),
        ("GET /api/v1/stage?token=s3cr3t&x=1 HTTP/1.1", "s3cr3t"),
    ],
)
def test_secrets_are_replaced(line: str, secret: str) -> None:
    scrubbed = redact_text(line)
    assert secret not in scrubbed
    assert REDACTED in scrubbed


@pytest.mark.parametrize(
    "line",
    [
        "anonymous calls are turned off: send a bearer token (Authorization header)",
        "the authorization failed for alice",
        "cookie jar is empty",
        'Bearer realm="carousel", error="invalid_token"',
    ],
)
def test_prose_is_left_alone(line: str) -> None:
    assert redact_text(line) == line

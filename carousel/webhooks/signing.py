"""The signature of a delivery, when the webhook has a secret:

    X-Carousel-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the secret>

The receiver recomputes the HMAC over the timestamp, a dot and the raw body bytes, compares in constant
time, and may refuse a timestamp too far from its own clock (a replayed delivery). docs/api.md shows how.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime

HEADER = "X-Carousel-Signature"


def sign(secret: str, body: bytes, at: datetime) -> str:
    timestamp = int(at.timestamp())
    return f"t={timestamp},v1={_mac(secret, timestamp, body)}"


def verify(secret: str, body: bytes, header: str) -> bool:
    """Whether header is a signature of body under secret (the receiver's side; the tests use it)."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    timestamp, given = fields.get("t", ""), fields.get("v1", "")
    if not timestamp.isdigit() or not given:
        return False
    return hmac.compare_digest(_mac(secret, int(timestamp), body), given)


def _mac(secret: str, timestamp: int, body: bytes) -> str:
    message = str(timestamp).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()

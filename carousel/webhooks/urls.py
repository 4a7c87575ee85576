"""Which URLs a webhook may have: http or https, no user or password, a host on the operators' allow-list,
within the length limit. Checked at registration and again before each delivery (the list may have
changed). Host names are matched as written: the allow-list is the operators' word on whom the service may
call, and redirects are never followed (docs/security.md)."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from urllib.parse import SplitResult, urlsplit

from carousel.domain.errors import InvalidInput

SCHEMES = ("http", "https")
HOW_TO_ENABLE = (
    "webhooks are not enabled on this service: an operator lists the hosts it may call in the setting "
    "webhooks.allowed_hosts (CAROUSEL_WEBHOOKS__ALLOWED_HOSTS)"
)


def host_allowed(host: str, allowed_hosts: Sequence[str]) -> bool:
    host = host.lower().rstrip(".")
    return any(fnmatchcase(host, pattern.lower().rstrip(".")) for pattern in allowed_hosts)


def check_url(url: str, *, allowed_hosts: Sequence[str], max_length: int, field: str) -> str:
    """The URL, if a webhook may call it; else InvalidInput naming the field and why."""
    if not allowed_hosts:
        raise InvalidInput(HOW_TO_ENABLE, field=field)
    if len(url) > max_length:
        raise InvalidInput(f"{field}: {len(url)} characters, the limit is {max_length}", field=field)
    if not url.isascii() or any(c.isspace() or ord(c) < 0x20 or c == "\x7f" for c in url):
        raise InvalidInput(
            f"{field}: only printable ASCII without spaces (percent-encode the rest)", field=field
        )
    parts = _split(url, field)
    if parts.scheme.lower() not in SCHEMES:
        shown = parts.scheme or "none"
        raise InvalidInput(f"{field}: the scheme must be http or https, not {shown!r}", field=field)
    if "@" in parts.netloc:
        raise InvalidInput(
            f"{field}: no user name or password in the URL (give a secret to sign deliveries)", field=field
        )
    host = parts.hostname
    if not host:
        raise InvalidInput(f"{field}: the URL names no host", field=field)
    if parts.fragment:
        raise InvalidInput(f"{field}: a fragment (#...) is never sent: leave it out", field=field)
    if not host_allowed(host, allowed_hosts):
        raise InvalidInput(
            f"{field}: host {host!r} is not among the hosts this service may call (webhooks.allowed_hosts)",
            field=field,
        )
    return url


def _split(url: str, field: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port out of range or not a number
    except ValueError as exc:
        raise InvalidInput(f"{field}: not a valid URL ({exc})", field=field) from exc
    return parts

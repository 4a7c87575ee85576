"""Authentication failures, each with the RFC 6750 challenge the answer carries in WWW-Authenticate."""

from __future__ import annotations

from carousel.domain.errors import Forbidden, Unauthorized

REALM = "carousel"


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', "'")[:200]


class MissingCredentials(Unauthorized):
    """No credentials where they are needed: the challenge names no error (RFC 6750, section 3.1)."""

    @property
    def challenge(self) -> str:
        return f'Bearer realm="{REALM}"'


class InvalidToken(Unauthorized):
    """A token that is malformed, forged, expired, for another audience, or from an untrusted issuer."""

    @property
    def challenge(self) -> str:
        return f'Bearer realm="{REALM}", error="invalid_token", error_description="{_quoted(self.detail)}"'


class InsufficientScope(Forbidden):
    """A valid credential that does not allow what was asked."""

    @property
    def challenge(self) -> str:
        return (
            f'Bearer realm="{REALM}", error="insufficient_scope", error_description="{_quoted(self.detail)}"'
        )


Challenged = MissingCredentials | InvalidToken | InsufficientScope

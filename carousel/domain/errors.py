"""Domain errors carry their meaning: each knows the HTTP status and problem title it maps to."""

from __future__ import annotations


class DomainError(Exception):
    status: int = 400
    title: str = "Bad request"

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class InvalidInput(DomainError):
    status = 400
    title = "Invalid input"


class NotFound(DomainError):
    status = 404
    title = "Not found"


class Conflict(DomainError):
    status = 409
    title = "Conflict"


class TooLarge(DomainError):
    status = 413
    title = "Request too large"


class Unauthorized(DomainError):
    status = 401
    title = "Unauthorized"


class Forbidden(DomainError):
    status = 403
    title = "Forbidden"


class TooManyRequests(DomainError):
    status = 429
    title = "Too many requests"

    def __init__(self, detail: str, *, retry_after_s: int, field: str | None = None) -> None:
        super().__init__(detail, field=field)
        self.retry_after_s = retry_after_s


class Unavailable(DomainError):
    status = 503
    title = "Service unavailable"

    def __init__(self, detail: str, *, retry_after_s: int | None = None, field: str | None = None) -> None:
        super().__init__(detail, field=field)
        self.retry_after_s = retry_after_s


class InvalidTransition(DomainError):
    """A state change the transition table does not allow: a bug, never a client's fault."""

    status = 500
    title = "Invalid state transition"


class ConfigError(Exception):
    """A broken configuration, profile, catalogue or plug-in: stops the start with a message naming it."""

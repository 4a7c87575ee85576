"""Issue 16, item 2: a 500 wrote the request's headers, bearer token included, into the error record (the
traceback's local variables). Secrets never reach a log, in either log format: not the Authorization
header, not cookies, not a token a message or an exception happens to carry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi import Depends, FastAPI, Request

from carousel.api.context import current_caller
from carousel.config import Settings
from carousel.logging import LogFormat
from tests.integration.security.conftest import LogCapture, ServiceFactory, assert_problem

COOKIE = "session-cookie-value-6b1d0c"
CRASH_LOG_BYTES_AT_MOST = 32_000  # one crash's records; they were about 256 KB with the locals


def _crashing_route(app: FastAPI) -> None:
    """A route that fails after authentication, holding the request (and its headers) in its frames."""

    @app.get("/api/native/v1/crash", dependencies=[Depends(current_caller)])
    def crash(request: Request) -> dict[str, Any]:
        headers = dict(request.headers)
        raise RuntimeError(f"the route failed while handling {len(headers)} headers")


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_a_500_writes_no_token_and_no_cookie_to_the_log(
    start_service: ServiceFactory, capture_logs: Callable[[LogFormat], LogCapture], log_format: LogFormat
) -> None:
    logs = capture_logs(log_format)
    service = start_service(extend_app=_crashing_route)
    jwt = service.jwt()
    for token in (service.alice_token, jwt):
        with service.client(token, cookies={"session": COOKIE}) as client:
            response = client.get("/api/native/v1/crash")
        assert_problem(response, 500)
    text = logs.text()
    assert "the route failed while handling" in text  # the error is logged...
    for secret in (service.alice_token, jwt, jwt.split(".")[2], COOKIE):
        assert secret not in text  # ...its secrets are not
    assert len(text.encode()) < 2 * CRASH_LOG_BYTES_AT_MOST


def test_a_token_in_a_log_message_is_masked(capture_logs: Callable[[LogFormat], LogCapture]) -> None:
    logs = capture_logs("json")
    jwt_like = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXRoYXQtaXMtbG9uZw"
    logging_user = __import__("logging").getLogger("tests.security")
    logging_user.warning("call failed: Authorization: Bearer s3cr3t-static-token-value")
    logging_user.warning("token seen: %s", jwt_like)
    logging_user.warning("headers", extra={"authorization": "Bearer abc", "cookie": COOKIE, "secret": "x1y2"})
    text = logs.text()
    for secret in ("s3cr3t-static-token-value", jwt_like, COOKIE, "x1y2"):
        assert secret not in text
    assert text.count("[redacted]") >= 4


def test_the_settings_repr_shows_no_database_password() -> None:
    settings = Settings(database_url="postgresql+psycopg://carousel:hunter2-db-password@db.example/carousel")
    assert "hunter2-db-password" not in repr(settings)
    assert "hunter2-db-password" not in str(settings)

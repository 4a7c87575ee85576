"""Which calls end with an INFO `http request` line: not answered polls and probes (every client asks every
second or so), always refusals and errors, and every write."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from carousel.api.request_context import RequestContext
from carousel.observability.metrics import ServiceMetrics


async def _no_app(scope: object, receive: object, send: object) -> None:
    return None


@pytest.mark.parametrize(
    ("method", "route", "status", "level"),
    [
        ("GET", "/api/v1/stage/{request_id}", 200, logging.DEBUG),
        ("GET", "/api/native/v1/requests/{request_id}", 200, logging.DEBUG),
        ("GET", "/api/native/v1/requests/{request_id}/files", 200, logging.DEBUG),
        ("GET", "/readyz", 200, logging.DEBUG),
        ("GET", "/api/v1/stage/{request_id}", 404, logging.INFO),  # a refusal is worth a line
        ("DELETE", "/api/v1/stage/{request_id}", 200, logging.INFO),  # a write, on a poll's route
        ("POST", "/api/v1/stage", 201, logging.INFO),
        ("GET", "/api/native/v1/requests", 200, logging.INFO),  # a listing is not a poll
    ],
)
def test_polls_and_probes_answered_are_debug_the_rest_info(
    method: str, route: str, status: int, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    middleware = RequestContext(_no_app, metrics=ServiceMetrics())
    scope = {"type": "http", "method": method, "path": route, "route": SimpleNamespace(path=route)}
    with caplog.at_level(logging.DEBUG, logger="carousel.http"):
        middleware._record(scope, status, 0.01)
    [record] = [r for r in caplog.records if r.name == "carousel.http"]
    assert record.levelno == level

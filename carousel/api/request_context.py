"""Every HTTP request gets an id (the caller's X-Request-ID when it is a sane one, else a new one), bound to
every log record written while it is answered and sent back in the response's X-Request-ID; and it is
counted and timed in the metrics by route template (never by raw path, which would grow without bound).

A plain ASGI middleware, so the bound id reaches the routes run in the thread pool (they run in a copy of
this context) and streaming responses are not buffered.
"""

from __future__ import annotations

import logging
import re
import time
import uuid

import structlog
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from carousel.observability.metrics import ServiceMetrics

# The standard library's logger: silent below WARNING until configure_logging routes it (tests, embedding).
log = logging.getLogger("carousel.http")

HEADER = "X-Request-ID"
# What a caller's id may be to be kept: short, and safe to log and echo.
_ACCEPTABLE = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")
UNMATCHED = "unmatched"  # the route label of requests no route matched (404s)
# Asked every few seconds by probes and scrapers: logged at DEBUG, so INFO shows what people and clients do.
FREQUENT = frozenset({"/healthz", "/readyz", "/metrics"})
# Status polls, answered: every client asks every second or so (gfal2, FTS), and a line per poll was a
# measurable share of a poll's cost and of the log. Logged at DEBUG too; refusals and errors stay at INFO.
POLLS = frozenset(
    {
        "/api/v1/stage/{request_id}",
        "/api/v1/stage/{request_id}/",
        "/api/native/v1/requests/{request_id}",
        "/api/native/v1/requests/{request_id}/files",
    }
)


def request_id_from(headers: Headers) -> str:
    given = headers.get(HEADER)
    if given is not None and _ACCEPTABLE.match(given):
        return given
    return uuid.uuid4().hex


class RequestContext:
    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_id_from(Headers(scope=scope))
        status = 500  # what a response that never started amounts to
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message)[HEADER] = request_id
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=request_id):
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                self._record(scope, status, time.perf_counter() - started)

    def _record(self, scope: Scope, status: int, elapsed_s: float) -> None:
        route = getattr(scope.get("route"), "path", None) or UNMATCHED
        method = str(scope.get("method", "?"))
        self.metrics.http_requests.labels(method=method, route=route, status=str(status)).inc()
        self.metrics.http_seconds.labels(method=method, route=route).observe(elapsed_s)
        quiet = status < 400 and (route in FREQUENT or (route in POLLS and method == "GET"))
        level = logging.DEBUG if quiet else logging.INFO
        if not log.isEnabledFor(level):  # nothing built for a line that is not written
            return
        fields = {
            "method": method,
            "path": scope.get("path"),
            "route": route,
            "status": status,
            "elapsed_ms": round(elapsed_s * 1000, 1),
        }
        log.log(level, "http request", extra=fields)

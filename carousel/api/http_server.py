"""The HTTP server's own limits, which uvicorn lacks: a connection cap, a deadline for a request's headers,
and a cap on their size. The body's deadline and size are the application's (carousel.api.body_limit).

uvicorn closes an idle connection only after a response (keep-alive), accepts every connection, and with
httptools keeps every header byte it is sent: a client that opens connections and sends nothing, or a header
a byte at a time, holds a file descriptor and memory for ever, and enough of them leave no descriptor for
the clients that behave. Here, on uvicorn's httptools protocol:

- past max_connections, a new connection is answered 503 problem+json with Retry-After and closed at once;
- a request's line and headers must have arrived within header_timeout_s of the connection's opening or of
  the previous response on it, else 408 and the connection is closed;
- over max_header_bytes of line and headers, 431 and the connection is closed.

Its answers are written on the socket directly: no request has reached the application.
"""

from __future__ import annotations

import asyncio
import json
import resource
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from carousel.api.problems import PROBLEM_JSON
from carousel.config import HttpLimits, Settings
from carousel.observability.metrics import ServiceMetrics

# Open files the process needs besides its client connections: database connections, the listening socket,
# logs, the SQLite file and its journal, the event loop's own.
OPEN_FILES_RESERVE = 100
FULL_RETRY_AFTER_S = 1


def raw_problem(status: int, detail: str, headers: dict[str, str] | None = None) -> bytes:
    """A whole HTTP/1.1 problem+json response that closes its connection."""
    phrase = HTTPStatus(status).phrase
    body = json.dumps({"type": "about:blank", "title": phrase, "status": status, "detail": detail}).encode()
    lines = [f"HTTP/1.1 {status} {phrase}", f"content-type: {PROBLEM_JSON}", f"content-length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines.append("connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body


def guarded_protocol(
    limits: HttpLimits, on_cut: Callable[[str], None] = lambda reason: None
) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with `limits` on connections and headers; `on_cut` hears the reason of
    every connection closed for them (`full`, `slow_headers`, `large_headers`)."""

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        _header_deadline: asyncio.TimerHandle | None = None
        _header_bytes = 0
        _awaiting_headers = True

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections:
                detail = (
                    f"the service holds its maximum of {limits.max_connections} connections; retry shortly"
                )
                self._answer_and_close(503, detail, {"retry-after": str(FULL_RETRY_AFTER_S)})
                on_cut("full")
                return
            self._await_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_header_deadline()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            waited = self._awaiting_headers
            super().data_received(data)
            # Counted once parsed: a piece in which the headers ended is not counted (its body part would
            # be), and it is at most one read of the socket, which asyncio bounds.
            if waited and self._awaiting_headers and not self.transport.is_closing():
                self._header_bytes += len(data)
                if self._header_bytes > limits.max_header_bytes:
                    detail = f"the request line and headers are over {limits.max_header_bytes} bytes"
                    self._answer_and_close(431, detail)
                    on_cut("large_headers")

        def on_headers_complete(self) -> None:
            self._awaiting_headers = False
            self._cancel_header_deadline()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and not self.pipeline:
                self._await_headers()  # the next request's headers, within the deadline too

        def _await_headers(self) -> None:
            self._awaiting_headers = True
            self._header_bytes = 0
            self._cancel_header_deadline()
            self._header_deadline = self.loop.call_later(limits.header_timeout_s, self._headers_too_slow)

        def _cancel_header_deadline(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _headers_too_slow(self) -> None:
            self._header_deadline = None
            if self._awaiting_headers and not self.transport.is_closing():
                detail = f"the request's headers did not arrive within {limits.header_timeout_s:g} s"
                self._answer_and_close(408, detail)
                on_cut("slow_headers")

        def _answer_and_close(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
            self._cancel_header_deadline()
            self._awaiting_headers = False
            self.transport.write(raw_problem(status, detail, headers))
            self.transport.close()

    return GuardedHttpToolsProtocol


def server_config(app: Any, settings: Settings, metrics: ServiceMetrics) -> uvicorn.Config:
    """uvicorn's configuration for the service: its limits (each cut connection counted in `metrics`), and
    logs through the process's handler."""
    limits = settings.http

    def count(reason: str) -> None:
        metrics.connections_cut.labels(reason=reason).inc()

    return uvicorn.Config(
        app,
        http=guarded_protocol(limits, count),
        timeout_keep_alive=limits.keep_alive_s,
        log_level="warning",
        log_config=None,  # uvicorn's records go through the process's structlog handler
        # The client address stays the socket's peer, which is what decides whether a forwarded X.509
        # subject comes from a trusted proxy (docs/security.md).
        proxy_headers=False,
    )


def open_files_for(limits: HttpLimits) -> int:
    """Makes room for max_connections in the process's open-file limit, raising the soft limit up to the hard
    one when it must; returns the soft limit, which the caller checks."""
    needed = limits.max_connections + OPEN_FILES_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        soft = raised
    return int(soft)

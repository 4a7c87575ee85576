"""Request bodies read with bounds on size, time and memory, whatever the route; each refusal is problem+json
and closes the connection (the rest of the body is never read):

- 413 at once when the declared Content-Length is over max_body_bytes (nothing is read), else as soon as
  the chunks read pass it;
- 408 when the whole body has not arrived within body_timeout_s of the headers (a client trickling bytes
  holds no connection and no memory for longer);
- 503 with Retry-After when the bodies held at once, over every request, would pass the shared
  BodyBudget: memory stays bounded however many large bodies come together.

The body is read whole before the application runs (the routes parse whole bodies anyway), then handed on
chunk by chunk, each dropped here once handed, so it is held once. Its bytes count against the budget until
the route has answered (its parsed form lives as long).
"""

from __future__ import annotations

from collections import deque

import anyio
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from carousel.api.problems import problem_response

BUDGET_RETRY_AFTER_S = 5
# what came of reading a body
_WHOLE, _GONE, _TOO_LARGE, _OVER_BUDGET, _TOO_SLOW = "whole", "gone", "too large", "over budget", "too slow"


class BodyBudget:
    """Bytes of request bodies the process holds at once. Used from the event loop only: no lock."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.held = 0

    def take(self, size: int) -> bool:
        if self.held + size > self.max_bytes:
            return False
        self.held += size
        return True

    def give_back(self, size: int) -> None:
        self.held -= size


class BodyLimit:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, timeout_s: float, budget: BodyBudget) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.timeout_s = timeout_s
        self.budget = budget

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large(scope, receive, send)
            return

        chunks: deque[bytes] = deque()
        try:
            with anyio.fail_after(self.timeout_s):
                outcome = await self._read(receive, chunks)
        except TimeoutError:
            outcome = _TOO_SLOW
        held = sum(len(chunk) for chunk in chunks)
        if outcome is not _WHOLE:
            chunks.clear()
            self.budget.give_back(held)
            await self._refuse(outcome, scope, receive, send)
            return

        async def replay() -> Message:
            if chunks:
                chunk = chunks.popleft()
                return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}
            return await receive()  # after the body: the disconnect, when it comes

        try:
            await self.app(scope, replay, send)
        finally:
            chunks.clear()
            self.budget.give_back(held)

    async def _read(self, receive: Receive, chunks: deque[bytes]) -> str:
        """Reads the body into `chunks`, each taken from the budget; what came of it."""
        held = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return _GONE
            chunk = message.get("body", b"")
            if held + len(chunk) > self.max_body_bytes:
                return _TOO_LARGE
            if not self.budget.take(len(chunk)):
                return _OVER_BUDGET
            held += len(chunk)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return _WHOLE

    async def _refuse(self, outcome: str, scope: Scope, receive: Receive, send: Send) -> None:
        if outcome == _TOO_LARGE:
            await self._too_large(scope, receive, send)
        elif outcome == _OVER_BUDGET:
            detail = "the service holds as many request bodies as it may at once; try again shortly"
            retry = {"Retry-After": str(BUDGET_RETRY_AFTER_S)}
            await _refuse(scope, receive, send, status=503, detail=detail, headers=retry)
        elif outcome == _TOO_SLOW:
            detail = f"the request body did not arrive within {self.timeout_s:g} s of its headers"
            await _refuse(scope, receive, send, status=408, detail=detail)
        # _GONE: the client left, nobody to answer

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = f"the request body is over the limit of {self.max_body_bytes} bytes"
        await _refuse(scope, receive, send, status=413, detail=detail)


async def _refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    status: int,
    detail: str,
    headers: dict[str, str] | None = None,
) -> None:
    response = problem_response(status, detail=detail, headers={**(headers or {}), "Connection": "close"})
    await response(scope, receive, send)

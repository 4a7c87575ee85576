"""Database trouble, as the API's clients should see it.

- A request whose transaction PostgreSQL rolled back for a deadlock or a serialization failure is run again
  whole (the route, its session dependency, its commit), a few times after short random pauses
  (carousel.db.transient_errors). A route's work is one transaction committed before its response starts, so
  nothing of a lost attempt remains and the client sees one answer. The retry sits here, around the route,
  because a session dependency cannot run its route again.
- A database that does not answer (down, restarting, connections broken, pool exhausted) is 503 problem+json
  with Retry-After, not a 500: the client should come back, and the service recovers by itself (the engine
  checks pooled connections before use, so the first request after the database is back gets a fresh one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog
from sqlalchemy.exc import SQLAlchemyError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from carousel.api.problems import problem_response
from carousel.db.transient_errors import ATTEMPTS, RETRY_AFTER_S, async_retrying, database_unavailable

log = structlog.get_logger(__name__)


class DatabaseErrors:
    def __init__(
        self,
        app: ASGIApp,
        *,
        attempts: int = ATTEMPTS,
        retry_after_s: int = RETRY_AFTER_S,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.app = app
        self.attempts = attempts
        self.retry_after_s = retry_after_s
        self.sleep = sleep

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await _whole_body(receive)
        if body is None:
            return  # the client left
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            async for attempt in async_retrying(
                attempts=self.attempts, also_if=lambda: not started, sleep=self.sleep
            ):
                with attempt:
                    await self.app(scope, _replay(body, receive), tracking)
        except SQLAlchemyError as exc:
            if started or not database_unavailable(exc):
                raise
            log.warning("database unavailable: 503", path=scope.get("path"), error=type(exc).__name__)
            response = problem_response(
                503,
                detail="the database does not answer now; try again shortly",
                headers={"Retry-After": str(self.retry_after_s)},
            )
            await response(scope, receive, send)


async def _whole_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect, when it comes

    return replay

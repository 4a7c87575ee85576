"""A request that carries a body is authenticated, and charged to the rate limits, before a byte of its body
is read: a client without valid credentials (401) or over its rate (429) costs the service its headers only,
never the memory and parsing of its body. The answer closes the connection; the rest of the body is dropped
unread.

Every route that takes a body needs a caller, so nothing is refused here that a route would have let in.
The caller is kept in the request's scope, and `current_caller` takes it from there instead of asking again.
Requests without a body are left to the routes (health, metrics and discovery need no credentials).
"""

from __future__ import annotations

from functools import partial

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from carousel.api.auth import CALLER_IN_SCOPE, identify
from carousel.api.problems import domain_problem
from carousel.domain.errors import DomainError


def carries_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    if length is not None:
        return length.strip() not in ("", "0")
    return "chunked" in headers.get("transfer-encoding", "").lower()


class AuthenticateFirst:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not carries_body(headers):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        state = scope["app"].state
        # in a worker thread, as the routes' own dependency would: a JWT may need its issuer's keys fetched
        who = partial(identify, state, headers, client[0] if client else None)
        try:
            caller = await anyio.to_thread.run_sync(who)
        except DomainError as exc:
            await domain_problem(exc, {"Connection": "close"})(scope, receive, send)
            return
        scope.setdefault("state", {})[CALLER_IN_SCOPE] = caller
        await self.app(scope, receive, send)

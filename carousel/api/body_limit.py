"""Refuse a body whose declared length is over the limit before reading any of it, with problem+json,
whatever the route. Bodies without a Content-Length are counted as they arrive by FastAPI's own limit."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from carousel.api.problems import problem_response


class ContentLengthLimit:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            declared = Headers(scope=scope).get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
                response = problem_response(
                    413,
                    detail=f"the request body is over the limit of {self.max_body_bytes} bytes",
                    headers={"Connection": "close"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

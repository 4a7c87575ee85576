"""BodyLimit's shared budget: bodies held at once never pass it, a body over what is left is refused 503 with
Retry-After (its bytes given back), and every body's bytes are given back once its route has answered, so
the budget never leaks whatever the outcome (answered, refused, too large, client gone)."""

from __future__ import annotations

import asyncio

import pytest
from starlette.types import Message, Receive, Scope, Send

from carousel.api.body_limit import BodyBudget, BodyLimit

KB = 1024


class Route:
    """An ASGI app that reads the whole body, then waits for `release` before answering 200."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.read = asyncio.Event()
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.bodies.append(body)
        self.read.set()
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def scope_of(size: int | None) -> Scope:
    headers = [] if size is None else [(b"content-length", str(size).encode())]
    return {"type": "http", "method": "POST", "path": "/", "headers": headers}


async def call(app: BodyLimit, chunks: list[bytes], *, declared: bool = True) -> tuple[int, dict[str, str]]:
    """Sends `chunks` as the body; the answer's status and headers."""
    pending = list(chunks)
    sent: list[Message] = []

    async def receive() -> Message:
        if pending:
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending)}
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    size = sum(len(c) for c in chunks) if declared else None
    await app(scope_of(size), receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], headers


def limited(route: Route, budget: BodyBudget, max_body: int = 100 * KB) -> BodyLimit:
    return BodyLimit(route, max_body_bytes=max_body, timeout_s=60, budget=budget)


def test_a_body_that_does_not_fit_beside_another_is_refused_until_it_does() -> None:
    async def scenario() -> None:
        budget = BodyBudget(100 * KB)
        first_route, second_route = Route(), Route()
        first = asyncio.create_task(call(limited(first_route, budget), [b"a" * 30 * KB, b"a" * 30 * KB]))
        await first_route.read.wait()
        assert budget.held == 60 * KB  # held while its route runs

        status, headers = await call(limited(second_route, budget), [b"b" * 30 * KB, b"b" * 30 * KB])
        assert (status, headers["retry-after"], headers["connection"]) == (503, "5", "close")
        assert second_route.bodies == []  # never reached its route
        assert budget.held == 60 * KB  # the refused body's bytes given back

        first_route.release.set()
        assert (await first)[0] == 200
        assert first_route.bodies == [b"a" * 60 * KB]
        assert budget.held == 0

        second_route.release.set()  # now it fits
        assert (await call(limited(second_route, budget), [b"b" * 60 * KB]))[0] == 200
        assert budget.held == 0

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("chunks", "declared", "status"),
    [
        ([b"x" * 60 * KB, b"x" * 60 * KB], True, 413),  # declared too large: nothing read
        ([b"x" * 60 * KB, b"x" * 60 * KB], False, 413),  # chunked, passes the limit while read
        ([b"x" * 10 * KB], True, None),  # the client goes away before its body ends (no answer)
    ],
)
def test_every_outcome_gives_the_budget_back(chunks: list[bytes], declared: bool, status: int | None) -> None:
    async def scenario() -> None:
        budget = BodyBudget(200 * KB)
        route = Route()
        route.release.set()
        app = limited(route, budget)
        if status is None:

            async def gone_midway() -> Message:
                if not sent_first:
                    sent_first.append(True)
                    return {"type": "http.request", "body": chunks[0], "more_body": True}
                return {"type": "http.disconnect"}

            sent_first: list[bool] = []

            async def no_send(_: Message) -> None:
                raise AssertionError("nobody to answer")

            await app(scope_of(None), gone_midway, no_send)
        else:
            assert (await call(app, chunks, declared=declared))[0] == status
        assert budget.held == 0
        assert route.bodies == []

    asyncio.run(scenario())

"""The API's answer to database trouble: a request lost to a deadlock is run again whole (body and all), a
database that does not answer is 503 problem+json with Retry-After, anything else is left alone."""

from __future__ import annotations

import asyncio

import httpx
import psycopg
import psycopg.errors
import pytest
from fastapi import FastAPI, Request
from sqlalchemy.exc import IntegrityError, OperationalError

from carousel.api.db_errors import DatabaseErrors
from carousel.api.problems import PROBLEM_JSON, install_problem_handlers


def deadlock() -> OperationalError:
    return OperationalError("UPDATE files ...", {}, psycopg.errors.DeadlockDetected("deadlock detected"))


def refused() -> OperationalError:
    return OperationalError("SELECT 1", {}, psycopg.OperationalError("connection failed: Connection refused"))


class Failing:
    """A route that raises the given errors, one per call, then answers with what it was sent."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.bodies: list[bytes] = []

    async def __call__(self, request: Request) -> dict[str, str]:
        self.bodies.append(await request.body())
        if self.errors:
            raise self.errors.pop(0)
        return {"got": self.bodies[-1].decode()}


def post(route: Failing, body: bytes, *, attempts: int = 5) -> httpx.Response:
    app = FastAPI()
    install_problem_handlers(app)
    app.add_api_route("/work", route, methods=["POST"])

    async def no_pause(_: float) -> None:
        return None

    app.add_middleware(DatabaseErrors, attempts=attempts, sleep=no_pause)

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://carousel.test") as client:
            return await client.post("/work", content=body)

    return asyncio.run(call())


def test_a_request_lost_to_deadlocks_is_run_again_with_its_body() -> None:
    route = Failing(deadlock(), deadlock())
    answer = post(route, b'{"paths": ["/a"]}')
    assert answer.status_code == 200
    assert answer.json() == {"got": '{"paths": ["/a"]}'}
    assert route.bodies == [b'{"paths": ["/a"]}'] * 3


def test_deadlocks_that_never_end_become_503_after_the_last_attempt() -> None:
    route = Failing(*(deadlock() for _ in range(10)))
    answer = post(route, b"x", attempts=3)
    assert answer.status_code == 503
    assert len(route.bodies) == 3


def test_a_database_that_does_not_answer_is_503_problem_json_with_retry_after() -> None:
    route = Failing(refused())
    answer = post(route, b"x")
    assert answer.status_code == 503
    assert answer.headers["content-type"] == PROBLEM_JSON
    assert answer.headers["retry-after"] == "5"
    problem = answer.json()
    assert problem["status"] == 503 and "database" in problem["detail"]
    assert len(route.bodies) == 1  # not retried here: the client comes back


@pytest.mark.parametrize(
    "error",
    [IntegrityError("INSERT ...", {}, psycopg.errors.UniqueViolation("duplicate")), ValueError("bug")],
)
def test_other_errors_are_left_to_the_500_handler(error: Exception) -> None:
    route = Failing(error)
    answer = post(route, b"x")
    assert answer.status_code == 500
    assert len(route.bodies) == 1

"""A crowd of simultaneous requests, more than the worker threads and the connection pool hold, all get
their answer: requests wait for a database slot in the event loop, not in a thread holding nothing."""

from __future__ import annotations

import anyio
import httpx
import pytest
from sqlalchemy.engine import URL

from carousel.api.app import create_app
from carousel.config import Settings
from carousel.db.engine import make_engine, make_session_factory
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.api.conftest import BASE_URL

CROWD = 150  # above anyio's 40 worker threads and SQLAlchemy's 15 pooled connections


@pytest.mark.parametrize("fresh_database_url", ["postgresql"], indirect=True)
def test_a_crowd_larger_than_the_pool_is_served(
    fresh_database_url: URL, library: SimulatedAdapter, library_paths: list[str], clock: ManualClock
) -> None:
    engine = make_engine(fresh_database_url, pool_timeout=10)  # a deadlock would fail here, not hang long
    app = create_app(Settings(), adapter=library, clock=clock, session_factory=make_session_factory(engine))
    statuses: list[int] = []

    async def crowd() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL, timeout=60) as client:

            async def one(index: int) -> None:
                path = library_paths[index % len(library_paths)]
                response = await client.post("/api/native/v1/requests", json={"paths": [path]})
                statuses.append(response.status_code)

            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    for index in range(CROWD):
                        group.start_soon(one, index)

    try:
        anyio.run(crowd)
    finally:
        engine.dispose()
    assert statuses == [201] * CROWD

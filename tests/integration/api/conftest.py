"""The API over real databases and the simulated library, called in-process through httpx.

`api` is a synchronous httpx-like client: an httpx.AsyncClient on httpx.ASGITransport driven through an
anyio blocking portal, so tests (and hypothesis) stay plain functions. Application errors are raised, not
turned into 500s, so a crash fails the test that caused it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastapi import FastAPI
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.api.app import create_app
from carousel.config import Limits, Settings
from carousel.config.auth import AuthSettings
from carousel.db.models import QueuedFileRow, RequestFile, StageRequest
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from tests.tokens import static_token

BASE_URL = "http://carousel.test:8000"
LIBRARY_OPTIONS: dict[str, Any] = {
    "profile": "lto8",
    "drives": 2,
    "catalogue": {"generate": {"seed": 7, "cartridges": 20, "files_per_cartridge": 10}},
    "scale": 100.0,
}


class SyncApi:
    """Blocking calls into the ASGI app."""

    def __init__(self, portal: BlockingPortal, client: httpx.AsyncClient) -> None:
        self._portal = portal
        self._client = client

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        response: httpx.Response = self._portal.call(partial(self._client.request, method, url, **kwargs))
        return response

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", url, **kwargs)


@pytest.fixture
def library(clock: ManualClock) -> Iterator[SimulatedAdapter]:
    adapter = build_simulated_adapter(LIBRARY_OPTIONS, clock)
    yield adapter
    adapter.close()


@pytest.fixture
def library_paths(library: SimulatedAdapter) -> list[str]:
    return list(library.library.catalogue)


@pytest.fixture
def make_app(
    library: SimulatedAdapter, clock: ManualClock, session_factory: sessionmaker[Session]
) -> Callable[..., FastAPI]:
    def make(**settings: Any) -> FastAPI:
        limits = settings.pop("limits", {})
        return create_app(
            Settings(limits=Limits(**limits), **settings),
            adapter=library,
            clock=clock,
            session_factory=session_factory,
        )

    return make


@pytest.fixture
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as portal:
        yield portal


@pytest.fixture
def make_api(portal: BlockingPortal, make_app: Callable[..., FastAPI]) -> Iterator[Callable[..., SyncApi]]:
    clients: list[httpx.AsyncClient] = []

    def make(**settings: Any) -> SyncApi:
        transport = httpx.ASGITransport(app=make_app(**settings))
        client = httpx.AsyncClient(transport=transport, base_url=BASE_URL)
        clients.append(client)
        return SyncApi(portal, client)

    yield make
    for client in clients:
        portal.call(client.aclose)


@pytest.fixture
def api(make_api: Callable[..., SyncApi]) -> SyncApi:
    return make_api()


class Bearer:
    """Calls with one token."""

    def __init__(self, api: SyncApi, token: str) -> None:
        self.api, self.headers = api, {"Authorization": f"Bearer {token}"}

    def get(self, url: str, **kwargs: Any) -> Any:
        return self.api.get(url, headers=self.headers, **kwargs)

    def post(self, url: str, **kwargs: Any) -> Any:
        return self.api.post(url, headers=self.headers, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> Any:
        return self.api.delete(url, headers=self.headers, **kwargs)

    def stage(self, paths: list[str]) -> str:
        response = self.post("/api/v1/stage", json={"files": [{"path": p} for p in paths]})
        assert response.status_code == 201, response.text
        request_id: str = response.json()["requestId"]
        return request_id


def admin_on(make_api: Callable[..., SyncApi], policy: str = "fifo") -> Bearer:
    """An API with anonymous access off (policy `policy`), and a caller with the admin role."""
    token, entry = static_token("ops", admin=True)
    return Bearer(make_api(anonymous=False, auth=AuthSettings(static_tokens=(entry,)), policy=policy), token)


@pytest.fixture
def admin(make_api: Callable[..., SyncApi]) -> Bearer:
    return admin_on(make_api)


@dataclass(frozen=True)
class RowCounts:
    requests: int
    files: int
    links: int


@pytest.fixture
def row_counts(session_factory: sessionmaker[Session]) -> Callable[[], RowCounts]:
    def count() -> RowCounts:
        with session_factory() as session:
            return RowCounts(
                requests=session.scalar(select(func.count()).select_from(StageRequest)) or 0,
                files=session.scalar(select(func.count()).select_from(QueuedFileRow)) or 0,
                links=session.scalar(select(func.count()).select_from(RequestFile)) or 0,
            )

    return count


def stage(api: SyncApi, paths: list[str], **extra: Any) -> str:
    response = api.post("/api/v1/stage", json={"files": [{"path": p} for p in paths], **extra})
    assert response.status_code == 201, response.text
    request_id: str = response.json()["requestId"]
    return request_id


def assert_problem(
    response: httpx.Response, status: int, *, field: str | None = None, says: str = ""
) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["title"]
    assert body["type"]
    if field is not None:
        assert body.get("field") == field, body
    if says:
        assert says in body.get("detail", ""), body

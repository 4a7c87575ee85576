"""Liveness, readiness (database and schema) and the OpenAPI documents."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from anyio.from_thread import BlockingPortal
from sqlalchemy.engine import URL

from carousel.api.app import create_app
from carousel.config import Settings
from carousel.db.engine import make_engine, make_session_factory
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.api.conftest import SyncApi


def test_healthz_and_readyz(api: SyncApi) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    assert api.get("/readyz").json() == {"status": "ready"}


@pytest.fixture
def api_on_empty_database(
    empty_database_url: URL, library: SimulatedAdapter, clock: ManualClock, portal: BlockingPortal
) -> Iterator[SyncApi]:
    engine = make_engine(empty_database_url)
    app = create_app(Settings(), adapter=library, clock=clock, session_factory=make_session_factory(engine))
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carousel.test")
    yield SyncApi(portal, client)
    portal.call(client.aclose)
    engine.dispose()


def test_readyz_names_a_stale_schema(api_on_empty_database: SyncApi) -> None:
    response = api_on_empty_database.get("/readyz")
    assert response.status_code == 503
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "run `carousel db upgrade`" in response.json()["detail"]
    assert api_on_empty_database.get("/healthz").status_code == 200


def test_openapi_documents_both_apis(api: SyncApi) -> None:
    assert api.get("/docs").status_code == 200
    spec = api.get("/openapi.json").json()
    paths = spec["paths"]
    for path in (
        "/api/v1/stage",
        "/api/v1/stage/{request_id}",
        "/api/v1/stage/{request_id}/cancel",
        "/api/v1/release/{request_id}",
        "/api/v1/archiveinfo",
        "/api/native/v1/requests",
        "/api/native/v1/requests/{request_id}/files",
        "/.well-known/wlcg-tape-rest-api",
    ):
        assert path in paths, path
    status = paths["/api/v1/stage/{request_id}"]["get"]["responses"]["200"]["content"]["application/json"]
    assert status["schema"]["$ref"].endswith("StageStatusOut")

"""One recorded history per database back-end for the whole session (the report, dashboard and metrics
tests only read it; a test that adds to it recomputes what it expects from the rows). Its cycles are counted
in `recorded.metrics`, as `carousel serve` counts its own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from anyio.from_thread import start_blocking_portal
from fastapi import FastAPI
from sqlalchemy import Engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from carousel.api.app import create_app
from carousel.config import Settings
from carousel.db.engine import make_engine, make_session_factory
from carousel.domain.clock import ManualClock
from carousel.observability.cycles import observed
from carousel.observability.metrics import ServiceMetrics
from tests.conftest import EPOCH
from tests.integration.api.conftest import SyncApi
from tests.integration.conftest import BACKENDS, PostgresDatabases
from tests.integration.reports.history import History, make_history


@dataclass
class Recorded:
    backend: str
    url: URL
    engine: Engine
    factory: sessionmaker[Session]
    clock: ManualClock
    history: History
    metrics: ServiceMetrics


@pytest.fixture(scope="session", params=BACKENDS)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    databases: PostgresDatabases | None = None
    if request.param == "postgresql":
        databases = request.getfixturevalue("postgres_databases")
        url = databases.create("history", template=request.getfixturevalue("postgres_template"))
    else:
        template: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path_factory.mktemp("history") / "history.sqlite3"
        shutil.copyfile(template, path)
        url = make_url(f"sqlite:///{path}")
    engine = make_engine(url)
    factory = make_session_factory(engine)
    clock = ManualClock(EPOCH)
    metrics = ServiceMetrics()
    history = make_history(factory, clock, runner=lambda cycle: observed(cycle.run_once, metrics))
    yield Recorded(request.param, url, engine, factory, clock, history, metrics)
    history.adapter.close()
    engine.dispose()
    if databases is not None:
        databases.drop(url)


@contextmanager
def client(app: FastAPI) -> Iterator[SyncApi]:
    """Blocking calls into an app in this process (httpx over ASGI, driven through an anyio portal)."""
    with start_blocking_portal() as portal:
        async_client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://carousel.test"
        )
        try:
            yield SyncApi(portal, async_client)
        finally:
            portal.call(async_client.aclose)


def app_for(recorded: Recorded, *, shared_metrics: bool = True) -> FastAPI:
    """The service's app over the recorded history (its metrics those the history's cycles fed, or new)."""
    return create_app(
        Settings(),
        adapter=recorded.history.adapter,
        clock=recorded.clock,
        session_factory=recorded.factory,
        metrics=recorded.metrics if shared_metrics else None,
    )

"""The app for schemathesis: a fresh migrated PostgreSQL database (the strictest of the two backends: it
refuses text SQLite takes), the simulated library, anonymous calls on so generated calls reach every route."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from sqlalchemy import make_url

from carousel.api.app import create_app
from carousel.config import BufferSettings, Settings
from carousel.db.engine import make_engine, make_session_factory, upgrade_to_head
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.integration.conftest import ADMIN_URL_ENV, DEFAULT_ADMIN_URL, PostgresDatabases

LIBRARY: dict[str, Any] = {
    "profile": "lto8",
    "drives": 2,
    "catalogue": {"generate": {"seed": 3, "cartridges": 5, "files_per_cartridge": 10}},
    "scale": 100.0,
}


def fuzzed_settings(buffer_directory: Path) -> Settings:
    """The settings of the fuzzed app, the disk buffer on (so its file route is fuzzed too), stated here
    rather than taken from the environment: operations are listed at collection, before the suite's own
    environment is set."""
    return Settings(anonymous=True, buffer=BufferSettings(enabled=True, directory=buffer_directory))


@pytest.fixture(scope="module")
def fuzzed_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    databases = PostgresDatabases(
        make_url(os.environ.get(ADMIN_URL_ENV, DEFAULT_ADMIN_URL)), f"carousel_fuzz_{os.getpid()}"
    )
    url = databases.create()
    upgrade_to_head(url)
    engine = make_engine(url)
    clock = ManualClock()
    adapter = build_simulated_adapter(LIBRARY, clock)
    try:
        yield create_app(
            fuzzed_settings(tmp_path_factory.mktemp("fuzz-buffer")),
            adapter=adapter,
            clock=clock,
            session_factory=make_session_factory(engine),
        )
    finally:
        adapter.close()
        engine.dispose()
        databases.drop_all()


@pytest.fixture(scope="module")
def api_schema(fuzzed_app: FastAPI) -> schemathesis.schemas.BaseSchema:
    return schemathesis.openapi.from_asgi("/openapi.json", fuzzed_app)

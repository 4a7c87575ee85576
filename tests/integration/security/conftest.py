"""A running service to attack: the app served by uvicorn on a loopback port (real HTTP), on a migrated
database of its own (PostgreSQL and SQLite), with anonymous calls off, a token issuer configured with an RSA
key file and the default algorithms, three static tokens (two callers without a group, an admin), and the
process's logs captured as the service writes them (JSON lines, or the console's text)."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from sqlalchemy.engine import URL

from carousel.api.app import create_app
from carousel.config import Settings
from carousel.config.auth import AuthSettings, IssuerSettings
from carousel.db.engine import make_engine, make_session_factory
from carousel.domain.clock import ManualClock
from carousel.logging import LogFormat, configure_logging
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from tests.integration.api.conftest import LIBRARY_OPTIONS
from tests.integration.live_server import serving
from tests.tokens import AUDIENCE, Issuer, static_token


@dataclass
class LogCapture:
    stream: io.StringIO

    def text(self) -> str:
        return self.stream.getvalue()


@pytest.fixture
def capture_logs() -> Iterator[Callable[[LogFormat], LogCapture]]:
    """configure_logging(format) writing to a buffer, as a service process sets it up; the logging set-up
    the test found is put back afterwards."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    named = ("uvicorn", "uvicorn.error", "uvicorn.access", "alembic", "apscheduler")
    saved_named = {
        name: (
            list(logging.getLogger(name).handlers),
            logging.getLogger(name).propagate,
            logging.getLogger(name).level,
        )
        for name in named
    }

    def capture(log_format: LogFormat) -> LogCapture:
        stream = io.StringIO()
        configure_logging(log_format, "INFO", stream)
        return LogCapture(stream)

    yield capture
    structlog.reset_defaults()
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    for name, (handlers, propagate, level) in saved_named.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.setLevel(level)


@dataclass
class Service:
    url: str
    clock: ManualClock
    issuer: Issuer  # trusted, RSA key in a PEM file, default algorithms (RS256 and ES256)
    alice_token: str  # a static token: caller "alice", no group
    bob_token: str  # a static token: caller "bob", no group
    admin_token: str  # a static token with the admin role
    library_paths: list[str]

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kwargs)

    def jwt(self, **claims: Any) -> str:
        return self.issuer.mint(self.clock.now(), **claims)


ServiceFactory = Callable[..., Service]


@pytest.fixture
def library(clock: ManualClock) -> Iterator[SimulatedAdapter]:
    adapter = build_simulated_adapter(LIBRARY_OPTIONS, clock)
    yield adapter
    adapter.close()


@pytest.fixture
def library_paths(library: SimulatedAdapter) -> list[str]:
    return list(library.library.catalogue)


@pytest.fixture(scope="module")
def rsa_issuer() -> Issuer:
    return Issuer(kind="rsa")


@pytest.fixture
def start_service(
    fresh_database_url: URL,
    library: SimulatedAdapter,
    library_paths: list[str],
    clock: ManualClock,
    rsa_issuer: Issuer,
    tmp_path: Path,
) -> Iterator[ServiceFactory]:
    """Starts the service with these settings added (at most one per test); stops it when the test ends."""
    stack = ExitStack()

    def start(*, extend_app: Callable[[Any], None] | None = None, **settings: Any) -> Service:
        alice, alice_entry = static_token("alice", groups=())
        bob, bob_entry = static_token("bob", groups=())
        admin, admin_entry = static_token("ops", admin=True)
        issuer = IssuerSettings(
            name="star",
            issuer=rsa_issuer.url,
            audiences=(AUDIENCE,),
            public_key_file=rsa_issuer.write_pem(tmp_path),
        )
        auth = AuthSettings(issuers=(issuer,), static_tokens=(alice_entry, bob_entry, admin_entry))
        engine = make_engine(fresh_database_url)
        stack.callback(engine.dispose)
        app = create_app(
            Settings(anonymous=False, auth=auth, **settings),
            adapter=library,
            clock=clock,
            session_factory=make_session_factory(engine),
        )
        if extend_app is not None:
            extend_app(app)
        url = stack.enter_context(serving(app, process_logging=True))
        return Service(url, clock, rsa_issuer, alice, bob, admin, library_paths)

    yield start
    stack.close()


def assert_problem(response: httpx.Response, status: int, *, field: str | None = None) -> dict[str, Any]:
    """A 4xx answered as problem+json (naming `field` when given); returns the body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    if field is not None:
        assert body.get("field") == field, body
    return body

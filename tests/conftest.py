"""Fixtures for every test: a manual clock, hypothesis settings that suit a shared 2-core machine, a
data directory of the session's own (no test touches the user's), and the logging each test found kept."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import structlog
from hypothesis import HealthCheck, settings

from carousel.domain.clock import ManualClock
from carousel.logging import QUIET

# Database round trips make example timings uneven; a deadline would only add flakiness.
settings.register_profile(
    "carousel", deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile("carousel")

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(EPOCH)


@pytest.fixture(autouse=True, scope="session")
def _data_dir_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CAROUSEL_DATA_DIR", str(tmp_path_factory.mktemp("data-dir")))
        # simulated test catalogues hold multi-GB files: no bytes unless a test turns the buffer on
        patch.setenv("CAROUSEL_BUFFER__ENABLED", "false")
        yield


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """A command run in-process (typer's CliRunner) configures logging for the whole process
    (carousel.logging.configure_logging): each test leaves the logging it found, so one test's level and
    handlers do not reach another's output (a served app's INFO lines in a command's one-line error)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    named = {name: logging.getLogger(name) for name in (*QUIET, "uvicorn", "uvicorn.error", "uvicorn.access")}
    kept = {name: (one.level, list(one.handlers), one.propagate) for name, one in named.items()}
    config = structlog.get_config()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, (was, its_handlers, propagates) in kept.items():
        named[name].setLevel(was)
        named[name].handlers[:] = its_handlers
        named[name].propagate = propagates
    structlog.configure(**config)

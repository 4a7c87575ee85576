"""Fixtures for every test: a manual clock, hypothesis settings that suit a shared 2-core machine, and a
data directory of the session's own (no test touches the user's)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, settings

from carousel.domain.clock import ManualClock

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

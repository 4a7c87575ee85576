"""Fixtures for every test: a manual clock, and hypothesis settings that suit a shared 2-core machine."""

from __future__ import annotations

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

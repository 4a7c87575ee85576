from datetime import UTC, datetime

import pytest

from carousel.domain.clock import ManualClock, SystemClock


def test_system_clock_is_aware_utc():
    assert SystemClock().now().tzinfo is UTC


def test_manual_clock_moves_only_forward():
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    clock.advance(90)
    assert clock.now() == datetime(2026, 3, 1, 0, 1, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="aware"):
        ManualClock(datetime(2026, 3, 1))  # noqa: DTZ001

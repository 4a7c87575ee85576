"""The cycle's test bench: a factory of simulated libraries on the test's manual clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from tests.integration.scheduler.support import SMALL_LIBRARY


@pytest.fixture
def make_adapter(clock: ManualClock) -> Iterator[Callable[..., SimulatedAdapter]]:
    made: list[SimulatedAdapter] = []

    def make(**options: Any) -> SimulatedAdapter:
        adapter = build_simulated_adapter({**SMALL_LIBRARY, **options}, clock)
        made.append(adapter)
        return adapter

    yield make
    for adapter in made:
        adapter.close()

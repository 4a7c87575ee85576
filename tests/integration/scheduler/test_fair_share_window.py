"""fair_share_window_s reaches the cycle's queue store: the drive time fair share weighs is that window's."""

from __future__ import annotations

from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.integration.scheduler.support import SMALL_LIBRARY, make_cycle
from tests.integration.scheduler.test_group_usage import at, history


def usage_groups(session_factory, **overrides) -> set[str]:
    clock = ManualClock(at(2000))
    adapter = build_simulated_adapter(SMALL_LIBRARY, clock)
    try:
        cycle = make_cycle(session_factory, adapter, clock, **overrides)
        return {u.group for u in cycle.store.demand(at(2000)).usage}
    finally:
        adapter.close()


def test_the_settings_window_decides_which_mounts_fair_share_counts(session_factory):
    history(session_factory)  # star's only mount ended about 91,000 s before now
    assert "star" not in usage_groups(session_factory)  # the default: one day
    assert "star" in usage_groups(session_factory, fair_share_window_s=100_000.0)
    assert usage_groups(session_factory, fair_share_window_s=60.0) == {"cms"}  # only the open mount

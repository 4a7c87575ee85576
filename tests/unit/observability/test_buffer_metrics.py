"""The disk buffer's metrics follow each cycle's report: bytes by kind, files waiting for space, evictions
(made room for a hand-over, or at once on release)."""

from __future__ import annotations

from carousel.domain.buffer import BufferLimits, BufferUsage, view
from carousel.observability.metrics import ServiceMetrics
from carousel.scheduler.buffer_upkeep import UpkeepReport
from carousel.scheduler.cycle import CycleReport


def test_a_cycles_buffer_figures_become_metrics() -> None:
    metrics = ServiceMetrics()
    space = view(
        BufferLimits(1000, 0.9, 0.5), BufferUsage(on_disk_bytes=600, pinned_bytes=200, reserved_bytes=100)
    )
    for _ in range(2):
        metrics.observe_cycle(
            CycleReport(
                leader=True,
                buffer_space=space,
                waiting_for_space=7,
                evicted_files=3,
                buffer=UpkeepReport(evicted=2),
            )
        )

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    assert {
        k: sample("carousel_buffer_bytes", kind=k)
        for k in ("capacity", "on_disk", "pinned", "reserved", "free")
    } == {
        "capacity": 1000,
        "on_disk": 600,
        "pinned": 200,
        "reserved": 100,
        "free": 900 - 700,
    }
    assert sample("carousel_buffer_waiting_files") == 7
    assert sample("carousel_buffer_evictions_total") == 2 * (3 + 2)


def test_no_buffer_figures_with_the_buffer_off() -> None:
    metrics = ServiceMetrics()
    metrics.observe_cycle(CycleReport(leader=True))
    assert metrics.registry.get_sample_value("carousel_buffer_bytes", {"kind": "capacity"}) is None

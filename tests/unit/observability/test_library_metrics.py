"""Each library's figures become metrics labelled `library`: a site's cycle report per library, a single
library's report as `default`; the service-wide families keep the site's totals."""

from __future__ import annotations

from datetime import UTC, datetime

from carousel.completion.apply import CompletionReport
from carousel.observability.metrics import ServiceMetrics
from carousel.scheduler.cycle import CycleReport
from hsm_adapters.base import Health


def _own(submitted: int, staged: int, health: Health, **more: object) -> CycleReport:
    events = CompletionReport(applied=staged, staged=staged, mounts=1, bytes_staged=staged * 10)
    return CycleReport(leader=True, files_submitted=submitted, events=events, health=health, **more)  # type: ignore[arg-type]


def test_a_sites_cycle_is_counted_per_library_and_in_total() -> None:
    metrics = ServiceMetrics()
    stalled = datetime(2026, 1, 1, tzinfo=UTC)
    libraries = {
        "lto9": _own(5, 3, Health.ONLINE),
        "lto7": _own(0, 0, Health.OFFLINE, stalled_since=stalled),
    }
    metrics.observe_cycle(
        CycleReport(
            leader=True,
            files_submitted=5,
            events=CompletionReport(staged=3, mounts=2, bytes_staged=30),
            health=Health.DEGRADED,
            libraries=libraries,
        )
    )

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    assert sample("carousel_library_files_handed_over_total", library="lto9") == 5
    assert sample("carousel_library_files_handed_over_total", library="lto7") == 0
    assert sample("carousel_library_completions_total", library="lto9", outcome="staged") == 3
    assert sample("carousel_library_bytes_read_total", library="lto9") == 30
    assert sample("carousel_library_health", library="lto7", state="OFFLINE") == 1
    assert sample("carousel_library_health", library="lto9", state="ONLINE") == 1
    assert sample("carousel_library_stalled", library="lto7") == 1
    assert sample("carousel_library_stalled", library="lto9") == 0
    assert sample("carousel_files_handed_over_total") == 5  # the site's
    assert sample("carousel_hsm_health", state="DEGRADED") == 1


def test_a_single_library_is_reported_as_default() -> None:
    metrics = ServiceMetrics()
    metrics.observe_cycle(_own(4, 2, Health.ONLINE))
    assert (
        metrics.registry.get_sample_value("carousel_library_files_handed_over_total", {"library": "default"})
        == 4
    )
    assert metrics.registry.get_sample_value("carousel_library_mounts_total", {"library": "default"}) == 1

"""Each library's adapter has an event stream of its own (docs/decisions.md §17): the library's name, the
adapter's and the instance, at most 64 characters; the one library of a site that names none keeps the
adapter's name alone."""

from __future__ import annotations

from carousel.domain.clock import ManualClock
from carousel.scheduler.cycle import event_stream_name
from hsm_adapters.simulated.adapter import build_simulated_adapter

OPTIONS = {"catalogue": {"generate": {"cartridges": 1, "files_per_cartridge": 1}}}


def test_a_librarys_stream_names_it_and_fits_the_column() -> None:
    adapter = build_simulated_adapter(OPTIONS, ManualClock())
    try:
        named = event_stream_name(adapter, "lto9")
        longest = event_stream_name(adapter, "x" * 32)
        plain = event_stream_name(adapter)
    finally:
        adapter.close()
    assert named.startswith("lto9/simulated:") and len(named) == len("lto9/simulated:") + 16
    assert longest.startswith("x" * 32 + "/simulated"[:15]) and len(longest) <= 64
    assert plain.startswith("simulated:") and "/" not in plain
    assert named != event_stream_name(adapter, "lto9")  # a new instance, a new stream

"""Shortest-locate-first on the library side, against the simulated library itself."""

from __future__ import annotations

from carousel.domain.clock import ManualClock
from hsm_adapters.base import Batch, BatchFile, EventKind, HsmAdapter
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter, parse_options
from hsm_adapters.simulated.physics import shortest_locate_first
from hsm_adapters.simulated.read_order import locate_order


def library(clock: ManualClock, **options: object) -> SimulatedAdapter:
    return build_simulated_adapter(
        {
            **options,
            "profile": "lto7",
            "drives": 1,
            "catalogue": {
                "generate": {
                    "seed": 11,
                    "cartridges": 1,
                    "files_per_cartridge": 30,
                    "size_model": "fixed:2e9",
                    "layout": "spread",
                }
            },
        },
        clock,
    )


def whole_tape(adapter: SimulatedAdapter) -> Batch:
    catalogue = adapter.library.catalogue
    entries = catalogue.on_tape(catalogue.tapes[0])
    return Batch(
        key="b",
        tape=entries[0].tape,
        files=tuple(BatchFile(str(n), e.path, e.position_bytes, e.size_bytes) for n, e in enumerate(entries)),
    )


def read_order_and_end(adapter: HsmAdapter, batch: Batch, clock: ManualClock) -> tuple[list[str], float]:
    adapter.submit(batch)
    clock.advance(10**6)
    events = adapter.poll_events()
    started = [e.file_key for e in events if e.kind is EventKind.FILE_STARTED]
    last = max(e.at for e in events if e.kind is EventKind.FILE_STAGED)
    return [k for k in started if k is not None], (last - clock.now()).total_seconds() + 10**6


def test_batches_reach_the_library_in_shortest_locate_order_and_finish_sooner():
    plain_clock, sltf_clock = ManualClock(), ManualClock()
    plain = library(plain_clock)
    sltf = library(sltf_clock, read_order="shortest_locate")
    batch = whole_tape(plain)

    plain_order, plain_end = read_order_and_end(plain, batch, plain_clock)
    sltf_order, sltf_end = read_order_and_end(sltf, batch, sltf_clock)

    assert plain_order == [f.key for f in batch.files]  # position order, as handed over
    expected = shortest_locate_first(
        sltf.library.physics,
        0,
        [f.position_bytes for f in batch.files],
        [f.size_bytes for f in batch.files],
    )
    assert sltf_order == [batch.files[i].key for i in expected]
    assert sltf_order != plain_order
    assert sltf_end < plain_end


def test_one_file_batches_pass_unchanged_and_read_alike_in_either_order():
    plain_clock, sltf_clock = ManualClock(), ManualClock()
    plain = library(plain_clock)
    sltf = library(sltf_clock, read_order="shortest_locate")
    batch = whole_tape(plain)
    single = Batch(key="one", tape=batch.tape, files=batch.files[:1])
    assert locate_order(plain.library.physics, single) is single
    assert isinstance(sltf, HsmAdapter)
    assert sltf.capacity() == plain.capacity()
    assert read_order_and_end(sltf, single, sltf_clock) == read_order_and_end(plain, single, plain_clock)


def test_the_adapter_option_read_order_reads_in_locate_order_and_defaults_to_position():
    """adapter_options.read_order = "shortest_locate" (what the settings give the service, and what the
    replay sets for the policies that declare it) reads each batch as `locate_order` orders it; the default
    keeps carousel's head order."""
    clock = ManualClock()
    by_option = library(clock, read_order="shortest_locate")
    batch = whole_tape(by_option)
    option_order, _ = read_order_and_end(by_option, batch, clock)
    assert option_order == [f.key for f in locate_order(by_option.library.physics, batch).files]
    assert option_order != [f.key for f in batch.files]
    assert parse_options({}).read_order == "position"

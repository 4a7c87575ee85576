"""The simulated adapter: the library behind the HSM protocol, on a ManualClock (virtual time)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from carousel.domain.clock import ManualClock
from carousel.domain.errors import ConfigError, Unavailable
from hsm_adapters.base import (
    Batch,
    BatchFile,
    Event,
    EventKind,
    Health,
    HsmAdapter,
    NotOnTape,
    OnTape,
    Unknown,
)
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from hsm_adapters.simulated.catalogue import CatalogueEntry
from hsm_adapters.simulated.content import GeneratedContent

SCALE = 100.0


def make_adapter(clock: ManualClock, **options: object) -> SimulatedAdapter:
    base: dict[str, object] = {
        "profile": "lto9",
        "drives": 2,
        "scale": SCALE,
        "catalogue": {
            "generate": {"seed": 7, "cartridges": 6, "files_per_cartridge": 5, "size_model": "fixed:3e9"}
        },
    }
    base.update(options)
    return build_simulated_adapter(base, clock)


def entries(adapter: SimulatedAdapter, tape_index: int = 0) -> tuple[CatalogueEntry, ...]:
    catalogue = adapter.library.catalogue
    return catalogue.on_tape(catalogue.tapes[tape_index])


def batch_of(key: str, files: tuple[CatalogueEntry, ...], prefix: str = "f") -> Batch:
    return Batch(
        key=key,
        tape=files[0].tape,
        files=tuple(
            BatchFile(f"{prefix}{i}", e.path, e.position_bytes, e.size_bytes) for i, e in enumerate(files)
        ),
    )


def single_recall_s(adapter: SimulatedAdapter, entry: CatalogueEntry) -> float:
    physics = adapter.library.physics
    return (
        physics.mount_s()
        + physics.locate_s(0, entry.position_bytes)
        + physics.overhead_s()
        + physics.read_s(entry.size_bytes)
    )


def test_speaks_the_protocol(clock: ManualClock) -> None:
    adapter = make_adapter(clock)
    assert isinstance(adapter, HsmAdapter)
    assert adapter.name == "simulated"


def test_lookup_answers_from_the_catalogue(clock: ManualClock) -> None:
    adapter = make_adapter(clock)
    entry = entries(adapter, 2)[3]
    on_tape, missing = adapter.lookup([entry.path, "/star/none/T99999/1.root"])
    checksum = generated_checksum(entry.path, entry.size_bytes)
    assert on_tape == OnTape(entry.path, entry.tape, entry.position_bytes, entry.size_bytes, False, checksum)
    assert isinstance(missing, NotOnTape)
    assert missing.reason == "not in the library"


def test_virtual_time_stages_a_file_when_the_clock_reaches_its_time(clock: ManualClock) -> None:
    adapter = make_adapter(clock)
    start = clock.now()
    entry = entries(adapter)[2]
    adapter.submit(batch_of("b1", (entry,)))
    expected = single_recall_s(adapter, entry)

    clock.advance(expected / SCALE * 0.99)
    before = adapter.poll_events()
    assert EventKind.FILE_STAGED not in {e.kind for e in before}
    assert [e.kind for e in before] == [EventKind.MOUNTED, EventKind.FILE_STARTED]

    clock.advance(expected / SCALE * 0.02)
    after = adapter.poll_events()
    staged = [e for e in after if e.kind is EventKind.FILE_STAGED]
    assert len(staged) == 1
    assert staged[0].file_key == "f0" and staged[0].bytes == entry.size_bytes
    assert abs((staged[0].at - start).total_seconds() - expected / SCALE) < 1e-5
    assert staged[0].at.tzinfo is not None
    seqs = [e.seq for e in before + after]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert adapter.poll_events() == []  # each event is delivered once


def test_poll_limit_keeps_the_rest_in_order(clock: ManualClock) -> None:
    adapter = make_adapter(clock)
    adapter.submit(batch_of("b1", entries(adapter)[:3]))
    clock.advance(3600)
    first = adapter.poll_events(limit=2)
    rest = adapter.poll_events()
    assert len(first) == 2
    assert [e.seq for e in first + rest] == list(range(1, len(first) + len(rest) + 1))


def test_sink_receives_pending_and_later_events(clock: ManualClock) -> None:
    adapter = make_adapter(clock)
    adapter.submit(batch_of("b1", entries(adapter)[:2]))
    clock.advance(60 / SCALE)
    adapter.capacity()  # any call advances the library; events wait for a sink or a poll
    received: list[Event] = []
    adapter.set_sink(received.append)
    pending = len(received)
    assert pending >= 1  # the mount happened before the sink was set
    clock.advance(3600)
    adapter.health()
    kinds = [e.kind for e in received]
    assert kinds.count(EventKind.FILE_STAGED) == 2 and kinds[-1] is EventKind.UNMOUNTED
    assert adapter.poll_events() == []
    assert [e.seq for e in received] == list(range(1, len(received) + 1))


def test_capacity_reports_drives_slots_and_mounted_tapes(clock: ManualClock) -> None:
    adapter = make_adapter(clock, queue_depth={"default": 10})
    files = entries(adapter)
    adapter.submit(batch_of("b1", files[:4]))
    clock.advance(32 / SCALE)  # past robot (13 s) and load (17 s), reading the first file
    capacity = adapter.capacity()
    assert capacity.drives_total == 2
    assert capacity.drives_free == 1
    assert capacity.queue_slots == {"default": 6}
    assert capacity.mounted_tapes == (files[0].tape,)


def test_offline_window_answers_unknown_and_refuses_submissions(clock: ManualClock) -> None:
    adapter = make_adapter(clock, faults={"offline_windows": [{"start_s": 100, "end_s": 200}]})
    entry = entries(adapter)[0]
    clock.advance(150 / SCALE)
    assert adapter.health() is Health.OFFLINE
    [answer] = adapter.lookup([entry.path])
    assert isinstance(answer, Unknown)
    with pytest.raises(Unavailable):
        adapter.submit(batch_of("b1", (entry,)))
    clock.advance(100 / SCALE)
    assert adapter.health() is Health.ONLINE
    assert isinstance(adapter.lookup([entry.path])[0], OnTape)


def test_slow_window_delays_submissions_and_times_lookups_out(clock: ManualClock) -> None:
    latency = 500.0
    adapter = make_adapter(
        clock,
        faults={"slow_windows": [{"start_s": 0, "end_s": 1000, "latency_s": latency}]},
        lookup_timeout_s=30,
    )
    entry = entries(adapter)[1]
    assert adapter.health() is Health.DEGRADED
    assert isinstance(adapter.lookup([entry.path])[0], Unknown)
    adapter.submit(batch_of("b1", (entry,)))
    expected = latency + single_recall_s(adapter, entry)
    clock.advance((expected - 1) / SCALE)
    assert EventKind.FILE_STAGED not in {e.kind for e in adapter.poll_events()}
    clock.advance(2 / SCALE)
    assert EventKind.FILE_STAGED in {e.kind for e in adapter.poll_events()}


def test_cancel_through_the_adapter_emits_the_event(clock: ManualClock) -> None:
    adapter = make_adapter(clock)
    adapter.submit(batch_of("b1", entries(adapter)[:3]))
    result = adapter.cancel(["f2", "nope"])
    assert result.cancelled == ("f2",) and result.unknown == ("nope",)
    cancelled = [e for e in adapter.poll_events() if e.kind is EventKind.FILE_CANCELLED]
    assert [e.file_key for e in cancelled] == ["f2"]


def test_closed_adapter_refuses_calls(clock: ManualClock) -> None:
    adapter = make_adapter(clock)
    adapter.close()
    with pytest.raises(Unavailable):
        adapter.poll_events()


def test_event_times_map_back_to_the_clock(clock: ManualClock) -> None:
    adapter = make_adapter(clock)
    assert adapter.clock_time(
        adapter.library_time(clock.now() + timedelta(seconds=5))
    ) == clock.now() + timedelta(seconds=5)
    assert adapter.library_time(clock.now() + timedelta(seconds=2)) == pytest.approx(2 * SCALE)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"drives": 0}, "drives"),
        ({"disciplin": "fifo"}, "disciplin"),
        ({"discipline": "lifo"}, "discipline"),
        ({"catalogue": {"generate": {"cartridges": 1}, "csv": "x.csv"}}, "catalogue"),
        ({"faults": {"read_error_probability": 3}}, "read_error_probability"),
        ({"faults": {"drive_outages": [{"drive": "drive07", "start_s": 1, "end_s": 2}]}}, "drive07"),
        ({"profile": "lto99"}, "lto99"),
    ],
)
def test_bad_options_are_refused_naming_the_key(
    clock: ManualClock, options: dict[str, object], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        make_adapter(clock, **options)


def test_catalogue_from_csv(clock: ManualClock, tmp_path: Path) -> None:
    csv = tmp_path / "catalogue.csv"
    csv.write_text(
        "path,size_bytes,tape,position_bytes\n/a/1.root,1000,TAPE01,0\n/a/2.root,2000,TAPE01,1000\n"
    )
    adapter = make_adapter(clock, catalogue=str(csv))
    checksum = generated_checksum("/a/2.root", 2000)
    assert adapter.lookup(["/a/2.root"]) == [OnTape("/a/2.root", "TAPE01", 1000, 2000, False, checksum)]


def test_publishes_the_library_costs_of_its_physics(clock: ManualClock) -> None:
    adapter = make_adapter(clock, profile="lto8", scale=1.0)
    costs = adapter.library_costs()
    physics = adapter.library.physics
    assert costs.mount_s == physics.mount_s()
    assert costs.rate_bytes_per_s == physics.profile.rate_bytes_per_s


def test_publishes_its_costs_in_seconds_of_the_scaled_clock(clock: ManualClock) -> None:
    # Policies weigh these against waiting on the service's clock, which runs `scale` times slower.
    adapter = make_adapter(clock, profile="lto8", scale=50.0)
    costs = adapter.library_costs()
    physics = adapter.library.physics
    assert costs.mount_s == pytest.approx(physics.mount_s() / 50)
    assert costs.rate_bytes_per_s == pytest.approx(physics.profile.rate_bytes_per_s * 50)
    assert costs.pass_s(10, 10**10) == pytest.approx(
        make_adapter(clock, scale=1.0, profile="lto8").library_costs().pass_s(10, 10**10) / 50
    )


def test_a_sink_that_calls_back_still_sees_events_in_order(clock: ManualClock) -> None:
    adapter = make_adapter(clock)
    files = entries(adapter)[:3]
    received: list[Event] = []

    def sink(event: Event) -> None:
        received.append(event)
        if event.kind is EventKind.FILE_STAGED and event.file_key == "f0":
            adapter.cancel(["f2"])  # re-enters the adapter from inside a delivery

    adapter.set_sink(sink)
    adapter.submit(batch_of("b1", files))
    clock.advance((single_recall_s(adapter, files[0]) + 1) / SCALE)  # f0 staged, f1 being read
    adapter.advance()
    clock.advance(3600)
    adapter.advance()
    assert [e.seq for e in received] == list(range(1, len(received) + 1))
    times = [e.at for e in received]
    assert times == sorted(times)
    kinds = [(e.kind, e.file_key) for e in received]
    assert (EventKind.FILE_CANCELLED, "f2") in kinds and (EventKind.FILE_STAGED, "f1") in kinds
    assert (EventKind.FILE_STARTED, "f2") not in kinds


def generated_checksum(path: str, size: int) -> str:
    return GeneratedContent().checksum(path, size)

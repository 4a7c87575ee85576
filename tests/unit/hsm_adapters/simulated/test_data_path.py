"""The simulated adapter's data path: bytes written at FILE_STAGED, write faults, corrupt reads, evict."""

from __future__ import annotations

import zlib
from datetime import timedelta
from pathlib import Path

import pytest

from carousel.domain.clock import ManualClock
from carousel.domain.errors import ConfigError
from hsm_adapters.base import Batch, BatchFile, Event, EventKind, OnTape
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from hsm_adapters.simulated.faults import fault_plan_from_mapping
from hsm_adapters.simulated.read_log import EVICTED, TAPE, read_log_lines

LIBRARY: dict[str, object] = {
    "profile": "lto8",
    "drives": 1,
    "catalogue": {
        "generate": {"seed": 4, "cartridges": 2, "files_per_cartridge": 4, "size_model": "lognormal:300000:1"}
    },
}
HOUR_S = 3600


def make(clock: ManualClock, **options: object) -> SimulatedAdapter:
    return build_simulated_adapter({**LIBRARY, **options}, clock)


def batch(sim: SimulatedAdapter, key: str, count: int, incoming: Path | None) -> Batch:
    tape = sim.library.catalogue.tapes[0]
    entries = sim.library.catalogue.on_tape(tape)[:count]
    files = tuple(
        BatchFile(
            f"{key}/{n}",
            e.path,
            e.position_bytes,
            e.size_bytes,
            str(incoming / f"{key}.{n}") if incoming else None,
        )
        for n, e in enumerate(entries)
    )
    return Batch(key, tape, files)


def ends(sim: SimulatedAdapter, clock: ManualClock) -> dict[str, Event]:
    clock.advance(HOUR_S)
    return {
        e.file_key: e
        for e in sim.poll_events()
        if e.file_key and e.kind in (EventKind.FILE_STAGED, EventKind.FILE_FAILED)
    }


def adler32(path: str | None) -> str:
    assert path is not None
    return f"{zlib.adler32(Path(path).read_bytes()):08x}"


@pytest.fixture
def incoming(tmp_path: Path) -> Path:
    path = tmp_path / "incoming"
    path.mkdir()
    return path


def test_the_bytes_are_written_when_the_file_is_staged_in_virtual_time(
    clock: ManualClock, incoming: Path
) -> None:
    sim = make(clock)
    b = batch(sim, "b", 2, incoming)
    sim.submit(b)
    first_staged_at = None
    for _ in range(10_000):  # step the clock to each event; the file appears with its FILE_STAGED, not before
        t = sim.library.next_event_time()
        assert t is not None
        # datetimes stop at microseconds: round up, or the clock lands just before the event
        clock.set(max(clock.now(), sim.clock_time(t) + timedelta(microseconds=1)))
        staged = [e for e in sim.poll_events() if e.kind is EventKind.FILE_STAGED]
        if staged:
            first_staged_at = staged[0].at
            break
        assert not Path(str(b.files[0].destination)).exists(), "no bytes before the read ends"
    assert first_staged_at is not None
    assert adler32(b.files[0].destination) == sim.lookup([b.files[0].path])[0].checksum  # type: ignore[union-attr]
    assert not Path(str(b.files[1].destination)).exists(), "the second file is still being read"


def test_without_destinations_nothing_is_written(clock: ManualClock, incoming: Path) -> None:
    sim = make(clock)
    sim.submit(batch(sim, "b", 4, None))
    events = ends(sim, clock)
    assert len(events) == 4 and all(e.kind is EventKind.FILE_STAGED and e.checksum for e in events.values())
    assert sim.writer.writes == 0 and list(incoming.iterdir()) == []


def test_a_full_disk_fails_the_write_retryably_and_leaves_nothing(clock: ManualClock, incoming: Path) -> None:
    sim = make(clock, faults={"disk_full": [{"writes": 1}]})
    b = batch(sim, "b", 2, incoming)
    sim.submit(b)
    events = ends(sim, clock)

    first, second = (events[f.key] for f in b.files)
    assert (first.kind, first.retryable, first.bytes) == (EventKind.FILE_FAILED, True, 0)
    assert first.reason == f"no space left on device writing {b.files[0].destination}"
    assert not Path(str(b.files[0].destination)).exists(), "a failed write leaves no partial file"
    assert second.kind is EventKind.FILE_STAGED and adler32(b.files[1].destination) == second.checksum

    again = Batch("again", b.tape, (b.files[0],))
    sim.submit(again)
    assert ends(sim, clock)[b.files[0].key].kind is EventKind.FILE_STAGED  # the retry finds space


def test_a_disk_full_window_fails_writes_only_inside_it(clock: ManualClock, incoming: Path) -> None:
    sim = make(clock, faults={"disk_full": [{"start_s": 0, "end_s": 10 * HOUR_S}]})
    sim.submit(batch(sim, "early", 2, incoming))
    assert {e.kind for e in ends(sim, clock).values()} == {EventKind.FILE_FAILED}
    clock.advance(10 * HOUR_S)
    sim.submit(batch(sim, "late", 2, incoming))
    assert {e.kind for e in ends(sim, clock).values()} == {EventKind.FILE_STAGED}


def test_a_destination_whose_directory_is_gone_fails_retryably(clock: ManualClock, tmp_path: Path) -> None:
    sim = make(clock)
    b = batch(sim, "b", 1, tmp_path / "removed")
    sim.submit(b)
    (event,) = ends(sim, clock).values()
    assert (event.kind, event.retryable) == (EventKind.FILE_FAILED, True)
    assert event.reason == f"no such file or directory writing {b.files[0].destination}"


def test_a_corrupt_read_writes_bytes_that_differ_from_the_reported_checksum(
    clock: ManualClock, incoming: Path
) -> None:
    sim = make(clock)
    path = sim.library.catalogue.on_tape(sim.library.catalogue.tapes[0])[0].path
    sim = make(clock, faults={"corrupt_reads": [{"path": path, "reads": 1}]})
    b = batch(sim, "b", 2, incoming)
    sim.submit(b)
    events = ends(sim, clock)
    corrupted, clean = (events[f.key] for f in b.files)
    assert corrupted.kind is EventKind.FILE_STAGED
    assert corrupted.checksum != adler32(b.files[0].destination), "carousel's verification must catch this"
    assert Path(str(b.files[0].destination)).stat().st_size == b.files[0].size_bytes
    assert clean.checksum == adler32(b.files[1].destination)

    sim.submit(Batch("again", b.tape, (b.files[0],)))
    reread = ends(sim, clock)[b.files[0].key]
    assert reread.checksum == adler32(b.files[0].destination), "only the first read was corrupt"


def test_evict_puts_a_file_back_on_tape_across_processes(
    clock: ManualClock, incoming: Path, tmp_path: Path
) -> None:
    log = tmp_path / "reads.csv"
    sim = make(clock, read_log=str(log))
    b = batch(sim, "b", 2, incoming)
    sim.submit(b)
    ends(sim, clock)
    path = b.files[0].path
    assert [r.on_disk for r in sim.lookup([path, b.files[1].path])] == [True, True]  # type: ignore[union-attr]

    # on disk: answered at once, bytes written, no tape read
    from_disk = Batch(
        "cached", b.tape, (BatchFile("c", path, 0, b.files[0].size_bytes, str(incoming / "c")),)
    )
    sim.submit(from_disk)
    (event,) = [e for e in sim.poll_events() if e.file_key == "c"]
    assert (event.kind, event.drive) == (EventKind.FILE_STAGED, None)
    assert adler32(str(incoming / "c")) == event.checksum

    sim.evict([path])
    looked_up = sim.lookup([path, b.files[1].path])
    assert [r.on_disk for r in looked_up if isinstance(r, OnTape)] == [False, True]
    sim.close()

    later = make(clock, read_log=str(log))  # a new process knows the eviction
    assert [r.on_disk for r in later.lookup([path]) if isinstance(r, OnTape)] == [False]
    later.submit(
        Batch("after", b.tape, (BatchFile("d", path, 0, b.files[0].size_bytes, str(incoming / "d")),))
    )
    assert ends(later, clock)["d"].drive is not None, "read from tape again"
    later.close()
    sources = [line.source for line in read_log_lines(log) if line.path == path]
    assert sources == [TAPE, "disk", EVICTED, TAPE]


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ({"disk_full": [{"writes": 0}]}, "writes must be at least 1"),
        ({"disk_full": [{"start_s": 5, "end_s": 5}]}, "must be after start_s"),
        ({"disk_full": [{"start_s": -1}]}, "start_s must be >= 0"),
        ({"corrupt_reads": [{"path": "/a", "reads": 0}]}, "reads must be at least 1"),
        ({"corrupt_reads": [{"reads": 1}]}, "path"),
    ],
)
def test_bad_data_path_faults_are_named(table: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        fault_plan_from_mapping(table)


def test_the_adapter_describes_its_library(clock: ManualClock) -> None:
    sim = make(clock, scale=100.0)
    total = sim.library.catalogue.total_bytes()
    assert 1e6 <= total < 1e7
    assert sim.describe() == (
        "simulated lto8 library (LTO-8 full height, 12 TB cartridges, 360 MB/s native): 1 drive, 2 tapes,"
        f" 8 files, {total / 1e6:.2f} MB; clock 100x the wall clock"
    )

"""The simulated adapter's read log: one line per file brought to disk, and a disk cache that outlives the
adapter instance (a new process reads nothing twice from tape)."""

from __future__ import annotations

from pathlib import Path

import pytest

from carousel.domain.clock import ManualClock
from carousel.domain.errors import ConfigError, Unavailable
from hsm_adapters.base import Batch, BatchFile, EventKind
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from hsm_adapters.simulated.read_log import DISK, TAPE, read_log_lines

LIBRARY = {
    "profile": "lto8",
    "drives": 2,
    "catalogue": {"generate": {"seed": 5, "cartridges": 2, "files_per_cartridge": 6}},
}


def adapter(clock: ManualClock, log: Path, **options: object) -> SimulatedAdapter:
    return build_simulated_adapter({**LIBRARY, "read_log": str(log), **options}, clock)


def batch(sim: SimulatedAdapter, key: str, count: int) -> Batch:
    catalogue = sim.library.catalogue
    tape = catalogue.tapes[0]
    entries = list(catalogue.on_tape(tape))[:count]
    files = tuple(BatchFile(str(n), e.path, e.position_bytes, e.size_bytes) for n, e in enumerate(entries))
    return Batch(key, tape, files)


def run(sim: SimulatedAdapter, clock: ManualClock) -> list[EventKind]:
    clock.advance(3600)
    return [e.kind for e in sim.poll_events()]


def test_each_read_is_logged_and_a_new_instance_answers_from_disk(clock: ManualClock, tmp_path: Path) -> None:
    log = tmp_path / "reads.csv"
    first = adapter(clock, log)
    first.submit(batch(first, "b1", 3))
    assert run(first, clock).count(EventKind.FILE_STAGED) == 3
    first.close()  # the process ends

    second = adapter(clock, log)
    second.submit(batch(second, "b1", 5))  # the same batch again, two files more
    events = second.poll_events()
    from_disk = [e for e in events if e.kind is EventKind.FILE_STAGED]
    assert len(from_disk) == 3 and all(e.drive is None and e.batch_key == "b1" for e in from_disk)
    assert run(second, clock).count(EventKind.FILE_STAGED) == 2  # only the two new ones from tape
    assert second.library.stats().files_staged == 2
    second.submit(batch(second, "b1", 5))  # a batch key is taken once
    assert run(second, clock) == []
    second.close()

    lines = read_log_lines(log)
    tape_reads = [line.path for line in lines if line.source == TAPE]
    assert len(tape_reads) == len(set(tape_reads)) == 5
    assert [line.source for line in lines].count(DISK) == 3
    assert len({line.instance for line in lines}) == 2


def test_an_offline_library_refuses_a_batch_that_is_all_on_disk(clock: ManualClock, tmp_path: Path) -> None:
    log = tmp_path / "reads.csv"
    first = adapter(clock, log)
    first.submit(batch(first, "b1", 2))
    run(first, clock)
    first.close()
    offline = adapter(clock, log, faults={"offline_windows": [{"start_s": 0, "end_s": 100}]})
    with pytest.raises(Unavailable):
        offline.submit(batch(offline, "b2", 2))
    clock.advance(200)
    offline.submit(batch(offline, "b2", 2))  # taken now: the refusal did not mark the key
    assert [e.kind for e in offline.poll_events()].count(EventKind.FILE_STAGED) == 2
    offline.close()


def test_a_broken_log_line_is_named(tmp_path: Path) -> None:
    log = tmp_path / "reads.csv"
    log.write_text("a,tape,/p,b1\nnot a line\n")
    with pytest.raises(ConfigError, match=r"reads\.csv, line 2"):
        read_log_lines(log)


def test_a_standby_started_earlier_answers_from_disk_what_the_leader_read_since(
    clock: ManualClock, tmp_path: Path
) -> None:
    log = tmp_path / "reads.csv"
    standby = adapter(clock, log)  # both processes run from the start
    leader = adapter(clock, log)
    leader.submit(batch(leader, "b1", 3))
    assert run(leader, clock).count(EventKind.FILE_STAGED) == 3  # read after the standby started

    # the leader dies with its events unapplied; the standby, now leading, is handed the batch again
    standby.submit(batch(standby, "b1", 3))
    events = standby.poll_events()
    assert [e.kind for e in events].count(EventKind.FILE_STAGED) == 3  # answered at once, from disk
    assert run(standby, clock) == [] and standby.library.stats().files_staged == 0
    tape_reads = [line.path for line in read_log_lines(log) if line.source == TAPE]
    assert len(tape_reads) == len(set(tape_reads)) == 3
    standby.close()
    leader.close()


def test_lookup_sees_what_another_process_brought_to_disk_and_evicted(
    clock: ManualClock, tmp_path: Path
) -> None:
    log = tmp_path / "reads.csv"
    watcher = adapter(clock, log)
    reader = adapter(clock, log)
    paths = [f.path for f in batch(reader, "b1", 2).files]
    assert [r.on_disk for r in watcher.lookup(paths)] == [False, False]  # type: ignore[union-attr]
    reader.submit(batch(reader, "b1", 2))
    run(reader, clock)
    assert [r.on_disk for r in watcher.lookup(paths)] == [True, True]  # type: ignore[union-attr]
    reader.evict(paths[:1])
    assert [r.on_disk for r in watcher.lookup(paths)] == [False, True]  # type: ignore[union-attr]
    watcher.close()
    reader.close()


def test_a_line_still_being_written_waits_for_its_end(clock: ManualClock, tmp_path: Path) -> None:
    log = tmp_path / "reads.csv"
    sim = adapter(clock, log)
    path = batch(sim, "b1", 1).files[0].path
    with log.open("a") as other:  # another process, halfway through its line
        other.write(f"x,tape,{path}")
        other.flush()
        assert sim.lookup([path])[0].on_disk is False  # type: ignore[union-attr]
        other.write(",b9\n")
    assert sim.lookup([path])[0].on_disk is True  # type: ignore[union-attr]
    sim.close()

"""The HSM adapter contract (hsm_adapters/base.py), run over every adapter in conftest.HARNESSES."""

from __future__ import annotations

import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from hsm_adapters.base import (
    Batch,
    CancelResult,
    ControlsDrives,
    DriveCommand,
    EventKind,
    Health,
    HsmAdapter,
    NotOnTape,
    OnTape,
    Unknown,
)

from .conftest import REAL_TIME_BOUND_S, TERMINAL, Collector, Harness, let_time_pass, settle


def submit_returns_at_once(harness: Harness, batch: Batch) -> None:
    """submit returns without the library having had any time (none passes before the first step): a submit
    that waited for its batch would never return here, and the bound turns that into a failure."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        pool.submit(harness.adapter.submit, batch).result(timeout=REAL_TIME_BOUND_S)
    except TimeoutError:
        raise AssertionError("submit waited for the library instead of returning at once") from None
    finally:
        pool.shutdown(wait=False)


def test_it_speaks_the_protocol(harness: Harness):
    assert isinstance(harness.adapter, HsmAdapter)
    assert harness.adapter.name == harness.name


def test_lookup_answers_every_path_in_order(harness: Harness):
    first, second = harness.on_tape(harness.tapes()[0])[:2]
    other = harness.on_tape(harness.tapes()[1])[0]
    absent = harness.absent_paths[0]
    paths = [first.path, absent, other.path, first.path, second.path, harness.absent_paths[1]]

    results = harness.adapter.lookup(paths)

    assert [result.path for result in results] == paths
    for held, result in ((first, results[0]), (other, results[2]), (first, results[3]), (second, results[4])):
        assert result == OnTape(
            held.path, held.tape, held.position_bytes, held.size_bytes, on_disk=False, checksum=held.checksum
        )
    for result in (results[1], results[5]):
        assert isinstance(result, NotOnTape | Unknown)
        assert result.reason


def test_lookup_of_nothing_is_nothing(harness: Harness):
    assert harness.adapter.lookup([]) == []


def test_every_submitted_file_ends_exactly_once(harness: Harness, collector: Collector):
    tape_a, tape_b = harness.tapes()
    batch_a = harness.batch("a", tape_a, harness.on_tape(tape_a))
    batch_b = harness.batch("b", tape_b, [*harness.on_tape(tape_b)[:2], harness.absent_paths[0]])

    for batch in (batch_a, batch_b):
        submit_returns_at_once(harness, batch)
    collector.pump()
    staged = [e.file_key for e in collector.snapshot() if e.kind is EventKind.FILE_STAGED]
    assert staged == [], "submit returns at once: nothing is read before time passes"

    keys = {file.key for batch in (batch_a, batch_b) for file in batch.files}
    ends = settle(harness, collector, keys)

    assert {key: len(events) for key, events in ends.items()} == dict.fromkeys(keys, 1)
    for batch in (batch_a, batch_b):
        for file in batch.files:
            end = ends[file.key][0]
            assert (end.path, end.batch_key, end.tape) == (file.path, batch.key, batch.tape)
            if file.path in harness.absent_paths:
                assert end.kind is EventKind.FILE_FAILED and end.reason
            else:
                assert end.kind is EventKind.FILE_STAGED
                assert end.bytes == file.size_bytes


def test_events_are_numbered_in_order_and_delivered_once(harness: Harness, collector: Collector):
    tape_a, tape_b = harness.tapes()
    batches = [
        harness.batch("a", tape_a, harness.on_tape(tape_a)),
        harness.batch("b", tape_b, harness.on_tape(tape_b)),
    ]
    for batch in batches:
        harness.adapter.submit(batch)
    settle(harness, collector, {file.key for batch in batches for file in batch.files})

    events = collector.snapshot()
    seqs = [event.seq for event in events]
    assert seqs == sorted(set(seqs)), "seq strictly increasing, in delivery order, no repeats"
    for event in events:
        assert event.at.tzinfo is not None and event.at.utcoffset() == timedelta(0), event
    assert [event.at for event in events] == sorted(event.at for event in events)
    assert harness.adapter.poll_events() == [], "nothing is delivered twice"


def test_poll_limit_gives_the_oldest_first_and_loses_nothing(harness: Harness):
    tape = harness.tapes()[0]
    batch = harness.batch("a", tape, harness.on_tape(tape))
    harness.adapter.submit(batch)
    drained = []
    deadline = time.monotonic() + REAL_TIME_BOUND_S
    while time.monotonic() < deadline:
        got = harness.adapter.poll_events(limit=2)
        assert len(got) <= 2
        drained += got
        if not got and not harness.step():
            drained += harness.adapter.poll_events()
            break

    seqs = [event.seq for event in drained]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "oldest first, none lost, none repeated"
    ended = [e.file_key for e in drained if e.kind in TERMINAL]
    assert sorted(ended) == sorted(file.key for file in batch.files)


def test_submit_is_idempotent_by_batch_key(harness: Harness, collector: Collector):
    tape = harness.tapes()[0]
    batch = harness.batch("once", tape, harness.on_tape(tape))
    harness.adapter.submit(batch)
    harness.adapter.submit(batch)
    keys = {file.key for file in batch.files}
    let_time_pass(harness, collector, lambda: bool(collector.terminal()))
    harness.adapter.submit(batch)  # again, while or after it runs

    ends = settle(harness, collector, keys)

    assert all(len(events) == 1 for events in ends.values()), ends
    staged = [e for e in collector.snapshot() if e.kind is EventKind.FILE_STAGED]
    assert sorted(e.file_key for e in staged) == sorted(keys)


def _partition(result: CancelResult) -> list[str]:
    return [*result.cancelled, *result.in_progress, *result.unknown]


def test_cancel_says_honestly_what_it_stopped(harness: Harness, collector: Collector):
    tape = harness.tapes()[0]
    batch = harness.batch("c", tape, harness.on_tape(tape))
    harness.adapter.submit(batch)
    asked = [batch.files[-1].key, batch.files[-2].key, "never-submitted"]

    result = harness.adapter.cancel(asked)

    assert sorted(_partition(result)) == sorted(asked), "each key answered exactly once"
    assert result.unknown == ("never-submitted",)
    ends = settle(harness, collector, {file.key for file in batch.files})
    for key in result.cancelled:
        assert [e.kind for e in ends[key]] == [EventKind.FILE_CANCELLED], "a cancelled file is not read"
    for key in result.in_progress:
        assert len(ends[key]) == 1, "an in-progress file still gets its one end"


def test_cancel_after_the_end_stops_nothing(harness: Harness, collector: Collector):
    tape = harness.tapes()[0]
    batch = harness.batch("done", tape, harness.on_tape(tape)[:2])
    harness.adapter.submit(batch)
    keys = [file.key for file in batch.files]
    settle(harness, collector, set(keys))

    result = harness.adapter.cancel(keys)

    assert result.cancelled == () and result.unknown == ()
    assert sorted(result.in_progress) == sorted(keys)
    let_time_pass(harness, collector, lambda: False)
    assert all(len(ends) == 1 for ends in collector.terminal().values())


def test_capacity_and_health_are_sane(harness: Harness, collector: Collector):
    def check() -> None:
        capacity = harness.adapter.capacity()
        assert capacity.drives_total > 0
        assert 0 <= capacity.drives_free <= capacity.drives_total
        assert capacity.queue_slots and all(slots >= 0 for slots in capacity.queue_slots.values())
        assert all(isinstance(tape, str) for tape in capacity.mounted_tapes)

    assert harness.adapter.health() is Health.ONLINE
    check()
    tape = harness.tapes()[0]
    batch = harness.batch("cap", tape, harness.on_tape(tape))
    harness.adapter.submit(batch)
    check()
    settle(harness, collector, {file.key for file in batch.files})
    check()
    assert harness.adapter.health() is Health.ONLINE


def test_close_is_clean(harness: Harness):
    tape = harness.tapes()[0]
    harness.adapter.submit(harness.batch("closing", tape, harness.on_tape(tape)))
    harness.adapter.close()
    harness.adapter.close()  # twice is fine


# --- the data path: bytes at the destination ------------------------------------------------------------


def adler32_of(path: Path) -> str:
    return f"{zlib.adler32(path.read_bytes()):08x}"


def test_bytes_written_at_the_destination_match_the_reported_checksum(harness: Harness, collector: Collector):
    tape = harness.tapes()[0]
    held = harness.on_tape(tape)
    batch = harness.batch("bytes", tape, held, destinations=harness.incoming)
    harness.adapter.submit(batch)

    ends = settle(harness, collector, {file.key for file in batch.files})

    for file, source in zip(batch.files, held, strict=True):
        (end,) = ends[file.key]
        assert end.kind is EventKind.FILE_STAGED, end
        assert file.destination is not None
        written = Path(file.destination)
        assert written.stat().st_size == source.size_bytes
        assert end.checksum == adler32_of(written) == source.checksum


def test_no_destination_no_bytes(harness: Harness, collector: Collector):
    tape = harness.tapes()[1]
    held = harness.on_tape(tape)
    batch = harness.batch("accounting", tape, held)
    harness.adapter.submit(batch)

    ends = settle(harness, collector, {file.key for file in batch.files})

    assert all(events[0].kind is EventKind.FILE_STAGED for events in ends.values())
    assert list(harness.incoming.iterdir()) == [], "a file without a destination is recalled without bytes"
    for file, source in zip(batch.files, held, strict=True):
        assert ends[file.key][0].checksum in (None, source.checksum)


def test_an_evicted_file_is_staged_again(harness: Harness, collector: Collector):
    tape = harness.tapes()[0]
    first = harness.on_tape(tape)[0]
    batch = harness.batch("before", tape, [first], destinations=harness.incoming)
    harness.adapter.submit(batch)
    settle(harness, collector, {batch.files[0].key})
    assert batch.files[0].destination is not None
    Path(batch.files[0].destination).unlink()  # carousel removes its copy, then tells the back-end

    harness.adapter.evict([first.path])
    harness.adapter.evict([])  # nothing to say is fine

    (looked_up,) = harness.adapter.lookup([first.path])
    assert isinstance(looked_up, OnTape) and not looked_up.on_disk
    again = harness.batch("after", tape, [first], destinations=harness.incoming)
    harness.adapter.submit(again)
    (end,) = settle(harness, collector, {again.files[0].key})[again.files[0].key]
    assert end.kind is EventKind.FILE_STAGED
    assert again.files[0].destination is not None
    assert end.checksum == adler32_of(Path(again.files[0].destination)) == first.checksum


def test_a_failing_write_is_a_retryable_failure(harness: Harness, collector: Collector):
    tape = harness.tapes()[1]
    held = harness.on_tape(tape)[:2]
    gone = harness.incoming / "gone"  # the destination's directory is not there (removed under the adapter)
    batch = harness.batch("unwritable", tape, held, destinations=gone)
    harness.adapter.submit(batch)

    ends = settle(harness, collector, {file.key for file in batch.files})

    for file in batch.files:
        (end,) = ends[file.key]
        assert end.kind is EventKind.FILE_FAILED, end
        assert end.retryable
        assert end.reason is not None and str(file.destination) in end.reason
    assert not gone.exists(), "the adapter does not make carousel's directories"


# --- drives taken down and up (ControlsDrives) --------------------------------------------------------------


def test_a_drive_goes_down_and_up_and_capacity_follows(harness: Harness, collector: Collector):
    adapter = harness.adapter
    assert isinstance(adapter, ControlsDrives)
    names = adapter.drive_names()
    assert len(names) >= 2 and len(set(names)) == len(names)
    before = adapter.capacity().drives_total
    adapter.set_drive(names[0], DriveCommand.DOWN_NOW)
    adapter.set_drive(names[0], DriveCommand.DOWN_NOW)  # idempotent: down stays down
    assert adapter.capacity().drives_total == before - 1
    # the other drives still read
    tape = harness.tapes()[0]
    batch = harness.batch("while-down", tape, harness.on_tape(tape)[:2])
    adapter.submit(batch)
    ends = settle(harness, collector, {file.key for file in batch.files})
    assert all(e[0].kind is EventKind.FILE_STAGED for e in ends.values())
    adapter.set_drive(names[0], DriveCommand.DOWN_AFTER_MOUNT)
    adapter.set_drive(names[0], DriveCommand.UP)
    assert adapter.capacity().drives_total == before
    with pytest.raises(KeyError):
        adapter.set_drive("no-such-drive", DriveCommand.UP)

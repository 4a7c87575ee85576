"""Drives taken down and up by an operator in the simulated library: down after its mount, a drive reads what
its cartridge holds for it, unmounts and takes no new mount until it is up; down at once, its read goes back
to the queue and is read on another drive. Capacity counts the drives in service; a bad cartridge's mount
failures are reported."""

from __future__ import annotations

import pytest

from hsm_adapters.base import DriveCommand, EventKind, Health
from hsm_adapters.simulated.faults import FaultPlan, fault_plan_from_mapping
from hsm_adapters.simulated.library import Library, SimEvent
from tests.unit.hsm_adapters.simulated.library_helpers import batch_of, catalogue_for, of_kind, physics_for


def two_tapes(drives: int = 1, faults: FaultPlan | None = None) -> Library:
    physics = physics_for("lto8")
    return Library(catalogue_for(physics, cartridges=3, files=6), physics, drives=drives, faults=faults)


def test_down_after_its_mount_a_drive_reads_its_cartridge_then_takes_no_new_mount_until_up() -> None:
    library = two_tapes()
    first, second, _ = library.catalogue.tapes
    library.submit(batch_of("b1", library.catalogue.on_tape(first)), 0.0)
    library.submit(batch_of("b2", library.catalogue.on_tape(second)), 0.0)
    events = library.advance_to(0.0)
    # let the first mount begin reading, then take the drive down after it
    while not of_kind(events, EventKind.FILE_STARTED):
        events += library.advance_to(library.now + 10.0)
    at = library.now
    library.set_drive("drive00", DriveCommand.DOWN_AFTER_MOUNT, at)
    assert library.capacity(at).drives_total == 1  # still in service until its mount is over
    events += library.advance_to(at + 100_000.0)
    staged = of_kind(events, EventKind.FILE_STAGED)
    assert {e.tape for e in staged} == {first} and len(staged) == 6  # its whole mount was read
    unmounted = of_kind(events, EventKind.UNMOUNTED)
    assert [(e.tape, e.drive) for e in unmounted] == [(first, "drive00")]
    assert second not in {e.tape for e in of_kind(events, EventKind.MOUNTED)}  # no new mount while down
    down_at = library.now
    assert library.capacity(down_at).drives_total == 0
    assert library.health(down_at) is Health.ONLINE  # maintenance, not a fault

    library.set_drive("drive00", DriveCommand.UP, down_at)
    assert library.capacity(down_at).drives_total == 1
    events = library.run_until_idle()
    assert [e.tape for e in of_kind(events, EventKind.MOUNTED)] == [second]
    assert len(of_kind(events, EventKind.FILE_STAGED)) == 6
    assert all(e.t >= down_at for e in events)


def test_down_now_a_drive_stops_at_once_and_its_read_is_done_on_another_drive() -> None:
    library = two_tapes(drives=2)
    first, second, _ = library.catalogue.tapes
    library.submit(batch_of("b1", library.catalogue.on_tape(first)), 0.0)
    events: list[SimEvent] = []
    while not [e for e in events if e.kind is EventKind.FILE_STARTED and e.drive == "drive00"]:
        events += library.advance_to(library.now + 10.0)
    interrupted = [e for e in events if e.kind is EventKind.FILE_STARTED][-1]
    at = library.now
    library.set_drive("drive00", DriveCommand.DOWN_NOW, at)
    events += library.take_events()
    stop = [e for e in events if e.kind is EventKind.UNMOUNTED and e.drive == "drive00"]
    assert len(stop) == 1 and stop[0].t == at and stop[0].reason == "drive down"
    assert library.capacity(at).drives_total == 1
    library.submit(batch_of("b2", library.catalogue.on_tape(second)), at)
    events += library.run_until_idle()
    after = [e for e in events if e.t > at]
    assert not [e for e in after if e.drive == "drive00"]  # it took nothing while down
    staged = of_kind(events, EventKind.FILE_STAGED)
    assert len(staged) == 12 and not of_kind(events, EventKind.FILE_FAILED)
    again = [e for e in after if e.kind is EventKind.FILE_STAGED and e.file_key == interrupted.file_key]
    assert len(again) == 1 and again[0].drive == "drive01"  # read again, on the other drive


def test_a_drive_down_by_an_operator_stays_down_when_a_fault_outage_ends() -> None:
    plan = fault_plan_from_mapping({"drive_outages": [{"drive": "drive00", "start_s": 10.0, "end_s": 20.0}]})
    library = two_tapes(faults=plan)
    library.set_drive("drive00", DriveCommand.DOWN_NOW, 15.0)
    library.submit(batch_of("b1", library.catalogue.on_tape(library.catalogue.tapes[0])), 30.0)
    assert library.capacity(30.0).drives_total == 0
    assert library.advance_to(5000.0) == []
    library.set_drive("drive00", DriveCommand.UP, 5000.0)
    assert len(of_kind(library.run_until_idle(), EventKind.FILE_STAGED)) == 6


def test_an_unknown_drive_is_refused() -> None:
    library = two_tapes()
    with pytest.raises(KeyError):
        library.set_drive("drive07", DriveCommand.UP, 0.0)
    assert library.drive_names == ("drive00",)


def test_a_bad_cartridge_reports_its_failed_mounts() -> None:
    library = two_tapes(faults=FaultPlan(bad_cartridges=("T00002",)))
    bad = library.catalogue.on_tape("T00002")
    library.submit(batch_of("b1", bad[:2]), 0.0)
    events = library.run_until_idle()
    failed_mounts = of_kind(events, EventKind.MOUNT_FAILED)
    assert [(e.tape, e.drive) for e in failed_mounts] == [("T00002", "drive00")]
    assert "bad cartridge" in (failed_mounts[0].reason or "")
    # the library does not try again: each later batch is a mount it refuses, reported as such
    library.submit(batch_of("b2", bad[2:4]), library.now + 1)
    events = library.run_until_idle()
    assert [e.kind for e in events] == [EventKind.MOUNT_FAILED, EventKind.FILE_FAILED, EventKind.FILE_FAILED]

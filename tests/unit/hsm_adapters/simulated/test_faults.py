"""Fault injection: each fault does what the plan says, and the same seed gives the same failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carousel.domain.errors import ConfigError, Unavailable
from hsm_adapters.base import EventKind, Health
from hsm_adapters.simulated.faults import (
    DriveOutage,
    FaultPlan,
    HungRead,
    Window,
    fault_plan_from_mapping,
    load_fault_plan,
)
from hsm_adapters.simulated.library import Library, SimEvent
from tests.unit.hsm_adapters.simulated.library_helpers import (
    batch_of,
    catalogue_for,
    check_recall_log,
    of_kind,
    physics_for,
    run_workload,
    serialise,
)


def run_all(
    plan: FaultPlan, *, drives: int = 2, cartridges: int = 6, files: int = 10
) -> tuple[Library, list[SimEvent]]:
    physics = physics_for("lto8")
    catalogue = catalogue_for(physics, cartridges=cartridges, files=files)
    library = Library(catalogue, physics, drives=drives, faults=plan)
    for tape in catalogue.tapes:
        library.submit(batch_of(tape, catalogue.on_tape(tape)), 0.0)
    return library, library.run_until_idle()


def test_read_errors_fail_single_reads_retryably_and_reproducibly() -> None:
    plan = FaultPlan(seed=4, read_error_probability=0.3)
    _, events = run_all(plan)
    failed = of_kind(events, EventKind.FILE_FAILED)
    staged = of_kind(events, EventKind.FILE_STAGED)
    assert len(failed) + len(staged) == 60
    assert 6 <= len(failed) <= 30  # 18 expected; far outside this is a broken draw
    assert all(e.retryable and "read error" in (e.reason or "") for e in failed)
    assert serialise(run_all(plan)[1]) == serialise(events)
    other = run_all(FaultPlan(seed=5, read_error_probability=0.3))[1]
    assert {e.file_key for e in of_kind(other, EventKind.FILE_FAILED)} != {e.file_key for e in failed}


def test_every_read_fails_at_probability_one() -> None:
    _, events = run_all(FaultPlan(read_error_probability=1.0))
    assert not of_kind(events, EventKind.FILE_STAGED)
    assert len(of_kind(events, EventKind.FILE_FAILED)) == 60


def test_a_bad_cartridge_cannot_be_mounted_and_its_files_fail_for_good() -> None:
    physics = physics_for("lto8")
    catalogue = catalogue_for(physics, cartridges=3, files=4)
    bad = catalogue.tapes[1]
    library = Library(catalogue, physics, drives=1, faults=FaultPlan(bad_cartridges=(bad,)))
    for tape in catalogue.tapes:
        library.submit(batch_of(tape, catalogue.on_tape(tape)[:2]), 0.0)
    events = library.run_until_idle()
    failed = of_kind(events, EventKind.FILE_FAILED)
    assert {e.tape for e in failed} == {bad} and len(failed) == 2
    assert all(not e.retryable and "bad cartridge" in (e.reason or "") for e in failed)
    assert bad not in {e.tape for e in of_kind(events, EventKind.MOUNTED)}
    assert len(of_kind(events, EventKind.FILE_STAGED)) == 4
    # The mount was tried once (wear counts it); later recalls fail at once, without another attempt.
    assert library.mount_counts()[bad] == 1
    later = library.now + 10
    library.submit(batch_of("again", catalogue.on_tape(bad)[2:]), later)
    events = library.advance_to(later)
    # the refusal is reported as a failed mount (carousel counts them), then each file fails
    assert [(e.kind, e.t, e.retryable) for e in events] == [(EventKind.MOUNT_FAILED, later, True)] + [
        (EventKind.FILE_FAILED, later, False)
    ] * 2
    library.run_until_idle()
    assert library.mount_counts()[bad] == 1


def test_bad_cartridges_are_drawn_from_the_catalogue_by_the_seed() -> None:
    tapes = [f"T{n:03d}" for n in range(50)]
    plan = FaultPlan(seed=9, bad_cartridges=("T007",), bad_cartridge_count=3)
    picked = plan.pick_bad_cartridges(tapes)
    assert len(picked) == 4 and "T007" in picked and picked <= set(tapes)
    assert plan.pick_bad_cartridges(tapes) == picked
    assert FaultPlan(seed=10, bad_cartridge_count=3).pick_bad_cartridges(tapes) != FaultPlan(
        seed=9, bad_cartridge_count=3
    ).pick_bad_cartridges(tapes)


def test_a_drive_going_down_gives_its_work_back_and_returns_empty() -> None:
    physics = physics_for("lto8")
    catalogue = catalogue_for(physics, cartridges=2, files=6)
    plan = fault_plan_from_mapping(
        {"drive_outages": [{"drive": "drive00", "start_s": 100.0, "end_s": 5000.0}]}
    )
    library = Library(catalogue, physics, drives=2, faults=plan)
    for tape in catalogue.tapes:
        library.submit(batch_of(tape, catalogue.on_tape(tape)), 0.0)
    events = library.advance_to(100.0)
    assert library.health(100.0) is Health.DEGRADED
    assert library.capacity(100.0).drives_total == 1
    down = [e for e in events if e.kind is EventKind.UNMOUNTED and e.drive == "drive00"]
    assert len(down) == 1 and down[0].reason == "drive down" and down[0].t == 100.0
    started_on_0 = [e.file_key for e in events if e.kind is EventKind.FILE_STARTED and e.drive == "drive00"]
    interrupted = started_on_0[-1]
    assert interrupted not in {
        e.file_key for e in of_kind(events, EventKind.FILE_STAGED)
    }  # it was being read
    events += library.run_until_idle()
    staged = of_kind(events, EventKind.FILE_STAGED)
    assert len(staged) == 12 and not of_kind(events, EventKind.FILE_FAILED)
    assert [e.file_key for e in staged].count(interrupted) == 1
    during = [e for e in events if e.drive == "drive00" and 100.0 < e.t < 5000.0]
    assert during == []
    assert library.health(library.now) is Health.ONLINE


def test_the_only_drive_down_makes_work_wait_not_fail() -> None:
    plan = fault_plan_from_mapping({"drive_outages": [{"drive": "drive00", "start_s": 0.0, "end_s": 3000.0}]})
    _, events = run_all(plan, drives=1, cartridges=2, files=3)
    assert of_kind(events, EventKind.MOUNTED)[0].t >= 3000.0
    assert len(of_kind(events, EventKind.FILE_STAGED)) == 6


def test_an_offline_library_holds_work_and_refuses_submissions() -> None:
    physics = physics_for("lto8")
    catalogue = catalogue_for(physics, cartridges=3, files=4)
    plan = FaultPlan(offline_windows=(Window(50.0, 4000.0),))
    library = Library(catalogue, physics, drives=1, faults=plan)
    first, second, third = catalogue.tapes
    library.submit(batch_of("b1", catalogue.on_tape(first)), 0.0)
    library.submit(batch_of("b2", catalogue.on_tape(second)), 0.0)
    events = library.advance_to(60.0)
    assert library.health(60.0) is Health.OFFLINE
    assert library.capacity(60.0).drives_free == 0
    with pytest.raises(Unavailable):
        library.submit(batch_of("b3", catalogue.on_tape(third)), 60.0)
    events += library.run_until_idle()
    # Started work finishes; nothing new starts in the window; nothing fails because of it.
    started_inside = [
        e for e in events if e.kind in (EventKind.FILE_STARTED, EventKind.MOUNTED) and 50.0 < e.t < 4000.0
    ]
    assert started_inside == []
    assert not of_kind(events, EventKind.FILE_FAILED)
    assert len(of_kind(events, EventKind.FILE_STAGED)) == 8
    assert {e.tape for e in of_kind(events, EventKind.MOUNTED)} == {first, second}


def test_a_slow_window_degrades_health() -> None:
    plan = fault_plan_from_mapping({"slow_windows": [{"start_s": 10, "end_s": 20, "latency_s": 5}]})
    physics = physics_for("lto8")
    library = Library(catalogue_for(physics, cartridges=1, files=1), physics, drives=1, faults=plan)
    assert library.health(0.0) is Health.ONLINE
    assert library.health(15.0) is Health.DEGRADED
    assert plan.latency_s(15.0) == 5 and plan.latency_s(20.0) == 0
    assert library.health(20.0) is Health.ONLINE


def test_a_fault_plan_loads_from_toml_and_bad_keys_are_named(tmp_path: Path) -> None:
    good = tmp_path / "faults.toml"
    good.write_text(
        "[faults]\nseed = 3\nread_error_probability = 0.01\nbad_cartridges = ['T00002']\n"
        "[[faults.drive_outages]]\ndrive = 'drive01'\nstart_s = 10\nend_s = 20\n"
    )
    plan = load_fault_plan(good)
    assert plan.seed == 3 and plan.bad_cartridges == ("T00002",)
    assert plan.drive_outages[0].drive == "drive01" and plan.drive_outages[0].end_s == 20
    bad = tmp_path / "bad.toml"
    bad.write_text("[faults]\nread_error_probabilty = 0.1\n")
    with pytest.raises(ConfigError, match=r"bad\.toml.*read_error_probabilty"):
        load_fault_plan(bad)
    with pytest.raises(ConfigError, match="end_s"):
        fault_plan_from_mapping({"offline_windows": [{"start_s": 10, "end_s": 5}]})
    with pytest.raises(ConfigError, match="overlap"):
        fault_plan_from_mapping(
            {"offline_windows": [{"start_s": 0, "end_s": 10}, {"start_s": 5, "end_s": 20}]}
        )
    broken = tmp_path / "broken.toml"
    broken.write_text("[faults\n")
    with pytest.raises(ConfigError, match=r"broken\.toml"):
        load_fault_plan(broken)


def test_an_outage_of_an_unknown_drive_is_refused() -> None:
    physics = physics_for("lto8")
    plan = fault_plan_from_mapping({"drive_outages": [{"drive": "drive05", "start_s": 1, "end_s": 2}]})
    with pytest.raises(ConfigError, match="drive05"):
        Library(catalogue_for(physics, cartridges=1, files=1), physics, drives=2, faults=plan)


@given(
    seed=st.integers(0, 10_000),
    discipline=st.sampled_from(["fifo", "tape_ordered"]),
    drives=st.integers(1, 3),
    outages=st.lists(st.tuples(st.integers(0, 2), st.floats(0, 6000), st.floats(1, 3000)), max_size=3),
    offline=st.one_of(st.none(), st.tuples(st.floats(0, 6000), st.floats(1, 2000))),
    read_errors=st.floats(0, 0.3),
    bad=st.integers(0, 2),
)
def test_under_any_mix_of_faults_every_recall_still_ends_once(
    seed: int,
    discipline: str,
    drives: int,
    outages: list[tuple[int, float, float]],
    offline: tuple[float, float] | None,
    read_errors: float,
    bad: int,
) -> None:
    by_drive: dict[int, tuple[float, float]] = {}
    for drive, start, length in outages:
        by_drive.setdefault(drive % drives, (start, start + length))  # one outage per drive: no overlap
    plan = FaultPlan(
        seed=seed,
        read_error_probability=read_errors,
        bad_cartridge_count=bad,
        drive_outages=tuple(DriveOutage(f"drive{d:02d}", a, b) for d, (a, b) in by_drive.items()),
        offline_windows=() if offline is None else (Window(offline[0], offline[0] + offline[1]),),
    )
    events, submitted = run_workload(seed, discipline, drives, 10, 0.2, faults=plan)
    check_recall_log(events, submitted)


def test_a_stalled_library_says_online_accepts_batches_and_starts_nothing_until_the_window_ends() -> None:
    physics = physics_for("lto8")
    catalogue = catalogue_for(physics, cartridges=2, files=3)
    plan = fault_plan_from_mapping({"stall_windows": [{"start_s": 10.0, "end_s": 5000.0}]})
    library = Library(catalogue, physics, drives=1, faults=plan)
    first, second = catalogue.tapes
    library.advance_to(20.0)
    library.submit(batch_of("b1", catalogue.on_tape(first)), 20.0)  # accepted: no Unavailable
    library.submit(batch_of("b2", catalogue.on_tape(second)), 20.0)
    assert library.health(4000.0) is Health.ONLINE
    assert library.capacity(4000.0).drives_free == 1
    events = library.advance_to(4999.0)
    assert events == []  # no mount, no start, no end in the window
    events = library.run_until_idle()
    assert min(e.t for e in events) >= 5000.0
    assert len(of_kind(events, EventKind.FILE_STAGED)) == 6
    assert not of_kind(events, EventKind.FILE_FAILED)


def test_a_hung_read_holds_its_drive_until_cancelled_then_the_drive_goes_on() -> None:
    physics = physics_for("lto8")
    catalogue = catalogue_for(physics, cartridges=1, files=3)
    entries = catalogue.on_tape(catalogue.tapes[0])
    hung = entries[0].path
    library = Library(catalogue, physics, drives=1, faults=FaultPlan(hung_reads=(HungRead(hung, reads=1),)))
    library.submit(batch_of("b1", entries), 0.0)
    events = library.advance_to(100_000.0)
    assert [e.path for e in of_kind(events, EventKind.FILE_STARTED)] == [hung]
    assert not of_kind(events, EventKind.FILE_STAGED)  # the drive is stuck on it
    key = of_kind(events, EventKind.FILE_STARTED)[0].file_key
    assert key is not None
    answer = library.cancel([key], 100_000.0)
    assert answer.cancelled == (key,)
    events = library.run_until_idle()
    cancelled = of_kind(events, EventKind.FILE_CANCELLED)
    assert [e.file_key for e in cancelled] == [key] and cancelled[0].reason is not None
    assert len(of_kind(events, EventKind.FILE_STAGED)) == 2  # the other files are read
    # read again (a new batch), it does not hang: it hung once
    library.submit(batch_of("b2", entries[:1]), library.now)
    assert [e.path for e in of_kind(library.run_until_idle(), EventKind.FILE_STAGED)] == [hung]


def test_stall_windows_may_not_overlap() -> None:
    with pytest.raises(ConfigError, match="stall_windows"):
        fault_plan_from_mapping({"stall_windows": [{"start_s": 0, "end_s": 10}, {"start_s": 5, "end_s": 20}]})

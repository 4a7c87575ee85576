"""The simulated library's engine: physics sums, order, robots, dismount delay, disciplines, depth, cancel."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carousel.domain.errors import ConfigError
from hsm_adapters.base import Batch, BatchFile, EventKind
from hsm_adapters.simulated.library import Library
from hsm_adapters.simulated.physics import analytic_efficiency
from hsm_adapters.simulated.profiles import builtin_profiles
from tests.unit.hsm_adapters.simulated.library_helpers import (
    batch_of,
    catalogue_for,
    check_recall_log,
    of_kind,
    physics_for,
    run_workload,
    serialise,
    staged_paths,
)

GB = 1_000_000_000


@pytest.mark.parametrize("name", builtin_profiles())
def test_a_single_recall_costs_the_physics_sum(name: str) -> None:
    physics = physics_for(name)
    profile = physics.profile
    catalogue = catalogue_for(physics, cartridges=1, files=10, size=GB)
    entry = catalogue.on_tape(catalogue.tapes[0])[6]
    library = Library(catalogue, physics, drives=1)
    library.submit(batch_of("b", [entry]), 0.0)
    events = library.run_until_idle()

    [mounted] = of_kind(events, EventKind.MOUNTED)
    [staged] = of_kind(events, EventKind.FILE_STAGED)
    [unmounted] = of_kind(events, EventKind.UNMOUNTED)
    assert mounted.t == pytest.approx(profile.robot_exchange_s + profile.load_s, rel=1e-12)
    read = (
        physics.locate_s(0, entry.position_bytes)
        + profile.per_file_overhead_s
        + entry.size_bytes / profile.rate_bytes_per_s
    )
    assert staged.t - mounted.t == pytest.approx(read, rel=1e-12)
    rewind = physics.rewind_s(entry.end_bytes, entry.size_bytes)
    assert unmounted.t - staged.t == pytest.approx(
        profile.dismount_delay_s + rewind + profile.unload_s + profile.robot_exchange_s, rel=1e-12
    )
    assert library.mount_counts() == {entry.tape: 1}


def test_lto9_unload_rewinds_by_the_class_of_bytes_read() -> None:
    physics = physics_for("lto9", dismount_delay_s=0.0)
    catalogue = catalogue_for(physics, cartridges=2, files=4, size=3 * GB)
    unload_s = {}
    for tape, files in ((catalogue.tapes[0], 1), (catalogue.tapes[1], 4)):  # 3 GB read, then 12 GB read
        library = Library(catalogue, physics, drives=1)
        library.submit(batch_of("b", catalogue.on_tape(tape)[:files]), 0.0)
        events = library.run_until_idle()
        unload_s[files] = (
            of_kind(events, EventKind.UNMOUNTED)[0].t - of_kind(events, EventKind.FILE_STAGED)[-1].t
        )
    p = physics.profile
    assert unload_s[1] == pytest.approx(55.0 + p.unload_s + p.robot_exchange_s)
    assert unload_s[4] == pytest.approx(110.0 + p.unload_s + p.robot_exchange_s)


def test_reading_a_batch_in_position_order_is_cheaper_than_in_random_order() -> None:
    physics = physics_for("lto7")
    catalogue = catalogue_for(physics, cartridges=1, files=30, size=GB, seed=5)
    entries = list(catalogue.on_tape(catalogue.tapes[0]))
    spent = {}
    for label, order in (("position", entries), ("random", random.Random(2).sample(entries, len(entries)))):
        library = Library(catalogue, physics, drives=1)
        library.submit(batch_of("b", order), 0.0)
        events = library.run_until_idle()
        assert staged_paths(events) == [e.path for e in order]  # the batch's order is the reading order
        spent[label] = of_kind(events, EventKind.FILE_STAGED)[-1].t - of_kind(events, EventKind.MOUNTED)[0].t
    assert spent["position"] < 0.9 * spent["random"]


@pytest.mark.parametrize(("profile", "size", "files"), [("lto9", 2 * GB, 10), ("t9940b", 284_000_000, 3)])
def test_the_efficiency_formula_and_the_simulator_agree(profile: str, size: int, files: int) -> None:
    # One drive, one file size, n files per mount, no dismount delay (the formula has none).
    physics = physics_for(profile, dismount_delay_s=0.0)
    catalogue = catalogue_for(physics, cartridges=60, files=files, size=size, seed=3)
    library = Library(catalogue, physics, drives=1)
    for tape in catalogue.tapes:
        library.submit(batch_of(tape, catalogue.on_tape(tape)), 0.0)
    library.run_until_idle()
    stats = library.stats()
    simulated = sum(stats.drive_read_s.values()) / library.now
    assert stats.mounts == 60
    assert simulated == pytest.approx(analytic_efficiency(physics, size, files), rel=0.05)


def test_a_late_file_rides_the_mount_during_the_dismount_delay() -> None:
    physics = physics_for("lto8", dismount_delay_s=300.0)
    catalogue = catalogue_for(physics, cartridges=1, files=3)
    first, second, third = catalogue.on_tape(catalogue.tapes[0])
    library = Library(catalogue, physics, drives=1)
    library.submit(batch_of("b1", [first]), 0.0)
    staged_at = physics.mount_s() + physics.locate_s(0, first.position_bytes) + physics.overhead_s()
    staged_at += physics.read_s(first.size_bytes)
    assert of_kind(library.advance_to(staged_at), EventKind.FILE_STAGED)[0].t == staged_at
    assert library.mount_counts() == {first.tape: 1}

    library.submit(batch_of("b2", [second]), staged_at + 299.0)  # still mounted: no new mount
    events = library.advance_to(staged_at + 299.0)
    assert of_kind(events, EventKind.FILE_STARTED)[0].t == staged_at + 299.0
    assert not of_kind(events, EventKind.MOUNTED)
    events = library.run_until_idle()
    assert len(of_kind(events, EventKind.UNMOUNTED)) == 1
    assert library.mount_counts() == {first.tape: 1}

    library.submit(batch_of("b3", [third]), library.now + 1.0)  # after the unload: a new mount
    library.run_until_idle()
    assert library.mount_counts() == {first.tape: 2}


def test_mounts_wait_for_a_free_robot() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=3, files=2)
    mount_times = {}
    for robots in (1, 3):
        library = Library(catalogue, physics, drives=3, robots=robots)
        for tape in catalogue.tapes:
            library.submit(batch_of(tape, catalogue.on_tape(tape)), 0.0)
        events = library.run_until_idle()
        mount_times[robots] = sorted(e.t for e in of_kind(events, EventKind.MOUNTED))
        if robots == 1:
            assert library.stats().robot_wait_s >= 3 * physics.profile.robot_exchange_s
    exchange = physics.profile.robot_exchange_s
    load = physics.profile.load_s
    assert mount_times[3] == pytest.approx([exchange + load] * 3)
    assert mount_times[1] == pytest.approx([exchange + load, 2 * exchange + load, 3 * exchange + load])


def interleaved(catalogue_tapes: list[list[BatchFile]]) -> list[Batch]:
    """One-file batches taking turns between tapes: A1 B1 A2 B2 ..."""
    batches = []
    for round_number in range(len(catalogue_tapes[0])):
        for files in catalogue_tapes:
            file = files[round_number]
            batches.append(Batch(f"b-{file.key}", file.path.split("/")[3], (file,)))
    return batches


def test_fifo_swaps_cartridges_where_tape_order_groups_them() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=2, files=5)
    per_tape = [
        [BatchFile(e.path, e.path, e.position_bytes, e.size_bytes) for e in catalogue.on_tape(tape)]
        for tape in catalogue.tapes
    ]
    results = {}
    for discipline in ("fifo", "tape_ordered"):
        library = Library(catalogue, physics, drives=1, discipline=discipline)
        for batch in interleaved(per_tape):
            library.submit(batch, 0.0)
        events = library.run_until_idle()
        assert len(of_kind(events, EventKind.FILE_STAGED)) == 10
        results[discipline] = (library.stats().mounts, library.now, staged_paths(events))
    assert results["fifo"][0] == 10  # every file its own mount
    assert results["tape_ordered"][0] == 2
    assert results["tape_ordered"][1] < results["fifo"][1]
    # fifo reads in arrival order; tape order reads one cartridge in head order, then the other
    assert results["fifo"][2] == [b.files[0].path for b in interleaved(per_tape)]
    first_tape = [f.path for f in per_tape[0]]
    assert results["tape_ordered"][2] == first_tape + [f.path for f in per_tape[1]]


def test_tape_order_mounts_the_cartridge_with_most_files_first_fifo_the_oldest() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=3, files=4)
    few, many, other = (catalogue.on_tape(tape) for tape in catalogue.tapes)
    first_mounted = {}
    for discipline in ("fifo", "tape_ordered"):
        library = Library(catalogue, physics, drives=1, discipline=discipline)
        library.submit(batch_of("occupy", [other[0]]), 0.0)  # takes the only drive
        library.submit(batch_of("few", few[:1]), 1.0)
        library.submit(batch_of("many", many[:3]), 2.0)
        events = library.run_until_idle()
        first_mounted[discipline] = [e.tape for e in of_kind(events, EventKind.MOUNTED)][1]
    assert first_mounted["tape_ordered"] == many[0].tape
    assert first_mounted["fifo"] == few[0].tape


def test_both_disciplines_keep_the_order_of_a_batch() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=1, files=6)
    backwards = list(reversed(catalogue.on_tape(catalogue.tapes[0])))
    for discipline in ("fifo", "tape_ordered"):
        library = Library(catalogue, physics, drives=2, discipline=discipline)
        library.submit(batch_of("b", backwards), 0.0)
        assert staged_paths(library.run_until_idle()) == [e.path for e in backwards]


def test_tape_order_serves_single_file_batches_in_head_order() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=1, files=8)
    entries = list(catalogue.on_tape(catalogue.tapes[0]))
    shuffled = random.Random(4).sample(entries, len(entries))
    library = Library(catalogue, physics, drives=1, discipline="tape_ordered")
    for number, entry in enumerate(shuffled):
        library.submit(batch_of(f"b{number}", [entry]), 0.0)
    assert staged_paths(library.run_until_idle()) == [e.path for e in entries]


def test_unknown_paths_and_wrong_tapes_fail_for_good_at_once() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=2, files=2)
    right = catalogue.on_tape(catalogue.tapes[0])[0]
    elsewhere = catalogue.on_tape(catalogue.tapes[1])[0]
    batch = Batch(
        "b",
        right.tape,
        (
            BatchFile("ghost", "/star/none/1.root", 0, 10),
            BatchFile("moved", elsewhere.path, elsewhere.position_bytes, elsewhere.size_bytes),
            BatchFile("good", right.path, right.position_bytes, right.size_bytes),
        ),
    )
    library = Library(catalogue, physics, drives=1)
    library.submit(batch, 5.0)
    events = library.advance_to(5.0)
    failed = {e.file_key: e for e in of_kind(events, EventKind.FILE_FAILED)}
    assert set(failed) == {"ghost", "moved"}
    assert all(not e.retryable and e.t == 5.0 for e in failed.values())
    assert "not in the library" in (failed["ghost"].reason or "")
    assert elsewhere.tape in (failed["moved"].reason or "")
    assert [e.file_key for e in of_kind(library.run_until_idle(), EventKind.FILE_STAGED)] == ["good"]


def test_a_batch_key_is_accepted_once() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=1, files=3)
    batch = batch_of("b", catalogue.on_tape(catalogue.tapes[0]))
    library = Library(catalogue, physics, drives=1)
    library.submit(batch, 0.0)
    library.submit(batch, 10.0)
    assert len(of_kind(library.run_until_idle(), EventKind.FILE_STAGED)) == 3


def test_queue_depth_holds_the_rest_outside_and_reports_slots() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=2, files=4)
    first, second = (catalogue.on_tape(tape) for tape in catalogue.tapes)
    library = Library(catalogue, physics, drives=2, queue_depth={"default": 3, "raw": 2})
    library.submit(batch_of("b1", first), 0.0)
    capacity = library.capacity(0.0)
    assert capacity.queue_slots == {"default": 0, "raw": 2}
    assert library.stats().overflow_files == 1
    events = library.run_until_idle()
    # The held-back file of the first tape entered when a slot freed; nothing was refused.
    assert len(of_kind(events, EventKind.FILE_STAGED)) == 4
    assert library.capacity(library.now).queue_slots == {"default": 3, "raw": 2}
    # With depth 1 the HSM sees one file at a time: tape order cannot group what it cannot see.
    narrow = Library(catalogue, physics, drives=1, queue_depth={"default": 1}, discipline="tape_ordered")
    for number in range(4):
        narrow.submit(batch_of(f"a{number}", [first[number]]), 0.0)
        narrow.submit(batch_of(f"b{number}", [second[number]]), 0.0)
    narrow.run_until_idle()
    assert narrow.stats().mounts == 8


def test_cancel_reports_what_it_could_stop() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=1, files=3)
    files = catalogue.on_tape(catalogue.tapes[0])
    library = Library(catalogue, physics, drives=1)
    library.submit(batch_of("b", files), 0.0)
    started = of_kind(library.advance_to(31.0), EventKind.FILE_STARTED)
    assert [e.file_key for e in started] == [files[0].path]
    result = library.cancel([files[0].path, files[1].path, files[2].path, "never-heard-of"], 31.0)
    assert result.in_progress == (files[0].path,)
    assert result.cancelled == (files[1].path, files[2].path)
    assert result.unknown == ("never-heard-of",)
    events = library.run_until_idle()
    assert staged_paths(events) == [files[0].path]
    assert {e.file_key for e in of_kind(events, EventKind.FILE_CANCELLED)} == {files[1].path, files[2].path}
    again = library.cancel([files[1].path, files[0].path], library.now)
    assert again.cancelled == (files[1].path,) and again.in_progress == (files[0].path,)
    assert library.take_events() == []  # no second cancel event


def test_the_first_load_of_new_media_pays_the_penalty_once() -> None:
    physics = physics_for("lto9", dismount_delay_s=0.0)
    catalogue = catalogue_for(physics, cartridges=1, files=2)
    first, second = catalogue.on_tape(catalogue.tapes[0])
    library = Library(catalogue, physics, drives=1, new_cartridges=[first.tape])
    library.submit(batch_of("b1", [first]), 0.0)
    events = library.run_until_idle()
    assert of_kind(events, EventKind.MOUNTED)[0].t == pytest.approx(physics.mount_s(first_load=True))
    start = library.now
    library.submit(batch_of("b2", [second]), start)
    events = library.run_until_idle()
    assert of_kind(events, EventKind.MOUNTED)[0].t - start == pytest.approx(physics.mount_s())


def test_time_runs_forward_and_bad_settings_are_refused() -> None:
    physics = physics_for("lto9")
    catalogue = catalogue_for(physics, cartridges=1, files=1)
    library = Library(catalogue, physics, drives=1)
    library.advance_to(10.0)
    with pytest.raises(ValueError, match="forward"):
        library.advance_to(5.0)
    with pytest.raises(ConfigError, match="discipline"):
        Library(catalogue, physics, drives=1, discipline="lifo")
    with pytest.raises(ConfigError, match="drives"):
        Library(catalogue, physics, drives=0)
    with pytest.raises(ConfigError, match="queue_depth"):
        Library(catalogue, physics, drives=1, queue_depth={"default": 0})


@given(
    seed=st.integers(0, 10_000),
    discipline=st.sampled_from(["fifo", "tape_ordered"]),
    drives=st.integers(1, 4),
    depth=st.one_of(st.none(), st.integers(1, 20)),
    cancel_share=st.floats(0, 0.5),
)
def test_every_recall_ends_exactly_once_and_drives_read_one_file_at_a_time(
    seed: int, discipline: str, drives: int, depth: int | None, cancel_share: float
) -> None:
    events, submitted = run_workload(seed, discipline, drives, depth, cancel_share)
    check_recall_log(events, submitted)


def test_every_submitted_file_ends_once_per_submission() -> None:
    physics = physics_for("lto8")
    catalogue = catalogue_for(physics, cartridges=4, files=6)
    library = Library(catalogue, physics, drives=2, queue_depth={"default": 5})
    submitted = []
    for number, tape in enumerate(catalogue.tapes):
        files = catalogue.on_tape(tape)
        library.submit(batch_of(f"b{number}", files), float(number))
        submitted.extend(f.path for f in files)
    library.cancel(submitted[::5], 4.0)
    events = library.run_until_idle()
    endings = [e.file_key for e in events if e.kind in (EventKind.FILE_STAGED, EventKind.FILE_CANCELLED)]
    assert sorted(endings) == sorted(submitted)


def test_the_same_inputs_give_byte_identical_event_logs() -> None:
    first = serialise(run_workload(11, "tape_ordered", 3, 10, 0.2)[0])
    second = serialise(run_workload(11, "tape_ordered", 3, 10, 0.2)[0])
    other = serialise(run_workload(12, "tape_ordered", 3, 10, 0.2)[0])
    assert first == second
    assert first != other


def test_nothing_reads_faster_than_the_native_rate() -> None:
    physics = physics_for("lto8")
    catalogue = catalogue_for(physics, cartridges=8, files=12, seed=5)
    library = Library(catalogue, physics, drives=3)
    for tape in catalogue.tapes:
        library.submit(batch_of(tape, catalogue.on_tape(tape)), 0.0)
    library.run_until_idle()
    stats = library.stats()
    for name, busy in stats.drive_busy_s.items():
        assert stats.drive_read_s[name] <= busy
    assert stats.bytes_staged / sum(stats.drive_busy_s.values()) < physics.profile.rate_bytes_per_s

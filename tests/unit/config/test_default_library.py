"""make run's embedded library: small enough to stage every file on a laptop, real physics, a quick clock."""

from __future__ import annotations

import zlib
from datetime import timedelta
from pathlib import Path

import pytest

from carousel.config import default_adapter_options
from carousel.domain.clock import ManualClock
from hsm_adapters.base import Batch, BatchFile, EventKind
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from hsm_adapters.simulated.profiles import builtin_profiles

GB = 10**9
MB = 10**6


def default_library() -> SimulatedAdapter:
    return build_simulated_adapter(default_adapter_options(), ManualClock())


def test_every_file_fits_on_a_laptop_disk() -> None:
    catalogue = default_library().library.catalogue
    sizes = [entry.size_bytes for entry in catalogue.values()]
    assert catalogue.total_bytes() < 2 * GB
    assert len(catalogue.tapes) == 20 and len(sizes) == 200
    assert min(sizes) > 100_000 and max(sizes) < 500 * MB


def test_its_physics_is_a_real_drive_and_a_mount_takes_seconds_not_minutes() -> None:
    sim = default_library()
    physics = sim.library.physics
    assert physics.profile.name in builtin_profiles()
    scale = default_adapter_options()["scale"]
    first_read_s = max(
        physics.mount_s() + physics.locate_s(0, entry.position_bytes) + physics.read_s(entry.size_bytes)
        for entry in sim.library.catalogue.values()
    )
    assert first_read_s > 100, "a real mount, locate and read on a full-length tape"
    assert first_read_s / scale < 5, "on the scaled clock a demo waits seconds per mount"


def test_the_banner_line_says_what_it_is() -> None:
    assert default_library().describe() == (
        "simulated lto8 library (LTO-8 full height, 12 TB cartridges, 360 MB/s native): 4 drives, 20 tapes,"
        " 200 files, 1.26 GB; clock 100x the wall clock"
    )


@pytest.mark.slow
def test_every_file_is_really_staged_with_its_bytes(tmp_path: Path) -> None:
    """All 200 files, 1.26 GB, through the adapter in virtual time: each lands at its destination whole, with
    the adler32 its FILE_STAGED reports."""
    clock = ManualClock()
    sim = build_simulated_adapter(default_adapter_options(), clock)
    catalogue = sim.library.catalogue
    keys: dict[str, Path] = {}
    for tape in catalogue.tapes:
        files = []
        for entry in catalogue.on_tape(tape):
            key = f"{tape}-{len(files)}"
            keys[key] = tmp_path / key
            files.append(BatchFile(key, entry.path, entry.position_bytes, entry.size_bytes, str(keys[key])))
        sim.submit(Batch(tape, tape, tuple(files)))
    staged = {}
    for _ in range(100_000):  # bounded: about a dozen events per file
        when = sim.library.next_event_time()
        if when is None:
            break
        clock.set(max(clock.now(), sim.clock_time(when) + timedelta(microseconds=1)))
        staged.update({e.file_key: e for e in sim.poll_events() if e.kind is EventKind.FILE_STAGED})
    assert set(staged) == set(keys), "every file staged, none failed"
    for key, destination in keys.items():
        value = 1
        with destination.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                value = zlib.adler32(chunk, value)
        assert staged[key].checksum == f"{value:08x}", key
        destination.unlink()  # checked: 1.26 GB need not stay in the temporary directory
    assert sim.writer.bytes_written == catalogue.total_bytes()

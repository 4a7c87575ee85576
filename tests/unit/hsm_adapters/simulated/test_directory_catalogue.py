"""A library built from a directory of real files: one subdirectory per tape, the real bytes staged."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest

from carousel.domain.clock import ManualClock
from carousel.domain.errors import ConfigError
from hsm_adapters.base import Batch, BatchFile, EventKind, OnTape
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.simulated.directory import directory_catalogue


def tapes(root: Path, files: dict[str, bytes]) -> Path:
    """Files by "<tape>/<path below it>"."""
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return root


def test_each_subdirectory_is_a_tape_its_files_in_sorted_order(tmp_path: Path) -> None:
    root = tapes(
        tmp_path / "library",
        {
            "TAPE02/b.root": b"b" * 30,
            "TAPE01/run2/z.root": b"z" * 7,
            "TAPE01/run1/a.root": b"a" * 10,
            "TAPE01/run1/b.root": b"",
            "TAPE01/.hidden": b"not a file on tape",
        },
    )
    (root / "TAPE01" / "link.root").symlink_to(root / "TAPE02" / "b.root")
    (root / "loose.root").write_bytes(b"a file outside any tape")

    catalogue, content = directory_catalogue(root)

    assert catalogue.tapes == ("TAPE01", "TAPE02")
    assert [(e.path, e.position_bytes, e.size_bytes) for e in catalogue.on_tape("TAPE01")] == [
        ("/run1/a.root", 0, 10),
        ("/run1/b.root", 10, 0),
        ("/run2/z.root", 10, 7),
    ]
    assert [(e.path, e.position_bytes, e.size_bytes) for e in catalogue.on_tape("TAPE02")] == [
        ("/b.root", 0, 30)
    ]
    assert content.checksum("/run2/z.root", 7) == f"{zlib.adler32(b'z' * 7):08x}"


def test_the_adapter_stages_the_real_bytes_with_their_checksum(tmp_path: Path, clock: ManualClock) -> None:
    data = os.urandom(200_000)
    root = tapes(tmp_path / "library", {"T1/raw/one.daq": data, "T1/raw/two.daq": b"second"})
    adapter = build_simulated_adapter({"profile": "lto8", "catalogue": {"directory": str(root)}}, clock)
    checksum = f"{zlib.adler32(data):08x}"
    assert adapter.lookup(["/raw/one.daq"]) == [OnTape("/raw/one.daq", "T1", 0, len(data), False, checksum)]

    destination = tmp_path / "incoming" / "one"
    destination.parent.mkdir()
    adapter.submit(Batch("b", "T1", (BatchFile("k", "/raw/one.daq", 0, len(data), str(destination)),)))
    clock.advance(3600)
    (staged,) = [e for e in adapter.poll_events() if e.kind is EventKind.FILE_STAGED]

    assert staged.checksum == checksum
    assert destination.read_bytes() == data


def test_a_bare_directory_option_is_refused_with_another_source(tmp_path: Path, clock: ManualClock) -> None:
    root = tapes(tmp_path / "library", {"T1/a": b"a"})
    with pytest.raises(ConfigError, match="exactly one of 'generate', 'csv' or 'directory'"):
        build_simulated_adapter({"catalogue": {"directory": str(root), "csv": "x.csv"}}, clock)


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"catalogue directory {tmp_path / 'absent'}: cannot read"):
        directory_catalogue(tmp_path / "absent")


def test_a_directory_without_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "library" / "T1").mkdir(parents=True)
    with pytest.raises(ConfigError, match="no files"):
        directory_catalogue(tmp_path / "library")


def test_a_path_on_two_tapes_names_both(tmp_path: Path) -> None:
    root = tapes(tmp_path / "library", {"T1/same.root": b"1", "T2/same.root": b"2"})
    with pytest.raises(
        ConfigError,
        match=r"tape T2, file /same.root: path: '/same.root' appears twice \(first in T1/same.root\)",
    ):
        directory_catalogue(root)


def test_a_tape_over_its_capacity_is_refused(tmp_path: Path) -> None:
    root = tapes(tmp_path / "library", {"T1/a": b"a" * 60, "T1/b": b"b" * 60})
    with pytest.raises(ConfigError, match="tape T1, file /b: position_bytes: the file ends at 120"):
        directory_catalogue(root, capacity_bytes=100)

"""The command adapter's data path: destinations reach the stage program, its checksums come back, and the
optional evict program hears which disk copies carousel removed."""

from __future__ import annotations

import json
import logging
import sys
import zlib
from pathlib import Path

import pytest

from carousel.domain.errors import ConfigError
from hsm_adapters.base import Batch, BatchFile, EventKind, OnTape
from hsm_adapters.command import CommandAdapter
from hsm_adapters.fake_hsm import command

from .command_support import PROGRAM_TIMEOUT_S, TAPE, FakeLibrary, ends, make_library, python_program


@pytest.fixture
def library(tmp_path: Path) -> FakeLibrary:
    return make_library(tmp_path)


@pytest.fixture
def adapters():
    built: list[CommandAdapter] = []
    yield built
    for adapter in built:
        adapter.close()


def test_the_fake_hsm_writes_each_file_at_its_destination_not_in_its_own_disk(
    library: FakeLibrary, clock, adapters, tmp_path: Path
) -> None:
    adapter = library.adapter(clock)
    adapters.append(adapter)
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    files = tuple(
        BatchFile(f"k{n}", f.path, f.position_bytes, f.size_bytes, str(incoming / f"k{n}"))
        for n, f in enumerate(library.files)
    )
    adapter.submit(Batch("b", TAPE, files))
    by_key = ends(adapter)
    for file in files:
        data = (library.tapes / TAPE / file.path.lstrip("/")).read_bytes()
        assert Path(str(file.destination)).read_bytes() == data
        assert by_key[file.key].checksum == f"{zlib.adler32(data):08x}"
    assert library.on_disk("b") == [], "the bytes went where carousel said, not to the HSM's own disk"


def test_a_checksum_is_kept_in_lower_case(tmp_path: Path, library: FakeLibrary, clock, adapters) -> None:
    wrapper = python_program(
        tmp_path,
        "wrapper",
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    request = json.loads(line)\n"
        "    open(request['destination'], 'wb').close()\n"
        "    staged = {'key': request['key'], 'status': 'STAGED', 'checksum': '0000000A'}\n"
        "    print(json.dumps(staged), flush=True)\n",
    )
    adapter = library.adapter(clock, stage={"argv": wrapper})
    adapters.append(adapter)
    destination = tmp_path / "k"
    adapter.submit(Batch("b", TAPE, (BatchFile("k", "/x", 0, 0, str(destination)),)))
    assert ends(adapter)["k"].checksum == "0000000a"


def test_the_evict_program_gets_the_paths(tmp_path: Path, library: FakeLibrary, clock, adapters) -> None:
    heard = tmp_path / "heard.jsonl"
    recorder = python_program(
        tmp_path, "evict", f"import sys\nopen({str(heard)!r}, 'a').write(sys.stdin.read())\n"
    )
    adapter = library.adapter(clock, evict={"argv": recorder, "max_paths_per_call": 2})
    adapters.append(adapter)

    adapter.evict(["/a", "/b", "/a", "/c"])
    adapter.evict([])

    assert [json.loads(line) for line in heard.read_text().splitlines()] == [
        {"path": "/a"},
        {"path": "/b"},
        {"path": "/c"},
    ]


def test_the_fake_hsm_evicts_its_own_disk_copies(library: FakeLibrary, clock, adapters) -> None:
    evict = {"argv": command("evict", library.tapes, library.disk), "timeout_s": PROGRAM_TIMEOUT_S}
    adapter = library.adapter(clock, evict=evict)
    adapters.append(adapter)
    adapter.submit(library.batch("b", 2))  # no destinations: the HSM keeps its own disk copies
    ends(adapter)
    first, second = library.files[:2]
    assert [r.on_disk for r in adapter.lookup([first.path, second.path]) if isinstance(r, OnTape)] == [
        True,
        True,
    ]

    adapter.evict([first.path])

    assert [r.on_disk for r in adapter.lookup([first.path, second.path]) if isinstance(r, OnTape)] == [
        False,
        True,
    ]


def test_without_an_evict_program_evict_does_nothing(library: FakeLibrary, clock, adapters) -> None:
    adapter = library.adapter(clock)
    adapters.append(adapter)
    adapter.submit(library.batch("b", 1))
    ends(adapter)
    adapter.evict([library.files[0].path])
    assert library.on_disk("b") == [library.files[0].path]


def test_a_failing_evict_program_is_logged_never_raised(
    library: FakeLibrary, clock, adapters, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = library.adapter(
        clock, evict={"argv": [sys.executable, "-c", "import sys; sys.exit('cannot evict')"]}
    )
    adapters.append(adapter)
    with caplog.at_level(logging.WARNING):
        adapter.evict(["/a"])
    assert "evict program of 1 paths: exit status 1; stderr: cannot evict" in caplog.text


def test_an_evict_program_that_is_not_there_is_refused_at_start(library: FakeLibrary, clock) -> None:
    with pytest.raises(ConfigError, match=r"option 'evict\.argv': program '/no/such/evict' is not found"):
        library.adapter(clock, evict={"argv": ["/no/such/evict"]})


def destined(library: FakeLibrary, incoming: Path, count: int) -> Batch:
    return Batch(
        "b",
        TAPE,
        tuple(
            BatchFile(f"k{n}", f.path, f.position_bytes, f.size_bytes, str(incoming / f"k{n}"))
            for n, f in enumerate(library.files[:count])
        ),
    )


def test_a_full_disk_is_a_retryable_failure_naming_the_destination(
    library: FakeLibrary, clock, adapters, tmp_path: Path
) -> None:
    adapter = library.adapter(clock, stage_args=["--misbehave", "disk-full"])
    adapters.append(adapter)
    batch = destined(library, tmp_path, 2)
    adapter.submit(batch)
    by_key = ends(adapter)
    for file in batch.files:
        event = by_key[file.key]
        assert (event.kind, event.retryable) == (EventKind.FILE_FAILED, True)
        assert event.reason == f"no space left on device writing {file.destination}"
        assert not Path(str(file.destination)).exists(), "the program removes what it began"


def test_corrupt_bytes_differ_from_the_checksum_reported(
    library: FakeLibrary, clock, adapters, tmp_path: Path
) -> None:
    adapter = library.adapter(clock, stage_args=["--misbehave", "corrupt"])
    adapters.append(adapter)
    batch = destined(library, tmp_path, 1)
    adapter.submit(batch)
    event = ends(adapter)["k0"]
    source = (library.tapes / TAPE / batch.files[0].path.lstrip("/")).read_bytes()
    written = Path(str(batch.files[0].destination)).read_bytes()
    assert event.kind is EventKind.FILE_STAGED and len(written) == len(source)
    assert event.checksum == f"{zlib.adler32(source):08x}" != f"{zlib.adler32(written):08x}"

"""A site of two simulated libraries sharing one disk buffer, on both databases: a file evicted from the
buffer is told to the library it was read from, and only to it, whichever library's cycle evicted it: the
upkeep's evictions on release (in the first library's cycle) and the room made for the second's hand-over."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.layout import BufferLayout
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from carousel.scheduler.site_cycle import SiteCycle
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from hsm_adapters.site import Site
from policies.registry import build_policy
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued
from tests.integration.scheduler.support import SMALL_LIBRARY, catalogue_files, settings

SIZE = 1000
ON_DISK = {"/east/a": "east", "/west/b": "west", "/east/c": "east"}  # least recently used first


class Heard:
    """The paths an adapter is told were evicted, one list per call."""

    def __init__(self, adapter: SimulatedAdapter) -> None:
        self.calls: list[list[str]] = []
        self._evict = adapter.evict
        adapter.evict = self  # type: ignore[method-assign]

    def __call__(self, paths: Sequence[str]) -> None:
        self.calls.append(list(paths))
        self._evict(paths)


@pytest.fixture
def libraries(clock: ManualClock) -> Iterator[dict[str, SimulatedAdapter]]:
    """Two simulated libraries, east and west, of the same catalogue (the same tape IDs in each)."""
    adapters = {name: build_simulated_adapter(dict(SMALL_LIBRARY), clock) for name in ("east", "west")}
    yield adapters
    for adapter in adapters.values():
        adapter.close()


@pytest.fixture
def layout(tmp_path: Path) -> BufferLayout:
    layout = BufferLayout.at(tmp_path / "buffer")
    layout.prepare()
    return layout


def staged_on_disk(factory: sessionmaker[Session], layout: BufferLayout) -> None:
    """Files read from each library, their bytes in the buffer, no pin holding them."""
    rows = []
    for n, (path, library) in enumerate(ON_DISK.items()):
        row = queued(path, "T1", n * SIZE, T0, size=SIZE, state=FileState.STAGED)
        row.library = library
        row.on_disk = True
        row.disk_used_at = T0 + timedelta(seconds=n)
        rows.append(row)
        layout.final_path(path).parent.mkdir(parents=True, exist_ok=True)
        layout.final_path(path).write_bytes(b"x" * SIZE)
    add_request(factory, rows, T0)


def site_cycle(
    factory: sessionmaker[Session],
    clock: ManualClock,
    adapters: dict[str, SimulatedAdapter],
    buffer: dict[str, Any],
) -> tuple[SiteCycle, dict[str, Heard]]:
    heard = {name: Heard(adapter) for name, adapter in adapters.items()}
    cycle = SiteCycle(
        settings(buffer=buffer),
        factory,
        adapters,
        {name: lambda: build_policy("fifo") for name in adapters},
        clock,
        lookup=Site(adapters),
    )
    return cycle, heard


def test_evictions_on_release_are_told_to_the_library_each_file_was_read_from(
    session_factory, layout, clock, libraries
):
    clock.set(T0 + timedelta(hours=1))
    staged_on_disk(session_factory, layout)
    buffer = {"enabled": True, "directory": str(layout.root), "evict_on_release": True}
    cycle, heard = site_cycle(session_factory, clock, libraries, buffer)

    report = cycle.run_once()

    assert report.buffer is not None and report.buffer.evicted == 3
    assert heard["east"].calls == [["/east/a", "/east/c"]]  # east's cycle evicted all three
    assert heard["west"].calls == [["/west/b"]]


def test_room_made_for_one_librarys_hand_over_is_told_to_each_library_of_its_own(
    session_factory, layout, clock, libraries
):
    clock.set(T0 + timedelta(hours=1))
    staged_on_disk(session_factory, layout)
    wanted = catalogue_files(libraries["west"], 1, clock.now())[0]
    wanted.library = "west"
    add_request(session_factory, [wanted], clock.now())
    assert wanted.size_bytes is not None
    # the on-disk files and the wanted one overflow the buffer by a byte: all three go (low watermark 0)
    buffer = {
        "enabled": True,
        "directory": str(layout.root),
        "evict_on_release": False,  # only the hand-over makes room
        "capacity_bytes": len(ON_DISK) * SIZE + wanted.size_bytes - 1,
        "high_watermark": 1.0,
        "low_watermark": 0.0,
    }
    cycle, heard = site_cycle(session_factory, clock, libraries, buffer)

    report = cycle.run_once()

    assert report.libraries["west"].evicted_files == 3 and report.libraries["west"].files_submitted == 1
    assert heard["east"].calls == [["/east/a", "/east/c"]]  # west's cycle evicted east's files too
    assert heard["west"].calls == [["/west/b"]]

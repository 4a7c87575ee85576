"""The library a replay runs each policy against: as the policy declares it (`library_needs`, policies/*.py),
the default for a policy that declares nothing, and a library file over either."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from carousel.domain.clock import ManualClock
from carousel.replay.driver import ReplayConfig, ReplayLibrary, replay_library
from carousel.replay.library_setup import LibraryFile
from carousel.replay.trace import Trace, TraceRow, make_trace
from hsm_adapters.base import Batch, BatchFile, EventKind
from hsm_adapters.simulated.builder import LibrarySetup
from hsm_adapters.simulated.library import Discipline
from hsm_adapters.simulated.read_order import locate_order
from tests.unit.policies.plugins import declare_plugin

GB = 10**9
TAPE = "L00001"
FAIR: dict[str, Any] = {"fair_share": {"weights": {"atlas": 3}}}

# docs/replay.md, "How each policy's library runs"
DECLARED = {
    "fifo": LibrarySetup(Discipline.FIFO),
    "star2006": LibrarySetup(Discipline.FIFO, queue_depth={"default": 30, "raw": 20}),
    "cta": LibrarySetup(Discipline.TAPE_ORDERED, read_order="shortest_locate"),
    "carousel": LibrarySetup(Discipline.TAPE_ORDERED, read_order="shortest_locate", merge_batches=True),
}


def one_tape() -> Trace:
    """Twelve 2 GB files spread along one LTO-9 cartridge: across its wraps, so locate order is not position
    order."""
    rows = [TraceRow(0.0, f"r{n}", f"/f{n}", 2 * GB, TAPE, n * 1_400 * GB + 7 * GB) for n in range(12)]
    return make_trace(rows, "one tape")


def config(policy: str, options: Mapping[str, Any] | None = None, **changes: Any) -> ReplayConfig:
    return ReplayConfig(
        profile="lto9", drives=2, policy=policy, policy_options=dict(options or {}), **changes
    )


PLUGINS = """\
from carousel.domain.library_needs import HsmDiscipline, LibraryNeeds
from carousel.domain.planning import Plan

class Idle:
    name = "idle"

    def plan(self, snapshot):
        return Plan()

class Bounded(Idle):
    name = "bounded"
    library_needs = LibraryNeeds(HsmDiscipline.FIFO, queue_depth={"default": 4})

def idle(options):
    return Idle()

def bounded(options):
    return Bounded()
"""


def install_plugin(root: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    (root / "replay_plugins.py").write_text(PLUGINS)
    declare_plugin(root, "carousel.policies", name, f"replay_plugins:{name}")
    monkeypatch.syspath_prepend(str(root))


@pytest.mark.parametrize("policy", sorted(DECLARED))
def test_each_policy_gets_the_library_it_declares_with_or_without_fair_share(policy):
    assert replay_library(one_tape(), config(policy)).setup == DECLARED[policy]
    assert replay_library(one_tape(), config(policy, FAIR)).setup == DECLARED[policy]


def test_star2006s_depth_option_is_the_librarys_queue_depth():
    built = replay_library(one_tape(), config("star2006", {"depth": {"default": 7}}))
    assert built.setup.queue_depth == {"default": 7}
    assert built.library.capacity(0.0).queue_slots == {"default": 7}


def test_a_plugin_that_declares_nothing_gets_the_tape_ordered_library_in_position_order(
    tmp_path, monkeypatch
):
    install_plugin(tmp_path, monkeypatch, "idle")
    built = replay_library(one_tape(), config("idle"))
    assert built.setup == LibrarySetup(Discipline.TAPE_ORDERED, queue_depth={}, read_order="position")
    assert built.library.discipline is Discipline.TAPE_ORDERED


def test_a_plugin_gets_the_library_it_declares(tmp_path, monkeypatch):
    install_plugin(tmp_path, monkeypatch, "bounded")
    built = replay_library(one_tape(), config("bounded"))
    assert built.setup == LibrarySetup(Discipline.FIFO, queue_depth={"default": 4})
    assert built.library.capacity(0.0).queue_slots == {"default": 4}


def test_a_library_file_replaces_the_keys_it_sets_and_keeps_the_policys_others():
    changes = LibraryFile(discipline=Discipline.TAPE_ORDERED, robots=2, new_media_fraction=0.5)
    setup = replay_library(one_tape(), config("star2006", library=changes)).setup
    assert setup.discipline is Discipline.TAPE_ORDERED
    assert (setup.robots, setup.new_media_fraction) == (2, 0.5)
    assert setup.queue_depth == DECLARED["star2006"].queue_depth
    assert setup.read_order == DECLARED["star2006"].read_order
    reordered = replay_library(one_tape(), config("carousel", library=LibraryFile(read_order="position")))
    assert reordered.setup.read_order == "position"
    assert reordered.setup.merge_batches and not reordered.setup.merges  # merging needs the locate order
    unmerged = replay_library(one_tape(), config("carousel", library=LibraryFile(merge_batches=False)))
    assert not unmerged.setup.merges
    merged = replay_library(one_tape(), config("cta", library=LibraryFile(merge_batches=True)))
    assert merged.setup.merges and merged.setup.describe().endswith("shortest-locate order, batches merged")


def whole_tape(built: ReplayLibrary) -> Batch:
    entries = built.library.catalogue.on_tape(TAPE)
    return Batch("b", TAPE, tuple(BatchFile(e.path, e.path, e.position_bytes, e.size_bytes) for e in entries))


def started_order(policy: str) -> list[str]:
    """The order the policy's replay library starts the reads of a whole-tape batch in."""
    built = replay_library(one_tape(), config(policy))
    clock = ManualClock()
    adapter = built.adapter(clock)
    adapter.submit(whole_tape(built))
    clock.advance(10**6)
    return [e.file_key for e in adapter.poll_events() if e.kind is EventKind.FILE_STARTED and e.file_key]


def test_a_declared_shortest_locate_order_is_how_the_replay_library_reads():
    built = replay_library(one_tape(), config("carousel"))
    batch = whole_tape(built)
    in_locate_order = [f.key for f in locate_order(built.physics, batch).files]
    in_position_order = [f.key for f in batch.files]
    assert in_locate_order != in_position_order  # the layout tells the two apart
    assert started_order("carousel") == started_order("cta") == in_locate_order
    assert started_order("fifo") == started_order("star2006") == in_position_order

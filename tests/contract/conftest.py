"""One harness per adapter: the adapter under test, files its library holds, and a way to let time pass.

Adding an adapter to the contract suite is one entry in HARNESSES: a function that builds the adapter over a
small library and says how time moves for it (virtual time for the simulated library, real subprocesses
waited on with a bound for the command adapter). Until a test first lets time pass, no file can end: the
simulated library's clock stands still, and the command adapter's stage programs hold before their first
copy at a gate that the first step opens.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from carousel.domain.clock import ManualClock
from hsm_adapters.base import Batch, BatchFile, Event, EventKind, HsmAdapter
from hsm_adapters.command import CommandAdapter, build_command_adapter
from hsm_adapters.fake_hsm import command_options, write_tape
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter

TERMINAL = frozenset({EventKind.FILE_STAGED, EventKind.FILE_FAILED, EventKind.FILE_CANCELLED})
REAL_TIME_BOUND_S = 30.0  # no test waits longer than this on real programs, even on a loaded machine
MAX_STEPS = 100_000


@dataclass(frozen=True)
class Held:
    """A file the adapter's library holds on tape."""

    path: str
    tape: str
    position_bytes: int
    size_bytes: int
    checksum: str  # adler32 of its bytes, 8 lower-case hex digits


@dataclass
class Harness:
    name: str
    adapter: HsmAdapter
    held: list[Held]  # at least two tapes with at least three files each
    absent_paths: list[str]  # paths the library does not hold
    step: Callable[[], bool]  # let some time pass; False when nothing more can happen
    incoming: Path  # an empty directory for destinations, as carousel's buffer's incoming directory

    def tapes(self) -> list[str]:
        return sorted({file.tape for file in self.held})

    def on_tape(self, tape: str) -> list[Held]:
        return sorted((file for file in self.held if file.tape == tape), key=lambda file: file.position_bytes)

    def batch(
        self, key: str, tape: str, files: Sequence[Held | str], *, destinations: Path | None = None
    ) -> Batch:
        """A batch of `files` (held ones, or absent paths) on `tape`; file keys are `<batch key>/<n>`.
        With `destinations`, file n's bytes go to `<destinations>/<batch key>.<n>`."""
        batch_files = []
        for n, file in enumerate(files):
            where = str(destinations / f"{key}.{n}") if destinations is not None else None
            if isinstance(file, Held):
                batch_files.append(
                    BatchFile(f"{key}/{n}", file.path, file.position_bytes, file.size_bytes, where)
                )
            else:
                batch_files.append(BatchFile(f"{key}/{n}", file, 0, 1, where))
        return Batch(key, tape, tuple(batch_files))


@dataclass
class Collector:
    """Gathers events by polling or by sink. In sink mode, polling must give nothing."""

    adapter: HsmAdapter
    mode: str
    events: list[Event] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.mode == "sink":
            self.adapter.set_sink(self._receive)

    def _receive(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def pump(self) -> None:
        polled = self.adapter.poll_events()
        if self.mode == "sink":
            assert polled == [], (
                "with a sink set, poll_events must have nothing: each event is delivered once"
            )
        else:
            with self._lock:
                self.events.extend(polled)

    def snapshot(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    def terminal(self) -> dict[str, list[Event]]:
        ends: dict[str, list[Event]] = {}
        for event in self.snapshot():
            if event.kind in TERMINAL:
                assert event.file_key is not None, f"a terminal event names its file: {event}"
                ends.setdefault(event.file_key, []).append(event)
        return ends

    def started(self) -> set[str]:
        return {e.file_key for e in self.snapshot() if e.kind is EventKind.FILE_STARTED and e.file_key}


def let_time_pass(harness: Harness, collector: Collector, until: Callable[[], bool]) -> bool:
    """Step the adapter's time until `until()` holds (True), or nothing more can happen (False)."""
    deadline = time.monotonic() + REAL_TIME_BOUND_S
    for _ in range(MAX_STEPS):
        collector.pump()
        if until():
            return True
        if not harness.step() or time.monotonic() > deadline:
            collector.pump()
            return until()
    return until()


def settle(harness: Harness, collector: Collector, keys: set[str]) -> dict[str, list[Event]]:
    """Time passes until every key has ended and nothing more happens; the terminal events of each key."""
    ended = let_time_pass(harness, collector, lambda: keys <= set(collector.terminal()))
    missing = keys - set(collector.terminal())
    assert ended, f"{harness.name}: files without a terminal event: {sorted(missing)}"
    let_time_pass(harness, collector, lambda: False)  # anything late (a second end) shows up now
    return {key: ends for key, ends in collector.terminal().items() if key in keys}


# --- harnesses ----------------------------------------------------------------------------------------------


def command_harness(tmp_path: Path, clock: ManualClock) -> Harness:
    tapes, disk = tmp_path / "tapes", tmp_path / "disk"
    held = []
    for tape in ("TAPE01", "TAPE02"):
        files = {f"/contract/{tape.lower()}/{n}.root": f"{tape}:{n};".encode() * (100 + n) for n in range(4)}
        held += [
            Held(f.path, f.tape, f.position_bytes, f.size_bytes, f"{zlib.adler32(files[f.path]):08x}")
            for f in write_tape(tapes, tape, files)
        ]
    disk.mkdir()
    gate = tmp_path / "time-passes"
    options = command_options(tapes, disk, ["--gate", str(gate)])
    options.update(max_workers=2, kill_grace_s=0.5)
    adapter = build_command_adapter(options, clock)
    assert isinstance(adapter, CommandAdapter)

    def step() -> bool:
        gate.touch()  # from the first step on, stage programs copy without holding
        # A bounded wait on the adapter's own condition, not a sleep: True while programs still run.
        return not adapter.wait_idle(0.05)

    absent = ["/contract/absent/a.root", "/contract/absent/b.root"]
    return Harness("command", adapter, held, absent, step, _incoming(tmp_path))


def simulated_harness(tmp_path: Path, clock: ManualClock) -> Harness:
    options = {
        "profile": "lto9",
        "drives": 2,
        # small files: the data-path tests write every byte
        "catalogue": {
            "generate": {
                "seed": 7,
                "cartridges": 3,
                "files_per_cartridge": 4,
                "size_model": "lognormal:200000:1",
            }
        },
    }
    adapter = build_simulated_adapter(options, clock)
    assert isinstance(adapter, SimulatedAdapter)
    catalogue = adapter.library.catalogue
    held = [
        Held(
            entry.path,
            entry.tape,
            entry.position_bytes,
            entry.size_bytes,
            adapter.content.checksum(entry.path, entry.size_bytes),
        )
        for tape in catalogue.tapes[:2]
        for entry in catalogue.on_tape(tape)
    ]

    def step() -> bool:
        # Virtual time: jump the clock to the library's next event.
        t = adapter.library.next_event_time()
        if t is None:
            return False
        # datetimes stop at microseconds: round up, or the clock lands just before the event.
        when = adapter.clock_time(t) + timedelta(microseconds=1)
        if when > clock.now():
            clock.set(when)
        return True

    absent = ["/contract/absent/a.root", "/contract/absent/b.root"]
    return Harness("simulated", adapter, held, absent, step, _incoming(tmp_path))


def _incoming(tmp_path: Path) -> Path:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    return incoming


HARNESSES: dict[str, Callable[[Path, ManualClock], Harness]] = {
    "command": command_harness,
    "simulated": simulated_harness,
}


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Iterator[Harness]:
    built = HARNESSES[request.param](tmp_path, clock)
    try:
        yield built
    finally:
        built.adapter.close()


@pytest.fixture(params=["poll", "sink"])
def collector(request: pytest.FixtureRequest, harness: Harness) -> Collector:
    return Collector(harness.adapter, request.param)

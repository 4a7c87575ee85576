"""Shared by the command adapter's tests: a fake library on disk, adapters over it, bounded waits.

Tests follow real programs by events, never by how long something took: the adapter's events, the fake HSM's
--marker file (how far a program got) and its --gate (a copy waits until the test creates the gate file).
Where a time limit must not run out before a program has set itself up, the adapter measures limits on a
HeldClock the test releases once it has seen the program ready.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from carousel.domain.clock import Clock
from hsm_adapters.base import Batch, BatchFile, Event, EventKind
from hsm_adapters.command import CommandAdapter, build_command_adapter
from hsm_adapters.fake_hsm import FakeFile, command, write_tape

TAPE = "T00042"
TERMINAL = frozenset({EventKind.FILE_STAGED, EventKind.FILE_FAILED, EventKind.FILE_CANCELLED})
BOUND_S = 60.0  # the longest any test waits on real programs
# A program's own time limit where the test is not about limits: generous, because a loaded machine can take
# seconds just to start a Python program.
PROGRAM_TIMEOUT_S = 20
# A limit no test reaches: a program under it ends within BOUND_S only if carousel stops it.
UNREACHED_TIMEOUT_S = 2 * BOUND_S
POLL_S = 0.01


class HeldClock:
    """A monotonic clock for programs' time limits that stands still until released, then runs at real speed
    from where it stood: a limit counts only from the moment the test has seen the program set itself up."""

    def __init__(self) -> None:
        self._at = time.monotonic()
        self._lag: float | None = None

    def __call__(self) -> float:
        lag = self._lag
        return self._at if lag is None else time.monotonic() - lag

    def release(self) -> None:
        self._lag = time.monotonic() - self._at


def marks(marker: Path) -> list[str]:
    """What a fake HSM program wrote to its --marker file: "started <pid>", "hanging", "finished"."""
    return marker.read_text().splitlines() if marker.exists() else []


def wait_for_mark(marker: Path, mark: str) -> None:
    """Bounded: until the program has written `mark` (a state polled for, not a time asserted)."""
    deadline = time.monotonic() + BOUND_S
    while mark not in marks(marker):
        assert time.monotonic() < deadline, f"the program never wrote {mark!r}; it wrote {marks(marker)}"
        time.sleep(POLL_S)


@dataclass
class FakeLibrary:
    tapes: Path
    disk: Path
    files: list[FakeFile]

    def batch(self, key: str, count: int | None = None, *, tape: str = TAPE) -> Batch:
        chosen = self.files if count is None else self.files[:count]
        return Batch(
            key,
            tape,
            tuple(
                BatchFile(f"{key}/{n}", f.path, f.position_bytes, f.size_bytes) for n, f in enumerate(chosen)
            ),
        )

    def options(
        self,
        *,
        stage_args: Sequence[str] = (),
        lookup_args: Sequence[str] = (),
        cancel: bool = True,
        stage: dict[str, object] | None = None,
        lookup: dict[str, object] | None = None,
        **top: object,
    ) -> dict[str, object]:
        """Options driving the fake HSM; `stage` and `lookup` add keys to those programs' tables."""
        options: dict[str, object] = {
            "lookup": {
                "argv": command("lookup", self.tapes, self.disk, *lookup_args),
                "timeout_s": PROGRAM_TIMEOUT_S,
                **(lookup or {}),
            },
            "stage": {
                "argv": command(
                    "stage", self.tapes, self.disk, "--tape", "{tape}", "--batch", "{batch}", *stage_args
                ),
                "timeout_s": PROGRAM_TIMEOUT_S,
                **(stage or {}),
            },
            "kill_grace_s": 0.3,
        }
        if cancel:
            options["cancel"] = {
                "argv": command("cancel", self.tapes, self.disk, "--batch", "{batch}"),
                "timeout_s": PROGRAM_TIMEOUT_S,
            }
        options.update(top)
        return options

    def adapter(
        self, clock: Clock, *, monotonic: Callable[[], float] = time.monotonic, **kwargs: object
    ) -> CommandAdapter:
        return build_command_adapter(self.options(**kwargs), clock, monotonic=monotonic)  # type: ignore[arg-type]

    def on_disk(self, key: str) -> list[str]:
        """The paths of batch `key`'s files that a stage program copied to disk."""
        return [f.path for f in self.batch(key).files if (self.disk / f.path.lstrip("/")).exists()]


def python_program(root: Path, name: str, source: str) -> list[str]:
    """An inline wrapper as an argv; in a file, because braces in an argv element are placeholders."""
    path = root / f"{name}.py"
    path.write_text(source)
    return [sys.executable, str(path)]


def make_library(root: Path, count: int = 4) -> FakeLibrary:
    tapes, disk = root / "tapes", root / "disk"
    files = write_tape(
        tapes, TAPE, {f"/star/raw/{n:04d}.daq": bytes([65 + n]) * (1000 + n) for n in range(count)}
    )
    disk.mkdir()
    return FakeLibrary(tapes, disk, files)


def wait_for(adapter: CommandAdapter, seen: list[Event], condition: Callable[[list[Event]], bool]) -> None:
    """Poll into `seen` until the condition holds: bounded waits on the adapter's condition, no bare sleep."""
    deadline = time.monotonic() + BOUND_S
    while True:
        seen += adapter.poll_events()
        if condition(seen):
            return
        assert time.monotonic() < deadline, f"condition not reached; events so far: {seen}"
        adapter.wait_idle(0.02)


def ends(adapter: CommandAdapter, seen: list[Event] | None = None) -> dict[str, Event]:
    """Wait until every batch is done; the one terminal event of each file (asserting there is only one).

    Events are added to `seen` when given.
    """
    assert adapter.wait_idle(BOUND_S), "the adapter never became idle"
    events = seen if seen is not None else []
    events += adapter.poll_events()  # `seen` gets the rest of the events too
    result: dict[str, Event] = {}
    for event in events:
        if event.kind in TERMINAL:
            assert event.file_key is not None
            assert event.file_key not in result, f"second end for {event.file_key}: {event}"
            result[event.file_key] = event
    return result

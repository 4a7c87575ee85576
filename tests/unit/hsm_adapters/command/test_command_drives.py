"""The command adapter and drives: a configured drive program is run with the drive's name and the command
(up, down_after_mount, down_now); a program that fails makes the call raise (the scheduler hands the change
over again); without a program no drive can be set. A stage program's MOUNT_FAILED line becomes the event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from carousel.domain.clock import ManualClock
from carousel.domain.errors import ConfigError, Unavailable
from hsm_adapters.base import Batch, BatchFile, ControlsDrives, DriveCommand, Event, EventKind
from hsm_adapters.command import CommandAdapter, build_command_adapter

from .command_support import PROGRAM_TIMEOUT_S, python_program, wait_for

# Records each call (its argv after the program) on a line of the log; exits with the status in argv[1].
RECORDER = (
    "import json, sys\n"
    "open(sys.argv[2], 'a').write(json.dumps(sys.argv[3:]) + '\\n')\n"
    "sys.exit(int(sys.argv[1]))\n"
)


def adapter_with(
    tmp_path: Path, clock: ManualClock, *, status: int = 0, drives: bool = True
) -> CommandAdapter:
    log = tmp_path / "calls.log"
    recorder = python_program(tmp_path, "recorder", RECORDER)
    options: dict[str, object] = {
        "lookup": {"argv": [*recorder, "0", str(log), "lookup"]},
        "stage": {"argv": [*recorder, "0", str(log), "stage"]},
    }
    if drives:
        options["drive"] = {
            "argv": [*recorder, str(status), str(log), "{drive}", "{command}"],
            "timeout_s": PROGRAM_TIMEOUT_S,
        }
        options["drives"] = ["lto01", "lto02"]
    return build_command_adapter(options, clock)


def calls(tmp_path: Path) -> list[list[str]]:
    log = tmp_path / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_drive_program_is_run_with_the_drive_and_the_command(tmp_path: Path) -> None:
    adapter = adapter_with(tmp_path, ManualClock())
    try:
        assert isinstance(adapter, ControlsDrives)
        assert adapter.drive_names() == ("lto01", "lto02")
        adapter.set_drive("lto02", DriveCommand.DOWN_AFTER_MOUNT)
        adapter.set_drive("lto02", DriveCommand.UP)
        adapter.set_drive("lto01", DriveCommand.DOWN_NOW)
        assert calls(tmp_path) == [["lto02", "down_after_mount"], ["lto02", "up"], ["lto01", "down_now"]]
        with pytest.raises(KeyError):
            adapter.set_drive("lto09", DriveCommand.UP)
    finally:
        adapter.close()


def test_a_failing_drive_program_makes_the_call_raise(tmp_path: Path) -> None:
    adapter = adapter_with(tmp_path, ManualClock(), status=3)
    try:
        with pytest.raises(Unavailable, match="drive program for lto01"):
            adapter.set_drive("lto01", DriveCommand.DOWN_NOW)
    finally:
        adapter.close()


def test_without_a_drive_program_no_drive_can_be_set(tmp_path: Path) -> None:
    adapter = adapter_with(tmp_path, ManualClock(), drives=False)
    try:
        assert adapter.drive_names() == ()
        with pytest.raises(KeyError):
            adapter.set_drive("lto01", DriveCommand.UP)
    finally:
        adapter.close()


def test_a_drive_program_needs_the_drive_names(tmp_path: Path) -> None:
    program = python_program(tmp_path, "p", "")
    options = {
        "lookup": {"argv": program},
        "stage": {"argv": program},
        "drive": {"argv": [*program, "{drive}"]},
    }
    with pytest.raises(ConfigError, match="drive needs drives"):
        build_command_adapter(options, ManualClock())


def test_a_mount_failed_line_becomes_the_event(tmp_path: Path) -> None:
    stage = python_program(
        tmp_path,
        "stage",
        "import json, sys\n"
        "keys = [json.loads(line)['key'] for line in sys.stdin]\n"
        "line = {'event': 'MOUNT_FAILED', 'tape': 'T1', 'drive': 'lto01', 'reason': 'label unreadable'}\n"
        "print(json.dumps(line))\n"
        "for key in keys:\n"
        "    print(json.dumps({'key': key, 'status': 'FAILED', 'reason': 'no mount', 'retryable': False}))\n",
    )
    adapter = build_command_adapter({"lookup": {"argv": stage}, "stage": {"argv": stage}}, ManualClock())
    try:
        adapter.submit(Batch("b", "T1", (BatchFile("k0", "/a", 0, 10),)))
        seen: list[Event] = []
        wait_for(adapter, seen, lambda events: any(e.kind is EventKind.FILE_FAILED for e in events))
        failed_mount = [e for e in seen if e.kind is EventKind.MOUNT_FAILED]
        assert [(e.tape, e.drive, e.reason) for e in failed_mount] == [("T1", "lto01", "label unreadable")]
    finally:
        adapter.close()

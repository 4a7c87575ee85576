"""A fake HSM on the local file system, run as a real program, for the command adapter's tests and demos.

`fake_hsm.py` is the program (standard library only). This module lays out its tapes and builds its
command lines, so a test or a demo never has to know the directory format.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from hsm_adapters.fake_hsm.fake_hsm import INDEX_NAME


@dataclass(frozen=True, slots=True)
class FakeFile:
    path: str
    tape: str
    position_bytes: int
    size_bytes: int


def script_path() -> Path:
    return Path(__file__).with_name("fake_hsm.py")


def write_tape(tape_root: Path, tape: str, files: Mapping[str, bytes], gap_bytes: int = 0) -> list[FakeFile]:
    """Puts `files` (HSM path -> content) on tape `tape` in the given order, each right after the last."""
    tape_dir = tape_root / tape
    index_file = tape_dir / INDEX_NAME
    index: dict[str, int] = json.loads(index_file.read_text()) if index_file.is_file() else {}
    position = max((index[name] + (tape_dir / name).stat().st_size for name in index), default=0)
    written = []
    for path, content in files.items():
        pure = PurePosixPath(path)
        if not pure.is_absolute() or ".." in pure.parts:
            raise ValueError(f"HSM paths are absolute and stay below the root: {path!r}")
        rel = pure.relative_to("/")
        target = tape_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        index[str(rel)] = position
        written.append(FakeFile(path, tape, position, len(content)))
        position += len(content) + gap_bytes
    tape_dir.mkdir(parents=True, exist_ok=True)
    index_file.write_text(json.dumps(index, indent=1, sort_keys=True))
    return written


def command(operation: str, tape_root: Path, disk_root: Path, *options: str) -> list[str]:
    """The argv that runs the fake HSM with this interpreter; options such as "--tape", "{tape}" go after."""
    return [
        sys.executable,
        str(script_path()),
        operation,
        "--tape-root",
        str(tape_root),
        "--disk-root",
        str(disk_root),
        *options,
    ]


def command_options(tape_root: Path, disk_root: Path, extra: Sequence[str] = ()) -> dict[str, object]:
    """A complete options table for the command adapter driving the fake HSM (extra args go to every call)."""
    return {
        "lookup": {"argv": command("lookup", tape_root, disk_root, *extra)},
        "stage": {
            "argv": command("stage", tape_root, disk_root, "--tape", "{tape}", "--batch", "{batch}", *extra)
        },
        "cancel": {"argv": command("cancel", tape_root, disk_root, "--batch", "{batch}", *extra)},
        "evict": {"argv": command("evict", tape_root, disk_root, *extra)},
        "drive": {
            "argv": command("drive", tape_root, disk_root, "--drive", "{drive}", "--command", "{command}")
        },
        "drives": ["fake-drive-0", "fake-drive-1"],
    }

"""Writes a staged file's bytes to the destination carousel chose, as the simulated library's disk mover.

A write that fails (a full disk, the destination's directory gone, any OSError) is not an exception out of the
adapter: `write` removes what it left behind and returns the reason, which the adapter turns into a retryable
FILE_FAILED. The fault plan's `disk_full` windows make writes fail with ENOSPC; its `corrupt_reads` make the
bytes written differ from the checksum the event reports (one byte flipped), for carousel's verification to
catch.
"""

from __future__ import annotations

import errno
import os
from contextlib import suppress
from pathlib import Path

from hsm_adapters.simulated.content import FileContent
from hsm_adapters.simulated.faults import FaultPlan


def describe_write_error(exc: OSError, destination: str) -> str:
    """ "no space left on device writing /buffer/incoming/x": what went wrong, lower case, and where."""
    what = exc.strerror or str(exc) or type(exc).__name__
    return f"{what[:1].lower()}{what[1:]} writing {destination}"


class StagedWriter:
    """Puts files' bytes at their destinations, with the fault plan's disk faults. Not thread-safe: the
    adapter calls it under its lock."""

    def __init__(self, content: FileContent, faults: FaultPlan) -> None:
        self.content = content
        self._disk_full = list(faults.disk_full)
        # writes each disk_full window still fails (None: every one), reads of each path still corrupted
        self._full_left: list[int | None] = [window.writes for window in faults.disk_full]
        self._corrupt_left: dict[str, int | None] = {c.path: c.reads for c in faults.corrupt_reads}
        self.writes = 0  # files written whole
        self.bytes_written = 0

    def write(self, path: str, size: int, destination: str, t: float) -> str | None:
        """Write the file at library time t; None when done, else the reason it failed (nothing is left
        at the destination)."""
        try:
            if self._disk_full_at(t):
                self._fail_full(destination)
            self.content.write(path, size, destination)
            if self._corrupts(path):
                _flip_first_byte(destination)
        except OSError as exc:
            with suppress(OSError):
                Path(destination).unlink(missing_ok=True)
            return describe_write_error(exc, destination)
        self.writes += 1
        self.bytes_written += size
        return None

    def _disk_full_at(self, t: float) -> bool:
        for index, window in enumerate(self._disk_full):
            if not window.contains(t):
                continue
            left = self._full_left[index]
            if left is None:
                return True
            if left > 0:
                self._full_left[index] = left - 1
                return True
        return False

    @staticmethod
    def _fail_full(destination: str) -> None:
        # The file is begun, as a real write that runs out of space would leave it, then the write fails.
        with open(destination, "wb"):
            pass
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), destination)

    def _corrupts(self, path: str) -> bool:
        if path not in self._corrupt_left:
            return False
        left = self._corrupt_left[path]
        if left is not None:
            if left <= 0:
                return False
            self._corrupt_left[path] = left - 1
        return True


def _flip_first_byte(destination: str) -> None:
    with open(destination, "r+b") as stream:
        first = stream.read(1)
        stream.seek(0)
        stream.write(bytes([first[0] ^ 0xFF]) if first else b"\0")

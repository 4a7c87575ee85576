"""A persistent log of the files the simulated library brought to disk, and the disk cache it stands for.

The simulated library lives in the process that runs it: when the process ends, its memory of what it read
goes with it, whereas a real HSM's disk cache outlives carousel. With a read log (adapter option `read_log`)
the adapter appends one CSV line per file that reaches disk: `instance,source,path,batch_key`, source `tape`
for a read from tape, `disk` for a file that was on disk already. A new process starts with the paths of the
log on disk: a submission of one is answered FILE_STAGED at once, without a tape read, as an HSM answers for a
file in its cache. Several processes may share one log (a leader and its standby): each appends whole lines
with one O_APPEND write, and each reads what the others appended when it is asked about a path (`refresh`),
not only at its start, as an HSM's cache answers for whatever reached it. Counting the `tape` lines of a path
tells how often it was read from tape, across restarts. When carousel evicts a path (`HsmAdapter.evict`), a
line with source `evicted` says the disk copy is gone: replayed in order, the log gives the paths on disk now.
For tests and demonstrations of crash recovery.
"""

from __future__ import annotations

import csv
import io
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from carousel.domain.errors import ConfigError

TAPE = "tape"
DISK = "disk"
EVICTED = "evicted"


class ReadLogLine(NamedTuple):
    instance: str  # the adapter instance (one per process) that wrote the line
    source: str  # TAPE or DISK
    path: str
    batch_key: str


def read_log_lines(path: str | Path) -> list[ReadLogLine]:
    """The lines of a read log (none when the file does not exist yet)."""
    file = Path(path)
    if not file.exists():
        return []
    lines: list[ReadLogLine] = []
    with file.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if len(row) != len(ReadLogLine._fields):
                raise ConfigError(f"{file}, line {number}: expected instance,source,path,batch_key")
            lines.append(ReadLogLine(*row))
    return lines


class ReadLog:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.instance = uuid.uuid4().hex[:12]
        self.on_disk: set[str] = set()
        self._offset = 0  # bytes of the log replayed into on_disk so far
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(f"read_log {self.path}: cannot open for appending: {exc}") from exc
        self.refresh()

    def refresh(self) -> None:
        """Replay the lines appended since the last look (by this process or another), in order: on_disk
        is then what the shared log says now. A line still being written is left for the next look."""
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            new = handle.read()
        whole = new[: new.rfind(b"\n") + 1]
        if not whole:
            return
        first_line = self._offset == 0
        self._offset += len(whole)
        text = whole.decode("utf-8")
        for number, row in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
            if len(row) != len(ReadLogLine._fields):
                where = f", line {number}" if first_line else ""
                raise ConfigError(f"{self.path}{where}: expected instance,source,path,batch_key")
            line = ReadLogLine(*row)
            if line.source == EVICTED:
                self.on_disk.discard(line.path)
            else:
                self.on_disk.add(line.path)

    def record(self, source: str, staged: Iterable[tuple[str, str | None]]) -> None:
        """Append (path, batch key) of files that reached disk; written at once, so a killed process loses
        no line it wrote."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for path, batch_key in staged:
            writer.writerow((self.instance, source, path, batch_key or ""))
            self.on_disk.add(path)
        self._append(buffer.getvalue())

    def evict(self, paths: Iterable[str]) -> None:
        """The disk copies of these paths are gone: one `evicted` line for each that was on disk."""
        self.refresh()
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for path in paths:
            if path in self.on_disk:
                writer.writerow((self.instance, EVICTED, path, ""))
                self.on_disk.discard(path)
        self._append(buffer.getvalue())

    def _append(self, text: str) -> None:
        # one write of whole lines with O_APPEND: lines of processes sharing the log never interleave
        data = text.encode("utf-8")
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def close(self) -> None:
        os.close(self._fd)

"""Which processes used the cores during a measurement: CPU seconds from Linux's /proc, by role.

A process that ends before the second reading is not counted (a connection pool that closes connections
under load hides its PostgreSQL backends' CPU this way: carousel's pools keep theirs); one that starts
between the readings is counted whole."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

_PROC = Path("/proc")
_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces), or None once gone."""
    try:
        return (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds the process has used (all its threads); 0 once it is gone."""
    fields = _stat_fields(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def _all_pids() -> list[int]:
    return [int(entry.name) for entry in _PROC.iterdir() if entry.name.isdigit()]


def with_descendants(roots: Iterable[int]) -> set[int]:
    """The processes and every process below them."""
    parent_of = {pid: int(fields[1]) for pid in _all_pids() if (fields := _stat_fields(pid)) is not None}
    found = set(roots)
    grew = True
    while grew:
        below = {pid for pid, parent in parent_of.items() if parent in found} - found
        found |= below
        grew = bool(below)
    return found


def postgres_backends(database: str) -> set[int]:
    """PostgreSQL's backends connected to `database` (their command line names it)."""
    found = set()
    for pid in _all_pids():
        try:
            command = (_PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if command.startswith("postgres:") and f" {database} " in command:
            found.add(pid)
    return found


class CoresUsed:
    """`roles()` names the processes of each role; between `start()` and `stop()`, each role's CPU seconds
    per second of wall time (cores)."""

    def __init__(self, roles: Callable[[], Mapping[str, set[int]]]) -> None:
        self._roles = roles
        self._before: dict[int, float] = {}
        self._started = 0.0

    def _readings(self) -> dict[str, dict[int, float]]:
        return {role: {pid: cpu_seconds(pid) for pid in pids} for role, pids in self._roles().items()}

    def start(self) -> None:
        self._before = {pid: s for readings in self._readings().values() for pid, s in readings.items()}
        self._started = time.monotonic()

    def stop(self) -> dict[str, float]:
        readings = self._readings()
        elapsed = max(time.monotonic() - self._started, 1e-9)
        return {
            role: sum(s - self._before.get(pid, 0.0) for pid, s in by_pid.items()) / elapsed
            for role, by_pid in readings.items()
        }

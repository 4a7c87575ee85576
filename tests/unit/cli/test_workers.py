"""carousel.cli.workers with real processes: a worker that dies is started again, one that dies as it
starts stops the supervisor in one line, and SIGTERM to the supervisor ends every worker. The start grace
is injected (0: every death is a restart; an hour: every death is at the start), so nothing waits on it."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

WAIT_S = 60.0  # bounded, and generous: each wait ends as soon as what it waits for happens
REPOSITORY = Path(__file__).parents[3]
SUPERVISE = "from tests.unit.cli.workers_harness import supervise; supervise()"


class Announcements:
    """The workers' "<event> <index> <pid>" lines, read from a FIFO this end holds open for writing too, so
    that it never reads an end of file between one worker and the next."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self._reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._keeper = os.open(path, os.O_WRONLY)
        self._pending = b""
        self.seen: list[int] = []

    def read(self, count: int, event: str) -> dict[int, int]:
        """The next `count` announcements, all of `event`, index to pid; fails if they do not come within
        WAIT_S."""
        started: dict[int, int] = {}
        deadline = time.monotonic() + WAIT_S
        while len(started) < count:
            if b"\n" not in self._pending:
                readable, _, _ = select.select([self._reader], [], [], max(0.0, deadline - time.monotonic()))
                assert readable, f"{len(started)} of {count} workers announced themselves within {WAIT_S:g} s"
                self._pending += os.read(self._reader, 4096)
                continue
            line, self._pending = self._pending.split(b"\n", 1)
            said, index, pid = line.decode().split()
            assert said == event, f"{line!r} where {event} was awaited"
            started[int(index)] = int(pid)
            self.seen.append(int(pid))
        return started

    def close(self) -> None:
        os.close(self._reader)
        os.close(self._keeper)


@contextlib.contextmanager
def _supervisor(
    tmp_path: Path, count: int, grace_s: float
) -> Iterator[tuple[subprocess.Popen[str], Announcements]]:
    announcements = Announcements(tmp_path / "started")
    process = subprocess.Popen(
        [sys.executable, "-c", SUPERVISE, str(announcements.path), str(count), str(grace_s)],
        cwd=REPOSITORY,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process, announcements
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
        for pid in announcements.seen:  # a test that failed may leave them running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        announcements.close()


def _ended(pid: int) -> bool:
    """Whether a worker of a supervisor that has exited is gone (it reaped each one it started)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_worker_that_dies_is_started_again_and_sigterm_ends_them_all(tmp_path: Path) -> None:
    with _supervisor(tmp_path, count=2, grace_s=0) as (supervisor, announcements):
        first = announcements.read(2, "started")
        os.kill(first[0], signal.SIGKILL)

        again = announcements.read(1, "started")
        assert list(again) == [0]
        assert again[0] != first[0]
        assert not _ended(first[1])  # the other one served on

        supervisor.send_signal(signal.SIGTERM)
        assert announcements.read(2, "stopped") == {0: again[0], 1: first[1]}  # each by its SIGTERM
        assert supervisor.wait(timeout=WAIT_S) == 0
        assert _ended(again[0]) and _ended(first[1])


def test_a_worker_that_dies_as_it_starts_stops_the_supervisor_in_one_line(tmp_path: Path) -> None:
    with _supervisor(tmp_path, count=2, grace_s=3600) as (supervisor, announcements):
        first = announcements.read(2, "started")
        os.kill(first[1], signal.SIGKILL)

        _, errors = supervisor.communicate(timeout=WAIT_S)
        assert supervisor.returncode == 2
        assert errors.strip().splitlines() == [
            f"API worker 1 exited with code {-signal.SIGKILL} as it started: see its log"
        ]
        assert announcements.read(1, "stopped") == {0: first[0]}  # the other one stopped with it
        assert _ended(first[0])

"""A supervisor of carousel.cli.workers with workers that do nothing but say they started, for the tests of
its restarts and stops: `python -c "from tests.unit.cli.workers_harness import supervise; supervise()"
FIFO COUNT GRACE_S`. Each worker writes "started <index> <pid>" to the FIFO and waits for its SIGTERM, at
which it writes "stopped <index> <pid>" and ends. A CliFailure is its message on stderr and exit status 2,
as the command line reports it."""

from __future__ import annotations

import os
import signal
import sys
from functools import partial

from carousel.cli.console import ERROR_EXIT, CliFailure
from carousel.cli.workers import run_workers


def hold(fifo: str, index: int) -> None:
    """A worker: says it started, then waits for SIGTERM, and says it stopped."""

    def stopped(*_: object) -> None:
        _announce(fifo, "stopped", index)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stopped)
    _announce(fifo, "started", index)
    while True:
        signal.pause()


def _announce(fifo: str, event: str, index: int) -> None:
    """One write, shorter than PIPE_BUF: never interleaved with another worker's."""
    with open(fifo, "w") as announcements:
        announcements.write(f"{event} {index} {os.getpid()}\n")


def supervise() -> None:
    fifo, count, grace_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    try:
        run_workers(partial(hold, fifo), count, start_grace_s=grace_s)
    except CliFailure as exc:
        print(exc, file=sys.stderr)
        sys.exit(ERROR_EXIT)

"""Several processes serving one port: `carousel api --workers N`.

The supervisor reserves the port (bound, not listening: a taken port is one line, before anything starts),
then starts N workers by `spawn` (a fresh interpreter each: nothing of the supervisor's threads, engine or
library is inherited). Each worker listens on the port with a socket of its own (SO_REUSEPORT), and the
kernel spreads new connections evenly over them; one shared listening socket would hand most connections to
whichever worker happens to be waiting (one worker took every call of an idle moment). A worker that dies is
started again, unless it dies within START_GRACE_S of its start (it would die again: the supervisor stops,
saying which). SIGINT or SIGTERM to the supervisor is passed to every worker as SIGTERM, and it waits for
them to finish their calls. Workers leave the terminal's process group, so Ctrl-C reaches them once. A
supervisor that dies without passing it on (SIGKILL, the OOM killer) takes its workers with it: each asks the
kernel for a SIGTERM when its parent dies (Linux's PR_SET_PDEATHSIG; elsewhere a thread watches the parent),
since workers left serving would share the port with the next supervisor's and count metrics no one adds up.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from typing import Any

import structlog

from carousel.cli.console import CliFailure

log = structlog.get_logger(__name__)

STOP_TIMEOUT_S = 30.0  # a worker still running this long after SIGTERM is killed
WATCH_S = 1.0  # how often the supervisor looks for a stop request while no worker dies
START_GRACE_S = 10.0  # a worker that dies sooner after its start is not started again
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def run_workers(target: Callable[[int], None], count: int, *, start_grace_s: float = START_GRACE_S) -> None:
    """Run `target(index)` in `count` processes until SIGINT or SIGTERM; start again any that dies, unless
    within `start_grace_s` of its start (CliFailure). `target` must be picklable by reference (a module-level
    function, or a partial of one with picklable values)."""
    context = multiprocessing.get_context("spawn")
    stop = threading.Event()
    previous = {
        signum: signal.signal(signum, lambda *_: stop.set()) for signum in (signal.SIGINT, signal.SIGTERM)
    }
    workers: dict[int, tuple[BaseProcess, float]] = {}
    try:
        for index in range(count):
            workers[index] = (_start(context, target, index), time.monotonic())
        while not stop.is_set():
            wait([worker.sentinel for worker, _ in workers.values()], timeout=WATCH_S)
            for index, (worker, started) in list(workers.items()):
                if worker.is_alive() or stop.is_set():
                    continue
                if time.monotonic() - started < start_grace_s:
                    code = worker.exitcode
                    raise CliFailure(f"API worker {index} exited with code {code} as it started: see its log")
                log.warning("API worker ended; starting it again", worker=index, exit_code=worker.exitcode)
                worker.close()
                workers[index] = (_start(context, target, index), time.monotonic())
    finally:
        for worker, _ in workers.values():
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signal.SIGTERM)
        for worker, _ in workers.values():
            worker.join(STOP_TIMEOUT_S)
            if worker.is_alive():
                worker.kill()
                worker.join()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _start(context: Any, target: Callable[[int], None], index: int) -> BaseProcess:
    process: BaseProcess = context.Process(
        target=_worker_main, args=(target, index, os.getpid()), name=f"carousel-api-{index}"
    )
    process.start()
    return process


def _worker_main(target: Callable[[int], None], index: int, supervisor: int) -> None:
    os.setpgid(0, 0)  # out of the terminal's group: Ctrl-C comes once, as the supervisor's SIGTERM
    _stop_with(supervisor)
    target(index)


def _stop_with(supervisor: int) -> None:
    """SIGTERM to this worker (a graceful stop) when the supervisor process dies, however it dies."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    else:
        watch = threading.Thread(target=_watch_parent, args=(supervisor,), name="watch-parent", daemon=True)
        watch.start()
    if os.getppid() != supervisor:  # it died before the kernel was asked
        os.kill(os.getpid(), signal.SIGTERM)


def _watch_parent(supervisor: int) -> None:
    while os.getppid() == supervisor:
        time.sleep(WATCH_S)
    os.kill(os.getpid(), signal.SIGTERM)

"""Several processes serving one listening socket: `carousel api --workers N`.

The supervisor binds the socket (so a taken port is one line, before anything starts), then starts N
workers by `spawn` (a fresh interpreter each: nothing of the supervisor's threads, engine or library
is inherited) handing each the socket; each builds its own engine, adapter and app, and the kernel gives
each new connection to one of them. A worker that dies is started again. SIGINT or SIGTERM to the
supervisor is passed to every worker as SIGTERM, and it waits for them to finish their calls.
Workers leave the terminal's process group, so Ctrl-C reaches them once, through the supervisor.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from typing import Any

import structlog

log = structlog.get_logger(__name__)

STOP_TIMEOUT_S = 30.0  # a worker still running this long after SIGTERM is killed
WATCH_S = 1.0  # how often the supervisor looks for a stop request while no worker dies


def run_workers(target: Callable[[socket.socket, int], None], sock: socket.socket, count: int) -> None:
    """Run `target(sock, index)` in `count` processes until SIGINT or SIGTERM; start again any that dies.
    `target` must be a module-level function (it is named, not copied, into each process)."""
    context = multiprocessing.get_context("spawn")
    stop = threading.Event()
    previous = {
        signum: signal.signal(signum, lambda *_: stop.set()) for signum in (signal.SIGINT, signal.SIGTERM)
    }
    workers: dict[int, BaseProcess] = {}
    try:
        for index in range(count):
            workers[index] = _start(context, target, sock, index)
        while not stop.is_set():
            wait([worker.sentinel for worker in workers.values()], timeout=WATCH_S)
            for index, worker in list(workers.items()):
                if not worker.is_alive() and not stop.is_set():
                    log.warning(
                        "API worker ended; starting it again", worker=index, exit_code=worker.exitcode
                    )
                    worker.close()
                    workers[index] = _start(context, target, sock, index)
    finally:
        for worker in workers.values():
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signal.SIGTERM)
        for worker in workers.values():
            worker.join(STOP_TIMEOUT_S)
            if worker.is_alive():
                worker.kill()
                worker.join()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _start(
    context: Any, target: Callable[[socket.socket, int], None], sock: socket.socket, index: int
) -> BaseProcess:
    process: BaseProcess = context.Process(
        target=_worker_main, args=(target, sock, index), name=f"carousel-api-{index}", daemon=False
    )
    process.start()
    return process


def _worker_main(target: Callable[[socket.socket, int], None], sock: socket.socket, index: int) -> None:
    os.setpgid(0, 0)  # out of the terminal's group: Ctrl-C comes once, as the supervisor's SIGTERM
    target(sock, index)

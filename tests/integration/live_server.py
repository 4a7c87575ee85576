"""An ASGI app served by uvicorn on a loopback port of its own, in a thread of the test's process."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp


@contextmanager
def serving(app: ASGIApp, *, process_logging: bool = False) -> Iterator[str]:
    """Yields the base URL (http://127.0.0.1:PORT) while the app is served. With `process_logging`, uvicorn's
    records go through the process's logging set-up, as `carousel serve` has it (log_config=None)."""
    log_config = None if process_logging else uvicorn.config.LOGGING_CONFIG
    config = uvicorn.Config(app, log_level="warning", log_config=log_config)
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # listening before the thread starts: the first connection waits instead of failing
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()

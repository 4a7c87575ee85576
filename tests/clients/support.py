"""What the real-client tests share: `carousel serve` started as a subprocess on loopback with a SQLite file
and a simulated library on a scaled clock, waited for through /readyz with a bounded loop, and stopped.

Plain functions raising ServiceNotReady rather than pytest helpers: the XRootD test runs them inside a
private network namespace, in a driver process of its own.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import tomli_w

from carousel.db.engine import upgrade_to_head

START_TIMEOUT_S = 120.0  # bounded; a shared, loaded machine may take a minute to import and start
DATABASE_FILE = "carousel.sqlite3"
STOP_TIMEOUT_S = 20.0


class ServiceNotReady(Exception):
    """carousel serve exited, or did not answer /readyz in time; the message holds its log."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def carousel_program(name: str = "carousel") -> str:
    """A console script of this virtual environment."""
    return str(Path(sys.executable).with_name(name))


def write_carousel_config(
    directory: Path,
    *,
    port: int,
    library: dict[str, Any],
    cycle_interval_s: float = 0.5,
    buffer: dict[str, Any] | None = None,
) -> Path:
    """A carousel.toml: SQLite in `directory`, `library` as the simulated adapter's options, the disk buffer
    as `buffer` says (None: off, for catalogues of multi-GB files)."""
    config = directory / "carousel.toml"
    settings = {
        "database_url": f"sqlite:///{directory / DATABASE_FILE}",
        "host": "127.0.0.1",
        "port": port,
        "cycle_interval_s": cycle_interval_s,
        "adapter_options": library,
        "buffer": {"enabled": False} if buffer is None else buffer,
    }
    config.write_text(tomli_w.dumps(settings))
    return config


def service_environment(config: Path) -> dict[str, str]:
    """This environment without CAROUSEL_* settings or proxies, pointing carousel at `config`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAROUSEL_") and "proxy" not in k.lower()}
    env["CAROUSEL_CONFIG"] = str(config)
    return env


def wait_ready(
    url: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float = START_TIMEOUT_S
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceNotReady(f"carousel serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise ServiceNotReady(f"carousel serve was not ready within {timeout_s:g} s:\n{log.read_text()}")


def start_carousel(directory: Path, env: dict[str, str], port: int) -> tuple[subprocess.Popen[bytes], Path]:
    """The database of write_carousel_config migrated, then `carousel serve` on 127.0.0.1:port logging to
    directory/serve.log."""
    # In this process rather than `carousel db upgrade`: the command line takes seconds to import.
    upgrade_to_head(f"sqlite:///{directory / DATABASE_FILE}")
    carousel = carousel_program()
    log = directory / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [carousel, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    return process, log


def stop(
    process: subprocess.Popen[bytes], sig: int = signal.SIGINT, timeout_s: float = STOP_TIMEOUT_S
) -> None:
    """Ask the process to stop, then kill it if it does not within timeout_s."""
    if process.poll() is not None:
        return
    process.send_signal(sig)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

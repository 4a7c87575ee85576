"""carousel processes for the resilience tests: `carousel scheduler` and `carousel api` in subprocesses, their
output read as it comes (JSON log lines, each stamped with when the process wrote it), killed or stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from tests.clients.support import carousel_program, free_port, stop, wait_ready

START_TIMEOUT_S = 120.0
BANNER = "carousel scheduler: a cycle every"
LEADS = "leader lock taken: this instance leads"


def environment(settings: Mapping[str, str]) -> dict[str, str]:
    """This environment without CAROUSEL_* settings or proxies, plus the given CAROUSEL_* settings. The disk
    buffer is off unless they turn it on: the catalogues here hold multi-GB files."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAROUSEL_") and "proxy" not in k.lower()}
    env["CAROUSEL_BUFFER__ENABLED"] = "false"
    env.update(settings)
    env["CAROUSEL_LOG_FORMAT"] = "json"
    return env


class Watched:
    """A carousel subprocess whose merged output goes to a log file and, line by line, to `lines`."""

    def __init__(self, args: list[str], env: Mapping[str, str], log: Path) -> None:
        self.log = log
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            [carousel_program(), *args], env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        with stream, self.log.open("ab") as sink:
            for raw in stream:
                sink.write(raw)
                sink.flush()
                with self._changed:
                    self.lines.append(raw.decode("utf-8", "replace"))
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def events(self, name: str) -> list[dict[str, Any]]:
        """The JSON log records whose event is `name` (each has the `timestamp` it was written at)."""
        found: list[dict[str, Any]] = []
        for line in list(self.lines):
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("event") == name:
                    found.append(record)
        return found

    def wait_for(self, text: str, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until a line contains `text`; fails when the process ends first."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                if any(text in line for line in self.lines):
                    return
                if self.process.poll() is not None and not self._reader.is_alive():
                    raise AssertionError(
                        f"exited ({self.process.returncode}) before {text!r}:\n{self.tail()}"
                    )
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {text!r} within {timeout_s:g} s:\n{self.tail()}")
                self._changed.wait(min(left, 0.5))

    def tail(self, lines: int = 40) -> str:
        return "".join(self.lines[-lines:])

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self._reader.join(10)

    def stop(self) -> None:
        stop(self.process, signal.SIGTERM)  # type: ignore[arg-type]
        self._reader.join(10)


def scheduler(env: Mapping[str, str], log: Path) -> Watched:
    return Watched(["scheduler"], env, log)


def api(env: Mapping[str, str], log: Path) -> tuple[Watched, str]:
    """`carousel api` on a free port of 127.0.0.1, ready; and its base URL."""
    port = free_port()
    watched = Watched(["api", "--host", "127.0.0.1", "--port", str(port)], env, log)
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, watched.process, log)  # type: ignore[arg-type]
    return watched, base

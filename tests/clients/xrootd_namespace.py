"""Runs inside the XRootD test's private network namespace (`unshare -n`, only `lo`, brought up first):
starts `carousel serve` and real xrootd servers with the prepare plug-in there, then runs what the test asks,
one JSON command a line on standard input, one JSON answer a line on standard output:

    {"op": "run", "argv": [...], "timeout_s": 30}   -> {"rc", "stdout", "stderr"}  (rc null: timed out)
    {"op": "http", "method": "GET", "path": "/api/native/v1/requests/ID"}  -> {"status", "body"}

The first line it writes says whether everything started: {"ready": true} or {"ready": false, "error"}.
Everything it started is stopped when its input ends, when it fails, or on SIGTERM.

    python -m tests.clients.xrootd_namespace SPEC.json
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from tests.clients.support import ServiceNotReady, start_carousel, stop, wait_ready

XROOTD_START_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 10.0


class NotStarted(Exception):
    pass


def _answer(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + XROOTD_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise NotStarted(f"xrootd exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise NotStarted(f"xrootd did not listen within {XROOTD_START_TIMEOUT_S:g} s")


def _run(command: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    try:
        done = subprocess.run(
            command["argv"],
            env=env,
            capture_output=True,
            text=True,
            timeout=command.get("timeout_s", 30),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return {"rc": None, "stdout": str(exc.stdout or ""), "stderr": str(exc.stderr or "")}
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def _http(command: dict[str, Any], base_url: str) -> dict[str, Any]:
    try:
        response = httpx.request(
            command.get("method", "GET"),
            base_url + command["path"],
            json=command.get("json"),
            timeout=HTTP_TIMEOUT_S,
            trust_env=False,
        )
    except httpx.HTTPError as exc:
        return {"status": None, "body": f"{type(exc).__name__}: {exc}"}
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    return {"status": response.status_code, "body": body}


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(spec_file: str) -> int:
    """spec: {"workdir", "carousel_port", "carousel_url", "carousel_env", "client_env",
    "xrootds": [{"port", "argv", "env", "out"}]}"""
    spec = json.loads(Path(spec_file).read_text())
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    started: list[tuple[subprocess.Popen[bytes], int]] = []  # and the signal that stops each
    try:
        try:
            carousel, log = start_carousel(Path(spec["workdir"]), spec["carousel_env"], spec["carousel_port"])
            started.append((carousel, signal.SIGINT))
            wait_ready(spec["carousel_url"], carousel, log)
            for xrootd in spec["xrootds"]:
                out = Path(xrootd["out"])
                with out.open("wb") as sink:
                    process = subprocess.Popen(
                        xrootd["argv"], env=xrootd["env"], stdout=sink, stderr=subprocess.STDOUT
                    )
                started.append((process, signal.SIGTERM))
                _wait_listening(xrootd["port"], process, out)
        except (ServiceNotReady, NotStarted, OSError, subprocess.SubprocessError) as exc:
            _answer({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
            return 1
        _answer({"ready": True})
        for line in sys.stdin:
            command = json.loads(line)
            if command["op"] == "run":
                _answer(_run(command, spec["client_env"]))
            elif command["op"] == "http":
                _answer(_http(command, spec["carousel_url"]))
            else:
                _answer({"error": f"unknown op {command['op']!r}"})
        return 0
    finally:
        for process, sig in reversed(started):
            stop(process, sig, timeout_s=10)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

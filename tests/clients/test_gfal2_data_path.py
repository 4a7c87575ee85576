"""The data path with Debian's gfal2 clients against `carousel serve` (SQLite, the disk buffer on, a simulated
library built from a directory of real files): gfal-bringonline, then gfal-copy over HTTP gives the bytes
whose adler32 gfal-sum reports; gfal-evict, then archiveinfo says TAPE and the buffer file is gone."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.clients.support import (
    ServiceNotReady,
    free_port,
    service_environment,
    start_carousel,
    stop,
    wait_ready,
    write_carousel_config,
)

pytestmark = [pytest.mark.clients, pytest.mark.xdist_group("gfal2")]

SYSTEM_PYTHON = "/usr/bin/python3"  # python3-gfal2 lives there, not in the virtual environment
CLIENT_TIMEOUT_S = 120.0
EVICTED_WITHIN_S = 30.0  # the scheduler evicts at its next cycle (every 0.5 s here)
PATHS = ["/atlas/run1/a.root", "/atlas/run1/b.root", "/atlas/run2/c.root"]


def content(path: str) -> bytes:
    rng = random.Random(path)
    return rng.randbytes(rng.randint(100_000, 400_000))


@dataclass
class Service:
    url: str
    env: dict[str, str]
    buffer: Path


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    tmp = tmp_path_factory.mktemp("gfal2-data")
    tapes = tmp / "tapes"
    for n, path in enumerate(PATHS):
        file = tapes / f"T{n % 2:05d}" / path.lstrip("/")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(content(path))
    port = free_port()
    library = {"profile": "lto8", "drives": 2, "catalogue": {"directory": str(tapes)}, "scale": 1000.0}
    buffer = {"enabled": True, "directory": str(tmp / "buffer"), "capacity_bytes": 64 * 1024 * 1024}
    env = service_environment(write_carousel_config(tmp, port=port, library=library, buffer=buffer))
    env["GFAL_PYTHONBIN"] = SYSTEM_PYTHON
    process, log = start_carousel(tmp, env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_ready(url, process, log)
        except ServiceNotReady as exc:
            pytest.fail(str(exc))
        yield Service(url, env, tmp / "buffer")
    finally:
        stop(process)


def gfal(service: Service, *args: str) -> str:
    result = subprocess.run(
        list(args), env=service.env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False
    )
    assert result.returncode == 0, f"{args[0]} exited {result.returncode}: {result.stdout}{result.stderr}"
    return result.stdout


def locality(service: Service, path: str) -> str:
    answer = httpx.post(f"{service.url}/api/v1/archiveinfo", json={"paths": [path]}, timeout=10)
    return str(answer.json()[0]["locality"])


def test_bringonline_then_copy_gives_the_bytes_gfal_sum_vouches_for(service: Service, tmp_path: Path) -> None:
    path = PATHS[0]
    surl = service.url + path
    assert "READY" in gfal(service, "gfal-bringonline", surl, "--polling-timeout", "60")
    copy = tmp_path / "a.root"
    gfal(service, "gfal-copy", surl, f"file://{copy}")
    assert copy.read_bytes() == content(path)
    summed = gfal(service, "gfal-sum", surl, "ADLER32").split()
    assert summed == [surl, f"{zlib.adler32(content(path)):08x}"]


def test_evict_then_archiveinfo_says_tape_and_the_buffer_file_is_gone(service: Service) -> None:
    path = PATHS[2]
    surl = service.url + path
    assert "READY" in gfal(service, "gfal-bringonline", surl, "--polling-timeout", "60")
    in_buffer = service.buffer / path.lstrip("/")
    assert in_buffer.read_bytes() == content(path)
    assert locality(service, path) == "DISK_AND_TAPE"

    gfal(service, "gfal-evict", surl)
    deadline = time.monotonic() + EVICTED_WITHIN_S  # bounded: the scheduler's next cycle evicts
    while locality(service, path) != "TAPE" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert locality(service, path) == "TAPE"
    assert not in_buffer.exists()
    gone = httpx.get(surl, timeout=10)
    assert gone.status_code == 409 and gone.headers["content-type"] == "application/problem+json"


def test_the_readmes_gfal2_example_works_as_written(service: Service, tmp_path: Path) -> None:
    """As a new user runs README's lines: a shell whose PATH starts with the virtual environment (whose
    python3 cannot import gfal2) and with no GFAL_PYTHONBIN of its own; the README's URLs pointed at this
    service and its copy at a directory of the test's."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    block = next(b for b in readme.split("```") if "gfal-bringonline" in b)
    path = PATHS[1]
    surl = service.url + path
    copy = tmp_path / "copy.root"
    script = re.sub(r"http://127\.0\.0\.1:8000/\S+", surl, block)
    script = re.sub(r"file:///tmp/\S+", f"file://{copy}", script)
    env = {k: v for k, v in service.env.items() if k != "GFAL_PYTHONBIN"}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    result = subprocess.run(
        ["sh", "-ec", script], env=env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "not found" not in output, output
    assert f"{surl} READY" in output, output
    assert copy.read_bytes() == content(path)
    assert f"{surl} {zlib.adler32(content(path)):08x}" in output, output
    deadline = time.monotonic() + EVICTED_WITHIN_S  # bounded: gfal-evict released it, the next cycle evicts
    while locality(service, path) != "TAPE" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert locality(service, path) == "TAPE"

"""`carousel api --workers 2` as a tree of real processes: its workers stop with their supervisor however it
stops. SIGTERM: gracefully, and the directory of the workers' metrics files goes too. SIGKILL (the OOM
killer's): the kernel tells each worker, which stops instead of serving on beside the next supervisor's, and
the next supervisor to start removes the directory the killed one left."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomli_w

from tests.clients.support import (
    ServiceNotReady,
    carousel_program,
    free_port,
    service_environment,
    stop,
    wait_ready,
)

pytestmark = pytest.mark.slow

WAIT_S = 60.0  # bounded, and generous: each wait ends as soon as what it waits for happens
LIBRARY = {"profile": "lto8", "drives": 1, "catalogue": {"generate": {"seed": 3, "cartridges": 2}}}


@dataclass(frozen=True)
class Supervised:
    supervisor: subprocess.Popen[bytes]
    workers: list[int]
    port: int
    env: dict[str, str]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == pid and b"spawn_main" in command:
                found.append(int(entry.name))
    return found


def _exited(pid: int) -> bool:
    """Waits (at most WAIT_S) for a process that is not this one's child to end."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([handle], [], [], WAIT_S)
        return bool(readable)
    finally:
        os.close(handle)


@pytest.fixture
def supervised(tmp_path: Path, sqlite_template: Path) -> Iterator[Supervised]:
    database = tmp_path / "carousel.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    config = tmp_path / "carousel.toml"
    settings = {
        "database_url": f"sqlite:///{database}",
        "host": "127.0.0.1",
        "adapter_options": LIBRARY,
        "buffer": {"enabled": False},
    }
    config.write_text(tomli_w.dumps(settings))
    env = service_environment(config)
    temporary = tmp_path / "tmp"  # the metrics directories of this test's supervisors alone
    temporary.mkdir()
    env["TMPDIR"] = str(temporary)
    with _supervisor(env, tmp_path / "api.log") as first:
        yield first


@contextlib.contextmanager
def _supervisor(env: dict[str, str], log: Path) -> Iterator[Supervised]:
    """`carousel api --workers 2` started, ready, and stopped (or its workers killed) on leaving."""
    port = free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [carousel_program(), "api", "--workers", "2", "--port", str(port)],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    workers: list[int] = []
    try:
        try:
            wait_ready(f"http://127.0.0.1:{port}", process, log)
        except ServiceNotReady as exc:
            pytest.fail(str(exc))
        workers.extend(_children(process.pid))  # both started before either answered /readyz
        assert len(workers) == 2, log.read_text()
        yield Supervised(process, workers, port, env)
    finally:
        stop(process, signal.SIGTERM)
        for pid in workers:  # a test that failed may leave them running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _metrics_directory(worker: int) -> Path:
    """Where the supervisor told its workers to write their metrics (their environment says)."""
    environ = Path(f"/proc/{worker}/environ").read_bytes().split(b"\0")
    setting = next(v for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR="))
    return Path(setting.split(b"=", 1)[1].decode())


def test_the_workers_stop_when_their_supervisor_is_killed(supervised: Supervised) -> None:
    supervised.supervisor.kill()
    supervised.supervisor.wait()
    for pid in supervised.workers:
        assert _exited(pid), f"worker {pid} serves on after its supervisor was killed"


def test_the_next_supervisor_removes_the_metrics_directory_a_killed_one_left(
    supervised: Supervised, tmp_path: Path
) -> None:
    left = _metrics_directory(supervised.workers[0])
    assert left.name.startswith(f"carousel-metrics-{supervised.supervisor.pid}-")
    supervised.supervisor.kill()
    supervised.supervisor.wait()  # reaped: its pid no longer runs
    assert all(_exited(pid) for pid in supervised.workers)
    assert left.is_dir()  # SIGKILL: it could not remove its own

    with _supervisor(supervised.env, tmp_path / "api-next.log") as following:
        own = _metrics_directory(following.workers[0])
        assert not left.exists()
        assert own.is_dir() and own.name.startswith(f"carousel-metrics-{following.supervisor.pid}-")
        assert own.parent == left.parent


def test_a_stopped_supervisor_stops_its_workers_and_removes_their_metrics_files(
    supervised: Supervised,
) -> None:
    metrics = _metrics_directory(supervised.workers[0])
    assert metrics.is_dir() and any(metrics.iterdir())  # the workers write their figures there
    supervised.supervisor.send_signal(signal.SIGTERM)
    assert supervised.supervisor.wait(timeout=WAIT_S) == 0
    assert all(_exited(pid) for pid in supervised.workers)
    assert not metrics.exists()


def test_a_second_supervisor_on_the_port_is_refused_in_one_line(supervised: Supervised) -> None:
    """The workers' sockets share the port (SO_REUSEPORT): binding alone would let a second one in."""
    second = subprocess.run(
        [carousel_program(), "api", "--workers", "2", "--port", str(supervised.port)],
        env=supervised.env,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert second.returncode == 2
    assert second.stderr.strip().splitlines() == [
        f"carousel: cannot listen on 127.0.0.1:{supervised.port}: another process serves it"
        " (a carousel api --workers still running?)"
    ]
    assert supervised.supervisor.poll() is None  # the first serves on

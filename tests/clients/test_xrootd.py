"""Debian's XRootD 5.5.3 with the carousel prepare program, driven by the real `xrdfs` client.

xrootd listens on every interface, so the whole set runs in a private network namespace holding only `lo`
(`unshare -n`): `carousel serve` (SQLite file, simulated library 25 times faster than real time, so a
recall takes a few seconds), an xrootd (`-R nobody`) whose Generic Prepare Interface runs the program
against that service, a second xrootd whose program is pointed at an address where nothing listens, and
every `xrdfs` call. A driver process inside the namespace (tests.clients.xrootd_namespace) starts them and
runs the commands this test sends it; the work directory is shared, so the test reads xrootd's log itself.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.clients.support import carousel_program, service_environment, write_carousel_config

pytestmark = [pytest.mark.clients, pytest.mark.xdist_group("xrootd")]

REPO = Path(__file__).resolve().parents[2]
CAROUSEL_PORT = 8000  # the namespace is private: every port is free in it
XROOTD_PORT = 1094
DEAD_XROOTD_PORT = 1095
DEAD_SERVICE = "http://127.0.0.1:9"  # nothing listens there in the namespace
MAX_FILES = 8
MISSING = "/no/such/file.root"
LIBRARY = {
    "profile": "lto8",
    "drives": 4,
    "catalogue": {"generate": {"seed": 5, "cartridges": 8, "files_per_cartridge": 10}},
    "scale": 25.0,  # a first read (exchange, load, locate) takes about 3.5 s
}
START_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 40.0
WAIT_S = 60.0  # bounded, with room for a machine shared by several test runs
HUNG_PATHS = 5  # files whose reads hang until cancelled (see _library)
T = TypeVar("T")


@dataclass(frozen=True)
class Result:
    rc: int | None
    stdout: str
    stderr: str

    def query_lines(self) -> list[list[str]]:
        return [line.split("\t") for line in self.stdout.splitlines() if line]

    def file_states(self) -> dict[str, list[str]]:
        """From a query answer: each path's state and detail (not the REQUEST and OUTLOOK lines)."""
        files = [line for line in self.query_lines() if line[0] not in ("REQUEST", "OUTLOOK")]
        return {line[1]: [line[0], *line[2:]] for line in files if len(line) >= 2}


class Namespace:
    """The driver inside the namespace, spoken to over its standard input and output."""

    def __init__(self, process: subprocess.Popen[bytes], work: Path) -> None:
        self.process = process
        self.work = work
        self._buffer = b""

    def _read_line(self, timeout_s: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    pytest.fail(f"the namespace driver did not answer within {timeout_s:g} s{self.logs()}")
                chunk = os.read(self.process.stdout.fileno(), 65536)
                if not chunk:
                    pytest.fail(f"the namespace driver ended (status {self.process.poll()}){self.logs()}")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, command: dict[str, Any], timeout_s: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()
        return self._read_line(timeout_s)

    def run(self, *argv: str) -> Result:
        answer = self.call({"op": "run", "argv": list(argv), "timeout_s": CALL_TIMEOUT_S - 5})
        return Result(answer["rc"], answer["stdout"], answer["stderr"])

    def xrdfs(self, *args: str, port: int = XROOTD_PORT) -> Result:
        return self.run("xrdfs", f"root://127.0.0.1:{port}", *args)

    def http(self, path: str, method: str = "GET", body: Any = None) -> Any:
        answer = self.call({"op": "http", "method": method, "path": path, "json": body})
        assert answer["status"] == 200, answer
        return answer["body"]

    def xrootd_log(self, port: int = XROOTD_PORT) -> str:
        path = self.work / f"xrootd-{port}" / "xrootd.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> str:
        parts = [f"\n--- {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in self._log_files()]
        return "".join(parts)

    def _log_files(self) -> list[Path]:
        names = ["driver.err", "serve.log", "xrootd-1094/xrootd.log", "xrootd-1095/xrootd.log"]
        return [self.work / n for n in names if (self.work / n).exists()]


def _xrootd_instance(
    work: Path, port: int, program: Path, program_config: Path, env: dict[str, str]
) -> dict[str, Any]:
    home = work / f"xrootd-{port}"
    home.mkdir()
    home.chmod(0o777)  # xrootd runs as nobody: its log, pid file and admin path live here
    config = home / "xrootd.cfg"
    config.write_text(
        f"""xrd.port {port}
all.export /
all.adminpath {home}
all.pidpath {home}
oss.localroot {work / "data"}
ofs.preplib libXrdOfsPrepGPI.so -admit all -run {program} -maxfiles {MAX_FILES}
"""
    )
    config.chmod(0o644)
    return {
        "port": port,
        "argv": ["xrootd", "-R", "nobody", "-c", str(config), "-l", str(home / "xrootd.log")],
        # xrootd hands its environment to the program: that is where the program finds its settings.
        "env": {**env, "CAROUSEL_XROOTD_CONFIG": str(program_config)},
        "out": str(home / "xrootd.out"),
    }


def _program_config(work: Path, name: str, url: str) -> Path:
    config = work / name
    config.write_text(f'url = "{url}"\ntimeout_s = 10\ncancel_grace_s = 2\n')
    config.chmod(0o644)
    return config


def _library(hung_paths: list[str]) -> dict[str, Any]:
    """LIBRARY, where reads of `hung_paths` start and never end until cancelled: files surely still with the
    library when a test aborts them or asks about them, however slow the machine."""
    return {**LIBRARY, "faults": {"hung_reads": [{"path": path} for path in hung_paths]}}


def _spec(work: Path, hung_paths: list[str]) -> Path:
    """Everything the driver starts, written where nobody (xrootd's user) can read and run it."""
    (work / "data").mkdir(mode=0o755)
    program = work / "carousel-xrootd-prepare"
    program.write_text(f'#!/bin/sh\nexec {carousel_program("carousel-xrootd-prepare")} "$@"\n')
    program.chmod(0o755)
    carousel_env = service_environment(
        write_carousel_config(work, port=CAROUSEL_PORT, library=_library(hung_paths))
    )
    live = _program_config(work, "prepare.toml", f"http://127.0.0.1:{CAROUSEL_PORT}")
    dead = _program_config(work, "prepare-dead.toml", DEAD_SERVICE)
    spec = {
        "workdir": str(work),
        "carousel_port": CAROUSEL_PORT,
        "carousel_url": f"http://127.0.0.1:{CAROUSEL_PORT}",
        "carousel_env": carousel_env,
        "client_env": carousel_env,
        "xrootds": [
            _xrootd_instance(work, XROOTD_PORT, program, live, carousel_env),
            _xrootd_instance(work, DEAD_XROOTD_PORT, program, dead, carousel_env),
        ],
    }
    path = work / "spec.json"
    path.write_text(json.dumps(spec))
    return path


@pytest.fixture(scope="module")
def pool() -> list[str]:
    """Paths the library holds, each from a cartridge of its own as far as they go."""
    catalogue = list(build_simulated_adapter(LIBRARY, ManualClock()).library.catalogue)
    by_tape: dict[str, list[str]] = {}
    for path in catalogue:
        by_tape.setdefault(path.split("/")[3], []).append(path)
    return [path for group in zip(*by_tape.values(), strict=False) for path in group]


@pytest.fixture(scope="module")
def hung_paths(pool: list[str]) -> list[str]:
    """The paths whose reads hang (see _library), HUNG_PATHS of them; each test takes its own."""
    return [pool.pop() for _ in range(HUNG_PATHS)]


@pytest.fixture(scope="module")
def hung(hung_paths: list[str]) -> Iterator[Callable[[int], list[str]]]:
    """Hung paths, none asked for before."""
    left = list(hung_paths)

    def take(n: int) -> list[str]:
        taken = left[:n]
        del left[:n]
        assert len(taken) == n, f"raise HUNG_PATHS: {n} more hung paths asked for, {len(taken)} left"
        return taken

    yield take


@contextmanager
def running_namespace(spec: Path, work: Path) -> Iterator[Namespace]:
    """The namespace driver started on `spec`, ready; on exit it stops what it started (its input ends) and
    `work` is removed."""
    with (work / "driver.err").open("wb") as errors:
        process = subprocess.Popen(
            [
                "unshare",
                "-n",
                "bash",
                "-c",
                'ip link set lo up && exec "$0" -m tests.clients.xrootd_namespace "$1"',
                sys.executable,
                str(spec),
            ],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            start_new_session=True,
        )
    driver = Namespace(process, work)
    try:
        started = driver._read_line(START_TIMEOUT_S)
        if not started.get("ready"):
            pytest.fail(f"the namespace did not start: {started.get('error')}{driver.logs()}")
        yield driver
    finally:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()  # the driver stops what it started when its input ends
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the driver's own session: what it started
            process.wait()
        process.stdout.close()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def namespace(hung_paths: list[str]) -> Iterator[Namespace]:
    if shutil.which("xrootd") is None or shutil.which("xrdfs") is None:
        pytest.fail("xrootd and xrdfs are missing: run scripts/system-deps.sh (xrootd-server, xrootd-client)")
    # Not under pytest's own temporary directory: that is private to root, and xrootd runs as nobody.
    work = Path(tempfile.mkdtemp(prefix="carousel-xrootd-"))
    work.chmod(0o755)
    with running_namespace(_spec(work, hung_paths), work) as driver:
        _RUNNING.append(driver)
        try:
            yield driver
        finally:
            _RUNNING.clear()


@pytest.fixture(scope="module")
def paths(pool: list[str]) -> Iterator[Callable[[int], list[str]]]:
    """Paths from the pool, none asked for before."""

    def take(n: int) -> list[str]:
        taken = pool[:n]
        del pool[:n]
        return taken

    yield take


_RUNNING: list[Namespace] = []


def _logs_of_the_running_set() -> str:
    return _RUNNING[0].logs() if _RUNNING else ""


def wait_for(what: str, probe: Callable[[], T], until: Callable[[T], bool], timeout_s: float = WAIT_S) -> T:
    """probe() until its value passes until(value), for at most timeout_s; the value."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = probe()
        if until(found):
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:g} s (last: {found!r}){_logs_of_the_running_set()}")
        time.sleep(0.2)


def stage(namespace: Namespace, *args: str) -> str:
    """`xrdfs prepare -s`: XRootD's request id, printed at once (the program runs after the answer)."""
    result = namespace.xrdfs("prepare", "-s", *args)
    assert result.rc == 0, result
    request_id = result.stdout.strip()
    assert request_id and "\n" not in request_id, result
    return request_id


def query(namespace: Namespace, request_id: str, *paths: str) -> Result:
    result = namespace.xrdfs("query", "prepare", request_id, *paths)
    assert result.rc == 0, result
    return result


def queued_query(namespace: Namespace, request_id: str) -> Result:
    """The first answer that knows the request (the stage program may still be on its way)."""
    return wait_for(
        f"request {request_id} in carousel",
        lambda: query(namespace, request_id),
        lambda answer: answer.stdout.startswith("REQUEST\t"),
    )


def carousel_requests(namespace: Namespace) -> list[dict[str, Any]]:
    requests: list[dict[str, Any]] = namespace.http("/api/native/v1/requests?limit=1000")["requests"]
    return requests


def test_prepare_stage_is_one_request_whose_files_progress_to_completed(
    namespace: Namespace, paths: Callable[[int], list[str]], hung: Callable[[int], list[str]]
) -> None:
    # One file of the request is read until cancelled: the request is surely still ACTIVE when asked, however
    # slow the machine, until the test aborts that file at the end.
    wanted, [held] = paths(3), hung(1)
    before = len(carousel_requests(namespace))
    request_id = stage(namespace, *wanted, MISSING, held)

    first = queued_query(namespace, request_id)
    head = first.query_lines()[0]
    assert head[:3] == ["REQUEST", request_id, "ACTIVE"] and "files=5" in head
    assert first.file_states()[MISSING] == ["FAILED", "not in the library"]
    assert len(carousel_requests(namespace)) == before + 1  # one request for the five files

    seen: dict[str, list[str]] = {path: [] for path in wanted}

    def states() -> dict[str, list[str]]:
        now = query(namespace, request_id).file_states()
        for path in wanted:
            if not seen[path] or seen[path][-1] != now[path][0]:
                seen[path].append(now[path][0])
        return now

    wait_for("every file COMPLETED", states, lambda now: all(now[p] == ["COMPLETED"] for p in wanted))
    order = ["SUBMITTED", "STARTED", "COMPLETED"]
    for path, states in seen.items():
        assert states == sorted(states, key=order.index), (path, states)  # only forward
    assert query(namespace, request_id).query_lines()[0][2] == "ACTIVE", "one file is still being read"
    assert namespace.xrdfs("prepare", "-a", request_id, held).rc == 0
    final = wait_for(
        "the request DONE",
        lambda: query(namespace, request_id),
        lambda answer: answer.query_lines()[0][2] == "DONE",
    )
    assert final.file_states()[MISSING] == ["FAILED", "not in the library"]
    assert final.file_states()[held] == ["CANCELLED"]
    summary = namespace.http(f"/api/native/v1/requests/{request_id}")
    assert summary["counts"] == {"SUBMITTED": 0, "STARTED": 0, "COMPLETED": 3, "FAILED": 1, "CANCELLED": 1}


def test_priority_and_colocation_reach_the_request(
    namespace: Namespace, paths: Callable[[int], list[str]]
) -> None:
    wanted = paths(2)
    request_id = stage(namespace, "-p", "3", "-c", *wanted)
    queued_query(namespace, request_id)
    request = namespace.http(f"/api/native/v1/requests/{request_id}")["request"]
    assert (request["priority"], request["colocation"], request["files_total"]) == (3, wanted[0], 2)


def test_prepare_abort_of_some_files_cancels_them_alone(
    namespace: Namespace, paths: Callable[[int], list[str]], hung: Callable[[int], list[str]]
) -> None:
    [cancelled], [kept] = hung(1), paths(1)  # the library never finishes reading `cancelled` by itself
    request_id = stage(namespace, cancelled, kept)
    queued_query(namespace, request_id)  # known to the service: the abort cannot overtake the stage
    assert namespace.xrdfs("prepare", "-a", request_id, cancelled).rc == 0  # asynchronous, like the stage
    final = wait_for(
        "one file CANCELLED, the other COMPLETED",
        lambda: query(namespace, request_id).file_states(),
        lambda states: (
            states.get(kept) == ["COMPLETED"]
            and states.get(cancelled, ["?"])[0] in ("CANCELLED", "COMPLETED", "FAILED")
        ),
    )
    assert final == {cancelled: ["CANCELLED"], kept: ["COMPLETED"]}


def test_prepare_abort_cancels_the_whole_request(
    namespace: Namespace, hung: Callable[[int], list[str]]
) -> None:
    wanted = hung(3)  # never read to the end before the abort, however slow the machine
    request_id = stage(namespace, *wanted)
    queued_query(namespace, request_id)  # known to the service: the abort cannot overtake the stage
    assert namespace.xrdfs("prepare", "-a", request_id).rc == 0
    final = wait_for(
        "the request DONE",
        lambda: query(namespace, request_id),
        lambda answer: answer.query_lines()[0][:3] == ["REQUEST", request_id, "DONE"],
    )
    assert final.file_states() == {path: ["CANCELLED"] for path in wanted}


def test_prepare_evict_releases_the_disk_copy(
    namespace: Namespace, paths: Callable[[int], list[str]]
) -> None:
    wanted = paths(1)[0]
    request_id = stage(namespace, wanted)
    wait_for(
        "the file COMPLETED",
        lambda: query(namespace, request_id).file_states(),
        lambda states: states.get(wanted) == ["COMPLETED"],
    )
    where = namespace.http("/api/v1/archiveinfo", "POST", {"paths": [wanted]})
    assert where == [{"path": wanted, "locality": "DISK_AND_TAPE"}]
    assert namespace.xrdfs("prepare", "-e", wanted).rc == 0
    wait_for(
        "the disk copy released",
        lambda: query(namespace, request_id).file_states(),
        lambda states: states[wanted] == ["COMPLETED", "not on disk (released)"],
    )
    where = namespace.http("/api/v1/archiveinfo", "POST", {"paths": [wanted]})
    assert where == [{"path": wanted, "locality": "TAPE"}]


def test_more_files_than_maxfiles_are_refused_by_xrootd(
    namespace: Namespace, paths: Callable[[int], list[str]]
) -> None:
    before = len(carousel_requests(namespace))
    result = namespace.xrdfs("prepare", "-s", *paths(MAX_FILES + 1))
    assert result.rc != 0
    assert "Unable to stage files; argument list too long" in result.stderr
    assert "Traceback" not in namespace.xrootd_log()
    assert len(carousel_requests(namespace)) == before


def test_unknown_request_ids_get_clear_answers(namespace: Namespace) -> None:
    answer = query(namespace, "no-such-request")
    assert answer.stdout == "ERROR\tunknown request id no-such-request: carousel has no request by it\n"
    assert namespace.xrdfs("prepare", "-a", "no-such-request").rc == 0  # answered before the program runs
    line = wait_for(
        "the failed cancel in xrootd's log",
        lambda: [entry for entry in namespace.xrootd_log().splitlines() if "cancel no-such-request" in entry],
        bool,
    )
    assert line[0].endswith("carousel answered 404: no request 'no-such-request'")
    assert "Traceback" not in namespace.xrootd_log()


def test_an_unreachable_service_is_reported(namespace: Namespace, paths: Callable[[int], list[str]]) -> None:
    answer = namespace.xrdfs("query", "prepare", "some-request", port=DEAD_XROOTD_PORT)
    assert answer.rc == 0, answer
    assert answer.stdout.startswith(f"ERROR\tcarousel at {DEAD_SERVICE} is unreachable: ")
    request_id = stage_on_dead(namespace, paths(1)[0])

    lines = wait_for(
        "the failed stage in xrootd's log",
        lambda: [
            entry for entry in namespace.xrootd_log(DEAD_XROOTD_PORT).splitlines() if request_id in entry
        ],
        lambda found: len(found) >= 2,
    )
    unreachable = f"carousel at {DEAD_SERVICE} is unreachable"
    assert any(f"stage {request_id} (" in entry and unreachable in entry for entry in lines), lines
    assert any("Prep exec for" in entry and "failed" in entry for entry in lines), lines  # the exit status
    assert "Traceback" not in namespace.xrootd_log(DEAD_XROOTD_PORT)


def stage_on_dead(namespace: Namespace, path: str) -> str:
    result = namespace.xrdfs("prepare", "-s", path, port=DEAD_XROOTD_PORT)
    assert result.rc == 0, result  # XRootD answers before the program fails
    return result.stdout.strip()

"""Load test: many clients submitting stage requests and polling them, against `carousel serve` (API and
scheduler in one process, as deployed) on PostgreSQL, over loopback HTTP.

Each client has a static bearer token of its own (so authentication and the per-caller rate and queue
quotas are paid on every call, with limits far above what the clients ask). It loops until the deadline:
stage FILES_PER_REQUEST random files of the simulated library through the Tape REST API, then poll the
request's status every POLL_INTERVAL_S (as gfal2 does) until its files ended or MAX_POLLS polls, then
the next request. Any transport error or an unexpected status is an error. Bounded in time and count:
every client stops at its deadline, having polled its last request at least once (so it may overrun the
deadline by one call, and a slow machine still measures both calls), and every call has a timeout. The
clients start spread evenly over one poll interval (`--ramp`), as independent clients do.

The baseline, measured first in the same run against the same service: one client alone.

With --workers 1,2 the service is `carousel api --workers N` beside one `carousel scheduler`, measured for
each N in turn (each on a fresh database, baseline then load), and the calls per second of each N are
printed as a ratio to the first's. Under load, the cores each kind of process used are printed too (CPU time
from /proc: the API, the scheduler, PostgreSQL's backends of the run's database, the generator), and from them
how the API processes themselves scale (calls a second per core they used) and what a call costs across all
of them, with the most calls a second the machine's cores could answer at that cost.

Run: .venv/bin/python -m bench.load_test [--clients 200] [--duration 60] [--baseline 10] [--workers 1,2]
[--ramp S]
(PostgreSQL admin URL from CAROUSEL_BENCH_DATABASE_URL, default postgresql+psycopg://postgres@127.0.0.1:5432/
postgres; a throwaway database is created and dropped.) Exit status 1 if any call failed, 2 when a
package of the development install is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL

from bench.process_cpu import CoresUsed, postgres_backends, with_descendants
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter

try:  # the generator's packages come with the development install; `make run` installs the service's only
    import aiohttp
    import uvloop
except ImportError as missing:  # a setup error, exit 2, not a failed call's 1
    print(
        f"bench.load_test needs the development install ({missing.name} is missing): make .venv/.installed",
        file=sys.stderr,
    )
    raise SystemExit(2) from None

ADMIN_URL_ENV = "CAROUSEL_BENCH_DATABASE_URL"
DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
LIBRARY: dict[str, Any] = {
    "profile": "lto8",
    "drives": 16,
    "catalogue": {"generate": {"seed": 5, "cartridges": 400, "files_per_cartridge": 50}},
    "scale": 1000.0,
}
FILES_PER_REQUEST = 5
POLL_INTERVAL_S = 1.0
MAX_POLLS = 5
CALL_TIMEOUT_S = 30.0
START_TIMEOUT_S = 60.0
FINAL = {"COMPLETED", "FAILED", "CANCELLED"}


@dataclass
class Tally:
    """Latencies (seconds) by kind of call, and errors."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"stage": [], "status": []})
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    cores: dict[str, float] = field(default_factory=dict)  # CPU seconds per second by process role

    def record(self, kind: str, seconds: float) -> None:
        self.latencies[kind].append(seconds)

    def fail(self, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(what[:300])

    @property
    def calls(self) -> int:
        return sum(len(values) for values in self.latencies.values())

    def all_latencies(self) -> list[float]:
        return [value for values in self.latencies.values() for value in values]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def _call(
    http: aiohttp.ClientSession, method: str, url: str, headers: dict[str, str], body: Any = None
) -> tuple[int, Any]:
    """The status code and the JSON answer (None when the answer is not JSON)."""
    async with http.request(method, url, json=body, headers=headers) as response:
        text = await response.text()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text


async def _client(
    http: aiohttp.ClientSession,
    token: str,
    paths: list[str],
    seed: int,
    deadline: float,
    tally: Tally,
    poll_interval_s: float,
    start_delay_s: float = 0.0,
) -> None:
    rng = random.Random(seed)
    headers = {"Authorization": f"Bearer {token}"}
    await asyncio.sleep(start_delay_s)
    while time.monotonic() < deadline:
        files = [{"path": path} for path in rng.sample(paths, FILES_PER_REQUEST)]
        started = time.perf_counter()
        try:
            status, answer = await _call(http, "POST", "/api/v1/stage", headers, {"files": files})
        except (aiohttp.ClientError, TimeoutError) as exc:
            tally.fail(f"stage: {type(exc).__name__}: {exc}")
            continue
        tally.record("stage", time.perf_counter() - started)
        if status != 201:
            tally.fail(f"stage: {status} {answer}")
            continue
        request_id = answer["requestId"]
        for poll in range(MAX_POLLS):
            if poll and time.monotonic() >= deadline:
                return
            await asyncio.sleep(min(poll_interval_s, max(0.0, deadline - time.monotonic())))
            started = time.perf_counter()
            try:
                status, answer = await _call(http, "GET", f"/api/v1/stage/{request_id}", headers)
            except (aiohttp.ClientError, TimeoutError) as exc:
                tally.fail(f"status: {type(exc).__name__}: {exc}")
                break
            tally.record("status", time.perf_counter() - started)
            if status != 200:
                tally.fail(f"status: {status} {answer}")
                break
            if all(f.get("state") in FINAL for f in answer["files"]):
                break


def run_clients(
    base_url: str,
    tokens: list[str],
    paths: list[str],
    duration_s: float,
    poll_interval_s: float = POLL_INTERVAL_S,
    ramp_s: float | None = None,
) -> Tally:
    """len(tokens) clients for duration_s, each with its own token and connection, as separate clients
    have; returns what they measured. The clients start evenly spread over `ramp_s` (default: one poll
    interval), as independent clients do: all of them staging in the same millisecond would measure how long
    a queue of 200 stage calls takes to drain, once, not the service's answer to clients polling each
    second. aiohttp on uvloop: the generator shares the machine with the service, and httpx cost it about
    five times the CPU a call (one shared pool of 200 connections, scanned on every call, cost it more
    still: it measured itself, not the service)."""
    tally = Tally()
    ramp = poll_interval_s if ramp_s is None else ramp_s

    async def run() -> None:
        timeout = aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)
        async with AsyncExitStack() as stack:
            sessions = [
                await stack.enter_async_context(
                    aiohttp.ClientSession(
                        base_url=base_url,
                        timeout=timeout,
                        # Idle connections are dropped before the server's 5 s keep-alive ends: else a
                        # request may go out on a connection the server is closing (a disconnect).
                        connector=aiohttp.TCPConnector(limit=1, keepalive_timeout=2.0),
                    )
                )
                for _ in tokens
            ]
            deadline = time.monotonic() + duration_s
            async with asyncio.TaskGroup() as group:
                for index, (http, token) in enumerate(zip(sessions, tokens, strict=True)):
                    delay = index * ramp / len(tokens)
                    group.create_task(
                        _client(http, token, paths, index, deadline, tally, poll_interval_s, delay)
                    )

    started = time.monotonic()
    uvloop.run(run())
    tally.elapsed_s = time.monotonic() - started
    return tally


@contextmanager
def throwaway_database(admin_url: URL) -> Iterator[URL]:
    name = f"carousel_load_{os.getpid()}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_size=1)
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.set(database=name)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _config(directory: Path, database_url: URL, port: int, tokens: list[str]) -> Path:
    generate = LIBRARY["catalogue"]["generate"]
    lines = [
        f'database_url = "{database_url.render_as_string(hide_password=False)}"',
        'host = "127.0.0.1"',
        f"port = {port}",
        "anonymous = false",
        "cycle_interval_s = 1.0",
        "",
        "[quotas]  # far above what the clients ask: paid on every call, never reached",
        "caller_calls_per_s = 50.0",
        "caller_burst = 100",
        "max_queued_files_per_caller = 100000",
        "",
        "[adapter_options]",
        f'profile = "{LIBRARY["profile"]}"',
        f"drives = {LIBRARY['drives']}",
        f"scale = {LIBRARY['scale']}",
        "",
        "[adapter_options.catalogue.generate]",
        *(f"{key} = {value}" for key, value in generate.items()),
    ]
    for index, token in enumerate(tokens):
        digest = hashlib.sha256(token.encode()).hexdigest()
        lines += ["", "[[auth.static_tokens]]", f'name = "client-{index}"', f'sha256 = "{digest}"']
    config = directory / "carousel.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"carousel serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"carousel serve was not ready within {START_TIMEOUT_S:g} s:\n{log.read_text()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def running_service(
    database_url: URL,
    tokens: list[str],
    command: str = "serve",
    workers: int | None = None,
    pids: list[int] | None = None,
) -> Iterator[str]:
    """`carousel db upgrade` and `carousel <command>` (serve: API and scheduler; api: the API alone) on a
    free loopback port; yields its base URL. With `workers`: `carousel api --workers N` and a `carousel
    scheduler` beside it. `pids` gets the started processes' ids, in that order."""
    carousel = str(Path(sys.executable).with_name("carousel"))
    with tempfile.TemporaryDirectory(prefix="carousel-load-") as tmp:
        directory = Path(tmp)
        port = _free_port()
        env = {
            k: v for k, v in os.environ.items() if not k.startswith("CAROUSEL_") and "proxy" not in k.lower()
        }
        env["CAROUSEL_CONFIG"] = str(_config(directory, database_url, port, tokens))
        env["CAROUSEL_BUFFER__ENABLED"] = "false"  # the load is on intake; its catalogue holds multi-GB files
        subprocess.run([carousel, "db", "upgrade"], env=env, check=True, capture_output=True, timeout=120)
        commands = [[carousel, command]]
        if workers is not None:
            commands = [[carousel, "api", "--workers", str(workers)], [carousel, "scheduler"]]
        processes: list[subprocess.Popen[bytes]] = []
        log = directory / "serve.log"
        try:
            with log.open("wb") as sink:
                for argv in commands:
                    processes.append(subprocess.Popen(argv, env=env, stdout=sink, stderr=subprocess.STDOUT))
            if pids is not None:
                pids.extend(process.pid for process in processes)
            url = f"http://127.0.0.1:{port}"
            _wait_ready(url, processes[0], log)
            yield url
        finally:
            for process in processes:
                _stop(process)
            # what the service said went wrong, before its directory goes (a 500 is explained there)
            errors = [
                line
                for line in log.read_text(errors="replace").splitlines()
                if "[error" in line or re.match(r"^[\w.]+(Error|Exception)\b", line)
            ]
            for line in errors[:20]:
                print(f"service log: {line[:400]}", file=sys.stderr)


def library_paths() -> list[str]:
    adapter = build_simulated_adapter(LIBRARY, ManualClock())
    try:
        return list(adapter.library.catalogue)
    finally:
        adapter.close()


def run_load(
    clients: int,
    duration_s: float,
    baseline_s: float,
    admin_url: URL | None = None,
    command: str = "serve",
    workers: int | None = None,
    poll_interval_s: float = POLL_INTERVAL_S,
    ramp_s: float | None = None,
) -> tuple[Tally, Tally]:
    """The baseline (one client for baseline_s), then `clients` clients for duration_s, on one service."""
    admin_url = admin_url or make_url(os.environ.get(ADMIN_URL_ENV, DEFAULT_ADMIN_URL))
    tokens = [secrets.token_urlsafe(24) for _ in range(clients)]
    paths = library_paths()
    pids: list[int] = []
    with (
        throwaway_database(admin_url) as database_url,
        running_service(database_url, tokens, command, workers, pids) as url,
    ):
        baseline = run_clients(url, tokens[:1], paths, baseline_s, poll_interval_s)
        cores = CoresUsed(partial(_roles, pids, str(database_url.database), workers is not None))
        cores.start()
        loaded = run_clients(url, tokens, paths, duration_s, poll_interval_s, ramp_s)
        loaded.cores = cores.stop()
    return baseline, loaded


def _roles(pids: list[int], database: str, apart: bool) -> dict[str, set[int]]:
    """The processes of each role: the API and the scheduler apart (`apart`) or one service, PostgreSQL's
    backends of the run's database, and this process, which generates the load."""
    service = {"api": {pids[0]}, "scheduler": {pids[1]}} if apart else {"service": {pids[0]}}
    return {
        **{role: with_descendants(roots) for role, roots in service.items()},
        "postgresql": postgres_backends(database),
        "generator": {os.getpid()},
    }


def _line(label: str, tally: Tally) -> str:
    rate = tally.calls / tally.elapsed_s
    parts = [f"{label}: {tally.calls} calls in {tally.elapsed_s:.1f} s ({rate:.0f}/s), errors {tally.errors}"]
    for kind, values in (("all", tally.all_latencies()), *tally.latencies.items()):
        p50, p99 = percentile(values, 50) * 1000, percentile(values, 99) * 1000
        worst = max(values, default=float("nan")) * 1000
        parts.append(
            f"  {kind:6s} n={len(values):6d}  p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  max {worst:7.1f} ms"
        )
    if tally.cores:
        used = ", ".join(f"{role} {cores:.2f}" for role, cores in tally.cores.items())
        parts.append(f"  cores used: {used} (total {sum(tally.cores.values()):.2f})")
    return "\n".join(parts)


def scaling_lines(first_label: str, first: Tally, label: str, loaded: Tally, machine_cores: int) -> list[str]:
    """How `loaded` compares with `first`: calls a second; and, with the API apart, calls a second per core of
    the API processes (how the processes themselves scale) and what a call costs across every measured process
    (what the machine's cores can answer at that cost: beyond it, more processes only share the cores)."""
    rate, first_rate = loaded.calls / loaded.elapsed_s, first.calls / first.elapsed_s
    lines = [f"calls/s under load, {label} / {first_label}: {rate / first_rate:.2f}"]
    if loaded.cores.get("api", 0) > 0 and first.cores.get("api", 0) > 0:
        per_core, first_per_core = rate / loaded.cores["api"], first_rate / first.cores["api"]
        lines.append(
            f"calls/s per core of the API processes, {label} / {first_label}: {per_core / first_per_core:.2f}"
            f" ({per_core:.0f} / {first_per_core:.0f})"
        )
        cost_s = sum(loaded.cores.values()) / rate
        lines.append(
            f"CPU a call across the measured processes, {label}: {cost_s * 1000:.1f} ms; at that cost this"
            f" machine's {machine_cores} cores answer at most {machine_cores / cost_s:.0f} calls/s"
            f" ({machine_cores / cost_s / first_rate:.2f} x {first_label})"
        )
    return lines


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of seconds, e.g. 1.5") from None
    if not 0 <= seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: seconds are at least 0 and finite")
    return seconds


def _worker_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: worker counts separated by commas, e.g. 1,2") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: each worker count is at least 1")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--duration", type=_seconds, default=60.0, help="seconds of load")
    parser.add_argument("--baseline", type=_seconds, default=10.0, help="seconds of the one-client baseline")
    parser.add_argument(
        "--command",
        choices=["serve", "api"],
        default="serve",
        help="api: without the scheduler, for comparison",
    )
    parser.add_argument(
        "--workers",
        type=_worker_counts,
        default=None,
        help="e.g. 1,2: `carousel api --workers N` beside `carousel scheduler`, for each N in turn",
    )
    parser.add_argument(
        "--poll-interval", type=_seconds, default=POLL_INTERVAL_S, help="seconds between a client's polls"
    )
    parser.add_argument(
        "--ramp",
        type=_seconds,
        default=None,
        help="seconds over which the clients start (default: one poll interval; 0: all at once)",
    )
    args = parser.parse_args(argv)
    runs: list[tuple[str, Tally, Tally]] = []
    for workers in args.workers or [None]:
        baseline, loaded = run_load(
            args.clients,
            args.duration,
            args.baseline,
            command=args.command,
            workers=workers,
            poll_interval_s=args.poll_interval,
            ramp_s=args.ramp,
        )
        label = f"api --workers {workers}" if workers is not None else args.command
        runs.append((label, baseline, loaded))
        print(_line(f"{label}: baseline, 1 client", baseline))
        print(_line(f"{label}: load, {args.clients} clients", loaded))
        for q in (50, 99):
            ratio = percentile(loaded.all_latencies(), q) / percentile(baseline.all_latencies(), q)
            print(f"{label}: p{q} under load / p{q} of one client: {ratio:.2f}")
        sys.stdout.flush()
    first_label, _, first = runs[0]
    for label, _, loaded in runs[1:]:
        for line in scaling_lines(first_label, first, label, loaded, os.cpu_count() or 1):
            print(line)
    errors = 0
    for _, baseline, loaded in runs:
        for sample in baseline.error_samples + loaded.error_samples:
            print(f"error: {sample}", file=sys.stderr)
        errors += baseline.errors + loaded.errors
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

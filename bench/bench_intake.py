"""Intake and status speed on PostgreSQL, against baselines measured in the same run.

1. One 100,000-file native bulk request (HTTP, in-process ASGI, committed) against PostgreSQL's own COPY of
   the same rows (files, request_files and the request), both into empty tables. Goal: at least half of
   COPY's rate.
2. Status of a 10,000-file request (Tape REST GET /api/v1/stage/{id}) with 50 clients polling a real
   uvicorn server on 127.0.0.1: each client polls every second for a bounded number of rounds, then all 50
   poll back to back. Goal: p99 under 100 ms.

Run: .venv/bin/python -m bench.bench_intake  (PostgreSQL admin URL from CAROUSEL_BENCH_DATABASE_URL, default
postgresql+psycopg://postgres@127.0.0.1:5432/postgres; a throwaway database is created and dropped.)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import socket
import statistics
import threading
import time
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx
import psycopg
import uvicorn
from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.engine import URL

from carousel.api.app import create_app
from carousel.config import Settings
from carousel.db.engine import make_engine, make_session_factory, transaction, upgrade_to_head
from carousel.domain.callers import ANONYMOUS
from carousel.domain.clock import SystemClock
from carousel.intake.model import Api, StageOrder
from carousel.intake.submit import submit
from hsm_adapters.base import OnTape
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter

DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
TABLES = "request_files, requests, files"


def _library(files: int) -> SimulatedAdapter:
    per_cartridge = 200
    options = {
        "profile": "lto8",
        "drives": 8,
        "catalogue": {
            "generate": {
                "seed": 1,
                "cartridges": -(-files // per_cartridge),
                "files_per_cartridge": per_cartridge,
            }
        },
        "scale": 100.0,
    }
    return build_simulated_adapter(options, SystemClock())


def _truncate(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))


def _copy_same_rows(engine: Engine, adapter: SimulatedAdapter, paths: list[str]) -> float:
    """Seconds for COPY of the rows a request of `paths` makes (rows prepared beforehand, untimed)."""
    now = datetime.now(UTC)
    request_id = "00000000-0000-4000-8000-000000000000"
    found = adapter.lookup(paths)
    file_rows = []
    for file_id, result in enumerate(found, start=1):
        assert isinstance(result, OnTape)
        where = (result.tape, result.position_bytes, result.size_bytes)
        file_rows.append((file_id, result.path, "QUEUED", *where, "default", "default", 0, 0, now, False))
    link_rows = [(request_id, ordinal, ordinal + 1, path, "PENDING") for ordinal, path in enumerate(paths)]
    raw = engine.raw_connection()
    try:
        # psycopg's own connection: SQLAlchemy types `raw` as the DB-API protocol, which has no COPY
        driver = raw.driver_connection
        assert isinstance(driver, psycopg.Connection)
        started = time.perf_counter()
        with driver.cursor() as cursor:
            cursor.execute(
                "INSERT INTO requests (id, owner, grp, activity, priority, api, state, files_total,"
                " created_at) VALUES (%s, 'anonymous', 'default', 'default', 0, 'native', 'ACTIVE', %s, %s)",
                (request_id, len(paths), now),
            )
            columns = (
                "id, path, state, tape, position_bytes, size_bytes, service_class, grp, priority, attempts,"
                " queued_at, on_disk"
            )
            with cursor.copy(f"COPY files ({columns}) FROM STDIN") as copy:
                for file_row in file_rows:
                    copy.write_row(file_row)
            with cursor.copy(
                "COPY request_files (request_id, ordinal, file_id, path, state) FROM STDIN"
            ) as copy:
                for link_row in link_rows:
                    copy.write_row(link_row)
        raw.commit()
        return time.perf_counter() - started
    finally:
        raw.close()


def _post_native(app: Any, body: bytes) -> float:
    async def run() -> float:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            started = time.perf_counter()
            response = await client.post(
                "/api/native/v1/requests", content=body, headers={"Content-Type": "application/json"}
            )
            elapsed = time.perf_counter() - started
            if response.status_code != 201:
                raise RuntimeError(f"native submit answered {response.status_code}: {response.text[:300]}")
            return elapsed

    return anyio.run(run)


def _intake_only(engine: Engine, adapter: SimulatedAdapter, paths: list[str]) -> float:
    factory = make_session_factory(engine)
    order = StageOrder(paths=tuple(paths), api=Api.NATIVE, list_field="paths", path_field="paths[{}]")
    started = time.perf_counter()
    with transaction(factory) as session:
        submit(session, adapter, SystemClock(), ANONYMOUS, order, max_files=len(paths), max_path_bytes=4096)
    return time.perf_counter() - started


def bench_intake_vs_copy(url: URL, files: int, trials: int) -> dict[str, float]:
    adapter = _library(files)
    paths = list(adapter.library.catalogue)[:files]
    random.Random(3).shuffle(paths)  # clients do not send files in tape order
    body = json.dumps({"paths": paths}).encode()
    engine = make_engine(url)
    app = create_app(
        Settings(), adapter=adapter, clock=SystemClock(), session_factory=make_session_factory(engine)
    )
    copy_s: list[float] = []
    http_s: list[float] = []
    intake_s: list[float] = []
    try:
        for _ in range(trials):
            _truncate(engine)
            copy_s.append(_copy_same_rows(engine, adapter, paths))
            _truncate(engine)
            http_s.append(_post_native(app, body))
            _truncate(engine)
            intake_s.append(_intake_only(engine, adapter, paths))
        _truncate(engine)
    finally:
        engine.dispose()
    copy_t, http_t, intake_t = (statistics.median(s) for s in (copy_s, http_s, intake_s))
    print(f"\n== {files:,}-file request into PostgreSQL, median of {trials} ==")
    print(f"COPY of the same rows        {copy_t:7.3f} s   {files / copy_t:10,.0f} files/s")
    print(f"native bulk request (HTTP)   {http_t:7.3f} s   {files / http_t:10,.0f} files/s")
    print(f"intake alone (no HTTP)       {intake_t:7.3f} s   {files / intake_t:10,.0f} files/s")
    print(f"ratio of rates, HTTP request / COPY:  {copy_t / http_t:.2f}   (goal >= 0.50)")
    print(f"ratio of rates, intake alone / COPY:  {copy_t / intake_t:.2f}")
    return {"copy_s": copy_t, "http_s": http_t, "intake_s": intake_t}


class _Server:
    """uvicorn in a thread on 127.0.0.1, on a port the OS picks."""

    def __init__(self, app: Any) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=120
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    def __enter__(self) -> _Server:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start within 10 s")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


async def _client(
    client: httpx.AsyncClient, url: str, files: int, rounds: int, interval_s: float, start_s: float
) -> list[float]:
    latencies: list[float] = []
    await anyio.sleep(start_s)
    next_at = time.monotonic()
    for _ in range(rounds):
        started = time.perf_counter()
        response = await client.get(url)
        latencies.append(time.perf_counter() - started)
        if response.status_code != 200 or response.content.count(b'"path"') != files:
            raise RuntimeError(f"status answered {response.status_code} without every file")
        next_at += interval_s
        await anyio.sleep(max(0.0, next_at - time.monotonic()))
    return latencies


def poll_status(
    url: str, files: int, clients: int, rounds: int, interval_s: float
) -> tuple[list[float], float]:
    """Run in a process of its own: `clients` pollers on one event loop, each starting at a random moment
    of the first interval. Returns every latency and the wall time taken."""

    async def run() -> tuple[list[float], float]:
        spread = random.Random(5)
        results: list[list[float]] = []
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client:
            started = time.perf_counter()

            async def one(start_s: float) -> None:
                results.append(await _client(client, url, files, rounds, interval_s, start_s))

            async with anyio.create_task_group() as group:
                for _ in range(clients):
                    group.start_soon(one, spread.uniform(0, interval_s) if interval_s else 0.0)
            elapsed = time.perf_counter() - started
        return [value for series in results for value in series], elapsed

    return anyio.run(run)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _line(label: str, latencies: list[float], elapsed: float | None = None) -> str:
    text = (
        f"{label:<44} p50 {1000 * _percentile(latencies, 50):7.1f} ms   "
        f"p99 {1000 * _percentile(latencies, 99):7.1f} ms   ({len(latencies)} polls"
    )
    return text + (f", {len(latencies) / elapsed:.1f} polls/s)" if elapsed else ")")


def bench_status_polling(
    url: URL, files: int, clients: int, rounds: int, interval_s: float
) -> dict[str, float]:
    adapter = _library(files)
    paths = list(adapter.library.catalogue)[:files]
    engine = make_engine(url, pool_size=10, max_overflow=10)
    factory = make_session_factory(engine)
    _truncate(engine)
    order = StageOrder(paths=tuple(paths), api=Api.TAPE_REST, list_field="files", path_field="files[{}].path")
    with transaction(factory) as session:
        submitted = submit(
            session, adapter, SystemClock(), ANONYMOUS, order, max_files=files, max_path_bytes=4096
        )
    # The clients run in a process of their own, as real clients would: they do not share this one's GIL.
    pool = multiprocessing.get_context("spawn").Pool(1)
    results: dict[str, float] = {}
    print(f"\n== status of a {files:,}-file request, uvicorn on 127.0.0.1, clients in another process ==")
    try:
        for cache_s, label in ((1.0, "status cache on (default)"), (0.0, "status cache off")):
            app = create_app(
                Settings(status_cache_s=cache_s),
                adapter=adapter,
                clock=SystemClock(),
                session_factory=factory,
            )
            with _Server(app) as server:
                status_url = f"http://127.0.0.1:{server.port}/api/v1/stage/{submitted.request_id}"
                single, _ = pool.apply(poll_status, (status_url, files, 1, 20, 0.0))
                paced, _ = pool.apply(poll_status, (status_url, files, clients, rounds, interval_s))
                burst, burst_s = pool.apply(poll_status, (status_url, files, clients, 4, 0.0))
            print(f"-- {label}")
            print(_line("one client, back to back", single))
            print(_line(f"{clients} clients, each every {interval_s:g} s (goal p99 < 100 ms)", paced))
            print(_line(f"{clients} clients, back to back", burst, burst_s))
            key = "cached" if cache_s else "uncached"
            results[f"{key}_paced_p50"] = _percentile(paced, 50)
            results[f"{key}_paced_p99"] = _percentile(paced, 99)
    finally:
        pool.close()
        pool.join()
        _truncate(engine)
        engine.dispose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--status-files", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()

    admin_url = make_url(os.environ.get("CAROUSEL_BENCH_DATABASE_URL", DEFAULT_ADMIN_URL))
    name = f"carousel_bench_{os.getpid()}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin_url.set(database=name)
    try:
        upgrade_to_head(url)
        bench_intake_vs_copy(url, args.files, args.trials)
        bench_status_polling(url, args.status_files, args.clients, args.rounds, args.interval)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()

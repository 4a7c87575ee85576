"""The queue quota is a promise under concurrency (issue 16, item 4): twenty clients submitting at once over
real HTTP to a `carousel api` process never put more files in a group's queue than its quota, on PostgreSQL
(an advisory lock serialises the check and the insert) and on SQLite (BEGIN IMMEDIATE serialises writers).

Both quotas are on (50 queued files per caller and per group). Each run is a caller of its own (a static
token), so the twenty runs share one process and one database: a run costs the twenty submits and one count.
In even runs the twenty submits name one group (both quotas bind); in odd runs each names a group of its own,
so only the caller's quota, and the caller's lock, stands between them.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import URL

from carousel.config import simulated_options_onto_defaults
from carousel.db.engine import make_engine, make_session_factory
from carousel.db.quota_queries import queued_files_of_owner
from carousel.domain.clock import SystemClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.integration.resilience.processes import Watched, api, environment

pytestmark = pytest.mark.slow

QUOTA = 50
CLIENTS = 20
FILES_EACH = 10
RUNS = 20
LIBRARY = {"catalogue": {"generate": {"seed": 16, "cartridges": 10, "files_per_cartridge": 40}}}


def token(run: int) -> str:
    return f"quota-run-{run}-token"


def group_of(run: int, client: int) -> str:
    return f"run-{run}" if run % 2 == 0 else f"run-{run}-client-{client}"


def groups(run: int) -> list[str]:
    return sorted({group_of(run, client) for client in range(CLIENTS)})


@pytest.fixture
def service(fresh_database_url: URL, tmp_path: Path) -> Iterator[tuple[str, URL]]:
    settings = {
        "CAROUSEL_DATABASE_URL": fresh_database_url.render_as_string(hide_password=False),
        "CAROUSEL_ANONYMOUS": "false",
        "CAROUSEL_AUTH__STATIC_TOKENS": json.dumps(
            [
                {
                    "name": f"run-{run}",
                    "sha256": hashlib.sha256(token(run).encode()).hexdigest(),
                    "groups": groups(run),
                }
                for run in range(RUNS)
            ]
        ),
        "CAROUSEL_QUOTAS__MAX_QUEUED_FILES_PER_CALLER": str(QUOTA),
        "CAROUSEL_QUOTAS__MAX_QUEUED_FILES_PER_GROUP": str(QUOTA),
        "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__SEED": "16",
        "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__CARTRIDGES": "10",
        "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__FILES_PER_CARTRIDGE": "40",
    }
    watched: Watched | None = None
    try:
        watched, base = api(environment(settings), tmp_path / "api.log")
        yield base, fresh_database_url
    finally:
        if watched is not None:
            watched.stop()


def library_paths(count: int) -> list[str]:
    adapter = build_simulated_adapter(simulated_options_onto_defaults(LIBRARY), SystemClock())
    try:
        catalogue = adapter.library.catalogue
        return [entry.path for tape in catalogue.tapes for entry in catalogue.on_tape(tape)][:count]
    finally:
        adapter.close()


def one_run(pool: ThreadPoolExecutor, clients: list[httpx.Client], run: int, paths: list[str]) -> list[int]:
    """Every client submits its own FILES_EACH files as the run's caller at the same moment; their status
    codes."""
    start = threading.Barrier(CLIENTS)
    headers = {"Authorization": f"Bearer {token(run)}"}

    def submit(index: int) -> int:
        mine = paths[index * FILES_EACH : (index + 1) * FILES_EACH]
        body = {"paths": mine, "group": group_of(run, index)}
        start.wait(timeout=30)
        return clients[index].post("/api/native/v1/requests", json=body, headers=headers).status_code

    return list(pool.map(submit, range(CLIENTS)))


def test_twenty_concurrent_submits_never_pass_the_caller_or_group_quota(service: tuple[str, URL]) -> None:
    base, url = service
    paths = library_paths(CLIENTS * FILES_EACH)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    clients = [httpx.Client(base_url=base, timeout=60) for _ in range(CLIENTS)]
    try:
        with ThreadPoolExecutor(CLIENTS) as pool:
            for run in range(RUNS):
                codes = one_run(pool, clients, run, paths)
                with factory() as session:
                    queued = queued_files_of_owner(session, f"run-{run}")
                assert queued <= QUOTA, f"run {run}: {queued} files queued against a quota of {QUOTA}"
                # serialised, the quota fills exactly: five submits of ten fit, the other fifteen wait
                assert sorted(codes) == [201] * (QUOTA // FILES_EACH) + [429] * (
                    CLIENTS - QUOTA // FILES_EACH
                ), f"run {run}: {codes}"
                assert queued == QUOTA
    finally:
        for client in clients:
            client.close()
        engine.dispose()

"""The queue quota is a promise under concurrency (issue 16, item 4): twenty clients submitting at once over
real HTTP to a `carousel api` process never put more files in a group's queue than its quota, on PostgreSQL
(an advisory lock serialises the check and the insert) and on SQLite (BEGIN IMMEDIATE serialises writers).

Each run uses a group of its own, so the twenty runs share one process and one database: a run costs the
twenty submits and one count.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import URL

from carousel.config import simulated_options_onto_defaults
from carousel.db.engine import make_engine, make_session_factory
from carousel.db.quota_queries import queued_files_of_group
from carousel.domain.clock import SystemClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.integration.resilience.processes import Watched, api, environment

pytestmark = pytest.mark.slow

QUOTA = 50
CLIENTS = 20
FILES_EACH = 10
RUNS = 20
LIBRARY = {"catalogue": {"generate": {"seed": 16, "cartridges": 10, "files_per_cartridge": 40}}}


@pytest.fixture
def service(fresh_database_url: URL, tmp_path: Path) -> Iterator[tuple[str, URL]]:
    settings = {
        "CAROUSEL_DATABASE_URL": fresh_database_url.render_as_string(hide_password=False),
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


def one_run(pool: ThreadPoolExecutor, clients: list[httpx.Client], group: str, paths: list[str]) -> list[int]:
    """Every client submits its own FILES_EACH files to `group` at the same moment; their status codes."""
    start = threading.Barrier(CLIENTS)

    def submit(index: int) -> int:
        mine = paths[index * FILES_EACH : (index + 1) * FILES_EACH]
        start.wait(timeout=30)
        answer = clients[index].post("/api/native/v1/requests", json={"paths": mine, "group": group})
        return answer.status_code

    return list(pool.map(submit, range(CLIENTS)))


def test_twenty_concurrent_submits_never_pass_the_group_quota(service: tuple[str, URL]) -> None:
    base, url = service
    paths = library_paths(CLIENTS * FILES_EACH)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    clients = [httpx.Client(base_url=base, timeout=60) for _ in range(CLIENTS)]
    try:
        with ThreadPoolExecutor(CLIENTS) as pool:
            for run in range(RUNS):
                group = f"quota-run-{run}"
                codes = one_run(pool, clients, group, paths)
                with factory() as session:
                    queued = queued_files_of_group(session, group)
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

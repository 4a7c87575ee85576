"""Two real `carousel api` processes on one database (one of them with two workers of its own): the call
rates and the queue quotas hold across them, and a cancel or delete made through one is never contradicted
by the other afterwards, whose status cache holds every document for a minute."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from threading import Barrier

import httpx
import pytest
import tomli_w
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import URL

from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.clients.support import (
    ServiceNotReady,
    carousel_program,
    free_port,
    service_environment,
    stop,
    wait_ready,
)

pytestmark = pytest.mark.slow

LIBRARY = {
    "profile": "lto8",
    "drives": 2,
    "catalogue": {"generate": {"seed": 7, "cartridges": 20, "files_per_cartridge": 10}},
    "scale": 100.0,
}
CALLERS = ("alice", "carol", "dave", "erin", "frank")
BURST = 20  # calls each caller may make, across both processes: the rate refills one call per 1000 s
QUEUED_FILES = 10  # per caller, across both processes


@dataclass(frozen=True)
class Services:
    first: str  # `carousel api --workers 2`
    second: str  # `carousel api`
    paths: list[str]

    def headers(self, caller: str) -> dict[str, str]:
        return {"Authorization": f"Bearer token-of-{caller}"}


def _config(directory: Path, database_url: URL) -> Path:
    settings = {
        "database_url": database_url.render_as_string(hide_password=False),
        "host": "127.0.0.1",
        "anonymous": False,
        "adapter": "simulated",
        "adapter_options": LIBRARY,
        "buffer": {"enabled": False},
        # every status document kept a minute: only the version read on each call keeps it honest
        "status_cache_s": 60.0,
        "status_cache_min_files": 0,
        "quotas": {
            "caller_calls_per_s": 0.001,
            "caller_burst": BURST,
            "max_queued_files_per_caller": QUEUED_FILES,
        },
        "auth": {
            "static_tokens": [
                {"name": name, "sha256": hashlib.sha256(f"token-of-{name}".encode()).hexdigest()}
                for name in CALLERS
            ]
        },
    }
    config = directory / "carousel.toml"
    config.write_text(tomli_w.dumps(settings))
    return config


@pytest.fixture
def services(fresh_database_url: URL, tmp_path: Path) -> Iterator[Services]:
    env = service_environment(_config(tmp_path, fresh_database_url))
    started: list[tuple[subprocess.Popen[bytes], str, Path]] = []
    try:
        for index, extra in enumerate((["--workers", "2"], [])):
            port = free_port()
            log = tmp_path / f"api-{index}.log"
            with log.open("wb") as sink:
                argv = [carousel_program(), "api", "--port", str(port), *extra]
                process = subprocess.Popen(argv, env=env, stdout=sink, stderr=subprocess.STDOUT)
            started.append((process, f"http://127.0.0.1:{port}", log))
        for process, url, log in started:
            try:
                wait_ready(url, process, log)
            except ServiceNotReady as exc:
                pytest.fail(str(exc))
        adapter = build_simulated_adapter(LIBRARY, ManualClock())
        paths = sorted(adapter.library.catalogue)
        adapter.close()
        yield Services(started[0][1], started[1][1], paths)
    finally:
        for process, _, _ in started:
            stop(process)


def test_the_call_rate_is_one_across_processes(services: Services) -> None:
    answers = [
        httpx.get(f"{url}/api/native/v1/limits", headers=services.headers("carol")).status_code
        for _ in range(BURST)
        for url in (services.first, services.second)
    ]
    # a bucket per process would have let all of them through
    assert answers.count(200) == BURST
    assert answers.count(429) == BURST
    assert answers[:BURST] == [200] * BURST

    # Tape REST status polls are charged in the session of their reads (statements committed on their
    # own): the same one bucket across processes, the submit's call counted in it
    created = httpx.post(
        f"{services.first}/api/v1/stage",
        json={"files": [{"path": services.paths[-1]}]},
        headers=services.headers("frank"),
    )
    assert created.status_code == 201
    status = f"/api/v1/stage/{created.json()['requestId']}"
    polls = [
        httpx.get(f"{url}{status}", headers=services.headers("frank")).status_code
        for _ in range(BURST)
        for url in (services.first, services.second)
    ]
    assert polls[: BURST - 1] == [200] * (BURST - 1)
    assert polls.count(200) == BURST - 1
    assert polls.count(429) == BURST + 1


def test_the_queue_quota_is_one_across_processes(services: Services) -> None:
    """Eight submits of 3 files at once, half to each process: 3 fit under 10 files, the rest are refused."""
    start = Barrier(8)

    def submit(index: int) -> int:
        url = services.first if index % 2 else services.second
        files = [{"path": path} for path in services.paths[index * 3 : index * 3 + 3]]
        start.wait()
        response = httpx.post(
            f"{url}/api/v1/stage", json={"files": files}, headers=services.headers("alice"), timeout=60
        )
        return response.status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(submit, range(8)))
    assert sorted(codes) == [201] * 3 + [429] * 5
    limits = httpx.get(f"{services.second}/api/native/v1/limits", headers=services.headers("alice"))
    assert limits.json()["caller"]["queued_files"] == 9


def test_a_delete_through_one_process_is_never_contradicted_by_the_other(services: Services) -> None:
    dave = services.headers("dave")
    files = [{"path": path} for path in services.paths[100:102]]
    created = httpx.post(f"{services.first}/api/v1/stage", json={"files": files}, headers=dave)
    assert created.status_code == 201
    status = f"/api/v1/stage/{created.json()['requestId']}"
    for url in (services.first, services.second, services.first, services.second):  # cached in each
        assert httpx.get(url + status, headers=dave).status_code == 200
    assert httpx.delete(services.first + status, headers=dave).status_code == 200
    for url in (services.second, services.first, services.second):
        answer = httpx.get(url + status, headers=dave)
        assert answer.status_code == 404, answer.text


def test_a_cancel_through_one_process_shows_at_once_in_the_other(services: Services) -> None:
    erin = services.headers("erin")
    paths = services.paths[110:112]
    created = httpx.post(
        f"{services.first}/api/v1/stage", json={"files": [{"path": p} for p in paths]}, headers=erin
    )
    status = f"/api/v1/stage/{created.json()['requestId']}"
    before = httpx.get(services.second + status, headers=erin).json()  # now cached in the second
    assert [f.get("state") for f in before["files"]] == ["SUBMITTED", "SUBMITTED"]
    cancelled = httpx.post(services.first + status + "/cancel", json={"paths": [paths[0]]}, headers=erin)
    assert cancelled.status_code == 200
    for url in (services.second, services.first, services.second):
        after = httpx.get(url + status, headers=erin).json()
        assert [f.get("state") for f in after["files"]] == ["CANCELLED", "SUBMITTED"]


def test_the_metrics_of_every_worker_are_added_up_at_each_scrape(services: Services) -> None:
    """`carousel api --workers 2`: a scrape reaches one worker, and answers for both (a counter that showed
    one worker's count at each scrape would jump up and down with the worker scraped); the figures are the
    API's only."""
    calls = 15  # each on a connection of its own: the kernel spreads them over the workers
    limits = f"{services.first}/api/native/v1/limits"
    for _ in range(calls):
        assert httpx.get(limits, headers=services.headers("erin")).is_success
    for _ in range(6):  # scrapes spread over the workers too
        scraped = httpx.get(f"{services.first}/metrics")
        assert scraped.status_code == 200
        answered = [
            sample.value
            for family in text_string_to_metric_families(scraped.text)
            if family.name == "carousel_http_requests"
            for sample in family.samples
            if sample.name == "carousel_http_requests_total" and sample.labels["route"].endswith("/limits")
        ]
        assert sum(answered) == calls
        # an API process runs no cycle: it exports no cycle figures (zeros would read "nothing mounted")
        names = {family.name for family in text_string_to_metric_families(scraped.text)}
        assert "carousel_http_requests" in names
        assert not names & {"carousel_mounts", "carousel_cycles", "carousel_files_handed_over"}

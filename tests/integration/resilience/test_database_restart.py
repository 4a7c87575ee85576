"""PostgreSQL stopped and started under a running carousel, on a cluster of the test's own.

- The scheduler's cycle skips while the database is away (no exception escapes it), keeps what it took from
  the library meanwhile, and finishes everything once it is back, each file read once.
- A hand-over the library accepted just before the database went away is recorded when it is back, under
  its own batch key (not recovered as a stale claim and sent again).
- `carousel serve` answers 503 problem+json with Retry-After while the database is away, recovers by itself,
  and loses nothing it accepted before.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select

from carousel.config import Settings
from carousel.db.engine import make_engine, make_session_factory, upgrade_to_head
from carousel.db.models import AppliedEvent, QueuedFileRow, Recall
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from carousel.scheduler.cycle import Cycle
from hsm_adapters.base import Batch
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from policies.registry import build_policy
from tests.clients.support import carousel_program, free_port, stop, wait_ready
from tests.integration.resilience.pg_cluster import ThrowawayPostgres
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import catalogue_files

pytestmark = [pytest.mark.postgres, pytest.mark.xdist_group("throwaway-postgres")]

LIBRARY: dict[str, Any] = {
    "profile": "lto8",
    "drives": 2,
    "catalogue": {"generate": {"seed": 21, "cartridges": 4, "files_per_cartridge": 30}},
    "scale": 1.0,
}
WAIT_S = 60.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[ThrowawayPostgres]:
    cluster = ThrowawayPostgres()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def database(cluster: ThrowawayPostgres, request: pytest.FixtureRequest) -> Iterator[Engine]:
    if not cluster.running:
        cluster.start()
    url = cluster.create_database(request.node.name.replace("[", "_").replace("]", "")[:60])
    upgrade_to_head(url)
    engine = make_engine(url)
    yield engine
    engine.dispose()


def cycle_on(engine: Engine, adapter: Any, clock: ManualClock, **settings: Any) -> Cycle:
    values: dict[str, Any] = {"database_url": str(engine.url), "claim_timeout_s": 60.0, **settings}
    return Cycle(Settings(**values), make_session_factory(engine), adapter, build_policy("fifo", {}), clock)


def states(engine: Engine) -> dict[str, str]:
    with make_session_factory(engine)() as session:
        return dict(session.execute(select(QueuedFileRow.path, QueuedFileRow.state)).all())


def step_until_staged(cycle: Cycle, clock: ManualClock, engine: Engine, *, max_cycles: int = 300) -> None:
    for _ in range(max_cycles):
        cycle.run_once()
        if set(states(engine).values()) == {FileState.STAGED.value}:
            return
        clock.advance(20)
    raise AssertionError(f"not all staged after {max_cycles} cycles: {states(engine)}")


def test_the_cycle_skips_while_the_database_is_away_and_loses_nothing(cluster, database, clock):
    adapter = build_simulated_adapter(LIBRARY, clock)
    factory = make_session_factory(database)
    add_request(factory, catalogue_files(adapter, 12, clock.now(), tapes=2), clock.now())
    cycle = cycle_on(database, adapter, clock)
    try:
        assert cycle.run_once().files_submitted == 12
        clock.advance(300)  # the library reads meanwhile: its events wait in the adapter

        cluster.stop()
        away = [cycle.run_once() for _ in range(3) if clock.advance(100)]
        assert all(r.database_unavailable and not r.leader for r in away)
        assert all("database unavailable" in r.errors[0] for r in away)
        cluster.start()

        back = cycle.run_once()
        assert back.leader and back.new_term  # the lock went with the old connection: taken again
        assert back.events is not None and back.events.staged > 0  # events from the outage, applied now
        step_until_staged(cycle, clock, database)
        assert adapter.library.stats().files_staged == 12  # each read once
        with factory() as session:
            assert session.scalar(select(func.count()).select_from(AppliedEvent)) == adapter._seq
    finally:
        cycle.close()
        adapter.close()


class DatabaseDiesOnSubmit:
    """The simulated library; as it takes the first batch, the database goes away."""

    def __init__(self, inner: SimulatedAdapter, cluster: ThrowawayPostgres) -> None:
        self.inner = inner
        self.name = inner.name
        self.cluster = cluster

    def submit(self, batch: Batch) -> None:
        self.inner.submit(batch)
        if self.cluster.running:
            self.cluster.stop()

    def __getattr__(self, attribute: str) -> object:
        return getattr(self.inner, attribute)


def test_a_hand_over_not_recorded_is_recorded_when_the_database_is_back(cluster, database, clock):
    inner = build_simulated_adapter({**LIBRARY, "drives": 1}, clock)
    adapter = DatabaseDiesOnSubmit(inner, cluster)
    factory = make_session_factory(database)
    add_request(factory, catalogue_files(inner, 4, clock.now(), tapes=1), clock.now())
    cycle = cycle_on(database, adapter, clock, claim_timeout_s=30.0)
    try:
        lost = cycle.run_once()
        assert lost.database_unavailable
        assert cycle.store.unrecorded == 4  # the library took all four batches; none is recorded
        clock.advance(120)  # well past claim_timeout_s: a stale claim would be sent again under a new key
        cluster.start()

        back = cycle.run_once()
        assert back.recorded_late == 4 and back.recovered_claims == 0
        step_until_staged(cycle, clock, database)
        assert inner.library.stats().files_staged == 4
        with factory() as session:
            assert session.scalar(select(func.count()).select_from(Recall)) == 4
    finally:
        cycle.close()
        inner.close()


# --- the service -------------------------------------------------------------------------------------------


def serve(cluster: ThrowawayPostgres, url: str, directory: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAROUSEL_") and "proxy" not in k.lower()}
    env.update(
        CAROUSEL_DATABASE_URL=url,
        CAROUSEL_CYCLE_INTERVAL_S="0.3",
        CAROUSEL_ADAPTER_OPTIONS__SCALE="1000",
        CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__SEED="21",
        # the catalogue the test takes its names from, whatever the embedded default library is
        CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__CARTRIDGES="200",
        CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__FILES_PER_CARTRIDGE="50",
        CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__SIZE_MODEL="star2006",
        CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__LAYOUT="packed",
        CAROUSEL_LOG_FORMAT="json",
        CAROUSEL_BUFFER__ENABLED="false",  # a generated catalogue of multi-GB files: no bytes
    )
    log = directory / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [carousel_program(), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, process, log)
    return process, base, log


def until(what: str, check: Any, log: Path) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {WAIT_S:g} s\n{log.read_text()[-5000:]}")


def test_the_api_answers_503_while_the_database_is_away_and_recovers_by_itself(cluster, database, tmp_path):
    process, base, log = serve(cluster, str(database.url.render_as_string(hide_password=False)), tmp_path)
    native = f"{base}/api/native/v1"
    try:
        paths = httpx.get(f"{native}/requests", timeout=10)  # the service answers
        assert paths.status_code == 200
        catalogue = build_simulated_adapter(
            {"catalogue": {"generate": {"seed": 21, "cartridges": 200, "files_per_cartridge": 50}}},
            ManualClock(),
        ).library.catalogue
        names = list(catalogue)[:150]
        accepted = []
        for n in range(3):
            answer = httpx.post(
                f"{native}/requests", json={"paths": names[n * 40 : (n + 1) * 40]}, timeout=10
            )
            assert answer.status_code == 201
            accepted.append(answer.json()["id"])

        cluster.stop()
        away = httpx.get(f"{native}/requests/{accepted[0]}", timeout=10)
        assert away.status_code == 503
        assert away.headers["content-type"] == "application/problem+json"
        assert int(away.headers["retry-after"]) > 0
        assert away.json()["status"] == 503
        refused = httpx.post(f"{native}/requests", json={"paths": names[120:130]}, timeout=10)
        assert refused.status_code == 503
        assert httpx.get(f"{base}/readyz", timeout=10).status_code == 503
        until(
            "the scheduler noticing", lambda: b"database unavailable: cycle skipped" in log.read_bytes(), log
        )
        assert process.poll() is None

        cluster.start()
        until(
            "the API answering again",
            lambda: httpx.get(f"{native}/requests", timeout=10).status_code == 200,
            log,
        )
        answer = httpx.post(f"{native}/requests", json={"paths": names[120:150]}, timeout=10)
        assert answer.status_code == 201
        accepted.append(answer.json()["id"])

        def all_done() -> list[dict[str, Any]] | None:
            summaries = [httpx.get(f"{native}/requests/{i}", timeout=10).json() for i in accepted]
            return summaries if all(s["request"]["state"] == "DONE" for s in summaries) else None

        summaries = until("every accepted request done", all_done, log)
        assert [s["request"]["files_total"] for s in summaries] == [40, 40, 40, 30]
        assert all(s["counts"].get("COMPLETED") == s["request"]["files_total"] for s in summaries)
    finally:
        stop(process, signal.SIGINT)

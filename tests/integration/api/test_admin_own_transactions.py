"""The admin dry run and replay on a database file of their own, as `make run` serves them: on SQLite (one
writer at a time) a route that held its session open while the dry run opened another transaction would wait
for itself and fail with "database is locked"."""

from __future__ import annotations

import anyio
import httpx
from sqlalchemy.engine import URL

from carousel.api.app import create_app
from carousel.config import Settings
from carousel.config.auth import AuthSettings
from carousel.db.engine import make_engine, make_session_factory
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.api.conftest import BASE_URL, LIBRARY_OPTIONS
from tests.tokens import static_token


def test_dry_run_and_replay_answer_on_a_database_of_their_own(
    fresh_database_url: URL, library: SimulatedAdapter, library_paths: list[str], clock: ManualClock
) -> None:
    token, entry = static_token("ops", admin=True)
    settings = Settings(
        anonymous=False, auth=AuthSettings(static_tokens=(entry,)), adapter_options=LIBRARY_OPTIONS
    )
    engine = make_engine(fresh_database_url)
    app = create_app(settings, adapter=library, clock=clock, session_factory=make_session_factory(engine))
    answers: dict[str, httpx.Response] = {}

    async def calls() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL, headers=headers) as client:
            with anyio.fail_after(120):
                submitted = await client.post("/api/native/v1/requests", json={"paths": library_paths[:5]})
                assert submitted.status_code == 201, submitted.text
                answers["dry-run"] = await client.post(
                    "/api/admin/v1/policy/dry-run", json={"policy": "fifo"}
                )
                answers["replay"] = await client.post("/api/admin/v1/policy/replay", json={"hours": 1})

    try:
        anyio.run(calls)
    finally:
        engine.dispose()
    dry_run, replay = answers["dry-run"], answers["replay"]
    assert dry_run.status_code == 200, dry_run.text
    assert dry_run.json()["tapes_with_work"] >= 1
    assert replay.status_code == 200, replay.text
    assert replay.json()["skipped"]["not_read"] == 5

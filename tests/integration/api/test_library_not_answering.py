"""A library whose health call raises plans as offline in the API as in the cycle
(tests/integration/scheduler/test_live_snapshot.py): a request's outlook and an admin's dry run say the
library is offline, answer 200, and nothing is claimed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import QueuedFileRow
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.integration.api.conftest import LIBRARY_OPTIONS, Bearer
from tests.integration.unanswering_library import UnansweringLibrary

NATIVE = "/api/native/v1"
OFFLINE = "the library is offline: nothing moves until it is back"


@pytest.fixture
def library(clock: ManualClock) -> Iterator[UnansweringLibrary]:
    """The app's library (make_api's): the simulated one, behind a health call that raises."""
    inner = build_simulated_adapter(LIBRARY_OPTIONS, clock)
    yield UnansweringLibrary(inner)
    inner.close()


def queued_states(factory: sessionmaker[Session]) -> set[str]:
    with factory() as session:
        return set(session.scalars(select(QueuedFileRow.state)))


def test_an_outlook_says_the_library_is_offline(
    admin: Bearer,
    library: UnansweringLibrary,
    library_paths: list[str],
    session_factory: sessionmaker[Session],
) -> None:
    response = admin.post(f"{NATIVE}/requests", json={"paths": library_paths[:3]})
    assert response.status_code == 201, response.text

    summary = admin.get(f"{NATIVE}/requests/{response.json()['id']}")

    assert summary.status_code == 200, summary.text
    outlook = summary.json()["outlook"]
    assert library.asked == ["health"]
    assert outlook["eta"] is None and outlook["note"] == OFFLINE
    assert [(w["code"], w["files"]) for w in outlook["waiting"]] == [("library_offline", 3)]
    assert queued_states(session_factory) == {"QUEUED"}


def test_a_dry_run_plans_both_policies_as_offline(
    admin: Bearer,
    library: UnansweringLibrary,
    library_paths: list[str],
    session_factory: sessionmaker[Session],
) -> None:
    paths = library_paths[:40:4]  # files on several cartridges
    assert admin.post(f"{NATIVE}/requests", json={"paths": paths}).status_code == 201

    response = admin.post("/api/admin/v1/policy/dry-run", json={"policy": "cta"})

    assert response.status_code == 200, response.text
    body = response.json()
    assert library.asked == ["health"]  # one snapshot for both policies
    assert body["tapes_with_work"] > 1
    for side in (body["candidate"], body["active"]):
        assert side["selections"] == [] and side["passes"] == [] and side["drained_at"] is None
        assert side["note"] == OFFLINE
        assert side["waiting_total"] == body["tapes_with_work"]
        assert {w["code"] for w in side["waiting"]} == {"library_offline"}
    assert queued_states(session_factory) == {"QUEUED"}

"""Disk lifetimes through the APIs: Tape REST's per-file diskLifetime and the native lifetime are kept on each
link, capped; a bad one is a 400 problem+json naming the field, and nothing is written."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import RequestFile
from tests.integration.api.conftest import RowCounts, SyncApi, assert_problem


def lifetimes(factory: sessionmaker[Session], request_id: str) -> list[int | None]:
    with factory() as session:
        return list(
            session.scalars(
                select(RequestFile.lifetime_s)
                .where(RequestFile.request_id == request_id)
                .order_by(RequestFile.ordinal)
            )
        )


def test_tape_rest_disk_lifetimes_per_file(api: SyncApi, library_paths: list[str], session_factory) -> None:
    a, b, c = library_paths[:3]
    files = [{"path": a, "diskLifetime": "PT1H"}, {"path": b, "diskLifetime": 600}, {"path": c}]
    response = api.post("/api/v1/stage", json={"files": files})
    assert response.status_code == 201, response.text
    assert lifetimes(session_factory, response.json()["requestId"]) == [3600, 600, 86_400]


def test_a_lifetime_over_the_maximum_is_cut_to_it(
    make_api, library_paths: list[str], session_factory
) -> None:
    api = make_api(buffer={"enabled": False, "max_lifetime_s": 7200, "default_lifetime_s": 60})
    response = api.post("/api/v1/stage", json={"files": [{"path": library_paths[0], "diskLifetime": "P1D"}]})
    assert lifetimes(session_factory, response.json()["requestId"]) == [7200]


def test_a_bad_disk_lifetime_is_400_naming_the_file(
    api: SyncApi, library_paths: list[str], row_counts
) -> None:
    before: RowCounts = row_counts()
    files = [{"path": library_paths[0]}, {"path": library_paths[1], "diskLifetime": "tomorrow"}]
    response = api.post("/api/v1/stage", json={"files": files})
    assert_problem(response, 400, field="files[1].diskLifetime", says="not a lifetime")
    assert row_counts() == before


def test_the_native_lifetime_applies_to_every_file(
    api: SyncApi, library_paths: list[str], session_factory
) -> None:
    response = api.post("/api/native/v1/requests", json={"paths": library_paths[:2], "lifetime": "P2D"})
    assert response.status_code == 201, response.text
    assert lifetimes(session_factory, response.json()["id"]) == [172_800, 172_800]
    bad = api.post("/api/native/v1/requests", json={"paths": library_paths[:1], "lifetime": "-PT1H"})
    assert_problem(bad, 400, field="lifetime")

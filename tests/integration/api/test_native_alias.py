"""Aliases and co-location hints on native requests: XRootD's request ids name carousel requests."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import RequestAlias, StageRequest
from tests.integration.api.conftest import RowCounts, SyncApi, assert_problem

NATIVE = "/api/native/v1"
ALIAS = "52667f000001:277289e9.6b025b1b:1"


def _submit(api: SyncApi, paths: list[str], **extra: object) -> str:
    response = api.post(f"{NATIVE}/requests", json={"paths": paths, **extra})
    assert response.status_code == 201, response.text
    request_id: str = response.json()["id"]
    return request_id


def test_every_request_route_takes_the_alias(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    paths = library_paths[:3]
    request_id = _submit(api, paths, alias=ALIAS, colocation=paths[0], priority=2)
    with session_factory() as session:
        assert session.scalars(select(RequestAlias.request_id).where(RequestAlias.alias == ALIAS)).all() == [
            request_id
        ]

    summary = api.get(f"{NATIVE}/requests/{ALIAS}").json()
    assert summary["request"]["id"] == request_id
    assert summary["request"]["colocation"] == paths[0]
    assert summary["request"]["priority"] == 2
    files = api.get(f"{NATIVE}/requests/{ALIAS}/files").json()["files"]
    assert [f["path"] for f in files] == paths

    cancelled = api.post(f"{NATIVE}/requests/{ALIAS}/cancel", json={"paths": [paths[0]]})
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["counts"]["CANCELLED"] == 1
    assert api.post(f"{NATIVE}/requests/{ALIAS}/release").status_code == 200
    assert api.delete(f"{NATIVE}/requests/{ALIAS}").status_code == 200
    # A deleted request is gone under both names; the problem names what the client wrote.
    assert_problem(api.get(f"{NATIVE}/requests/{ALIAS}"), 404, says=ALIAS)
    assert_problem(api.get(f"{NATIVE}/requests/{request_id}"), 404)


def test_a_request_without_hints_has_no_colocation(api: SyncApi, library_paths: list[str]) -> None:
    request_id = _submit(api, library_paths[:1])
    assert api.get(f"{NATIVE}/requests/{request_id}").json()["request"]["colocation"] is None


def test_an_alias_names_one_request_only(
    api: SyncApi, library_paths: list[str], row_counts: Callable[[], RowCounts]
) -> None:
    first = _submit(api, library_paths[:1], alias=ALIAS)
    before = row_counts()
    response = api.post(f"{NATIVE}/requests", json={"paths": library_paths[1:2], "alias": ALIAS})
    assert_problem(response, 409, field="alias", says="already names a request")
    assert row_counts() == before
    assert api.get(f"{NATIVE}/requests/{ALIAS}").json()["request"]["id"] == first


def test_bad_aliases_and_hints_are_refused_by_name(
    api: SyncApi, library_paths: list[str], row_counts: Callable[[], RowCounts]
) -> None:
    before = row_counts()
    request_id = "0b9f3c2e-5d4a-4f6b-9c1d-2e3f4a5b6c7d"
    for alias in ("", "a/b", "a b", "x" * 257, request_id, request_id.upper()):
        response = api.post(f"{NATIVE}/requests", json={"paths": library_paths[:1], "alias": alias})
        assert_problem(response, 400, field="alias")
    response = api.post(f"{NATIVE}/requests", json={"paths": library_paths[:1], "colocation": "/" * 257})
    assert_problem(response, 400, field="colocation")
    assert row_counts() == before


def test_unknown_alias_is_not_found(api: SyncApi, session_factory: sessionmaker[Session]) -> None:
    for route in ("", "/files"):
        assert_problem(api.get(f"{NATIVE}/requests/no-such-alias{route}"), 404, says="no-such-alias")
    assert_problem(api.post(f"{NATIVE}/requests/no-such-alias/cancel"), 404)
    with session_factory() as session:
        assert session.scalars(select(StageRequest)).all() == []

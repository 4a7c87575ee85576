"""Issue 16, item 8: an alias (XRootD's request id) was unique across the service, so another tenant's alias
answered 409 "already names a request": a caller could learn other tenants' XRootD request ids, or take
them in advance. Aliases are per caller now: each caller's alias names its own request."""

from __future__ import annotations

import anyio
import httpx

from tests.integration.security.conftest import ServiceFactory, assert_problem

XROOTD_ID = "0a1b2c3d:4e5f.6789"


def test_one_alias_names_each_callers_own_request(start_service: ServiceFactory) -> None:
    service = start_service()
    paths = service.library_paths
    with service.client(service.alice_token) as alice, service.client(service.bob_token) as bob:
        taken = alice.post("/api/native/v1/requests", json={"paths": paths[:1], "alias": XROOTD_ID})
        assert taken.status_code == 201, taken.text
        # bob learns nothing of alice's alias, and it does not stop him using the same one
        assert_problem(bob.get(f"/api/native/v1/requests/{XROOTD_ID}"), 404)
        his = bob.post("/api/native/v1/requests", json={"paths": paths[1:2], "alias": XROOTD_ID})
        assert his.status_code == 201, his.text
        assert alice.get(f"/api/native/v1/requests/{XROOTD_ID}").json()["request"]["id"] == taken.json()["id"]
        assert bob.get(f"/api/native/v1/requests/{XROOTD_ID}").json()["request"]["id"] == his.json()["id"]
        # each cancels its own by the alias; the other's stays
        assert bob.post(f"/api/native/v1/requests/{XROOTD_ID}/cancel", json={}).status_code == 200
        assert alice.get(f"/api/native/v1/requests/{XROOTD_ID}").json()["request"]["state"] == "ACTIVE"
        # a caller's own alias still names one request of its own
        again = alice.post("/api/native/v1/requests", json={"paths": paths[2:3], "alias": XROOTD_ID})
        body = assert_problem(again, 409, field="alias")
        assert "of yours" in body["detail"]


RACERS = 8


def test_submits_racing_for_one_alias_get_one_201_and_409s(start_service: ServiceFactory) -> None:
    service = start_service()
    statuses: list[int] = []

    async def race() -> None:
        headers = {"Authorization": f"Bearer {service.alice_token}"}
        async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=60) as client:

            async def submit(index: int) -> None:
                body = {"paths": [service.library_paths[index]], "alias": "raced:1"}
                statuses.append((await client.post("/api/native/v1/requests", json=body)).status_code)

            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    for index in range(RACERS):
                        group.start_soon(submit, index)

    anyio.run(race)
    assert sorted(statuses) == [201] + [409] * (RACERS - 1)

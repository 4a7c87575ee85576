"""Issue 16, item 5: callers whose credentials carry no group shared the group `default` for its queue
quota and call rate, so two unrelated callers filled it and a third got 429. A caller without a group
belongs to none: only per-caller limits bound it. Callers with a group still share their group's."""

from __future__ import annotations

from carousel.config import Quotas
from tests.integration.security.conftest import ServiceFactory, assert_problem

GROUP_FILES = 2
GROUP_BURST = 3


def test_callers_without_groups_do_not_share_a_group_quota(start_service: ServiceFactory) -> None:
    service = start_service(quotas=Quotas(max_queued_files_per_group=GROUP_FILES))
    paths = iter(service.library_paths)
    groupless = [service.alice_token, service.bob_token, service.jwt(sub="carol")]
    for token in groupless:  # each queues the whole group quota: none is charged to another's
        with service.client(token) as client:
            batch = [next(paths) for _ in range(GROUP_FILES)]
            response = client.post("/api/native/v1/requests", json={"paths": batch})
            assert response.status_code == 201, response.text
    # nor are they shown what strangers queued in `default`
    with service.client(service.bob_token) as client:
        standing = client.get("/api/native/v1/limits").json()["caller"]
    assert (standing["queued_files"], standing["group"], standing["group_queued_files"]) == (2, None, None)
    # callers of one group still share its quota
    first, second = service.jwt(sub="dave", groups=["/star"]), service.jwt(sub="erin", groups=["/star"])
    with service.client(first) as client:
        batch = [next(paths) for _ in range(GROUP_FILES)]
        assert client.post("/api/native/v1/requests", json={"paths": batch}).status_code == 201
    with service.client(second) as client:
        refused = client.post("/api/native/v1/requests", json={"paths": [next(paths)]})
    assert_problem(refused, 429)


def test_callers_without_groups_do_not_share_a_group_rate(start_service: ServiceFactory) -> None:
    # the clock does not move: no bucket refills during the test
    service = start_service(quotas=Quotas(group_calls_per_s=0.001, group_burst=GROUP_BURST))
    for token in (service.alice_token, service.bob_token, service.jwt(sub="carol")):
        with service.client(token) as client:
            statuses = [client.get("/api/native/v1/requests").status_code for _ in range(GROUP_BURST)]
        assert statuses == [200] * GROUP_BURST
    first, second = service.jwt(sub="dave", groups=["/star"]), service.jwt(sub="erin", groups=["/star"])
    with service.client(first) as client:
        assert [client.get("/api/native/v1/requests").status_code for _ in range(GROUP_BURST)] == [200] * 3
    with service.client(second) as client:
        assert_problem(client.get("/api/native/v1/requests"), 429)

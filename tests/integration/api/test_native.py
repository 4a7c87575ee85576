"""The native API: bulk submit with priority, group and activity; paged status; counts; listing; cancel,
release and delete."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import QueuedFileRow, StageRequest
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from tests.integration.api.conftest import BASE_URL, RowCounts, SyncApi, assert_problem

NATIVE = "/api/native/v1"


def _submit(api: SyncApi, paths: list[str], **extra: object) -> str:
    response = api.post(f"{NATIVE}/requests", json={"paths": paths, **extra})
    assert response.status_code == 201, response.text
    request_id: str = response.json()["id"]
    assert response.headers["location"] == f"{BASE_URL}{NATIVE}/requests/{request_id}"
    return request_id


def test_submit_keeps_priority_group_and_activity(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    response = api.post(
        f"{NATIVE}/requests",
        json={
            "paths": library_paths[:5] + library_paths[:2],
            "priority": 7,
            "group": "star",
            "activity": "reco",
        },
    )
    assert response.status_code == 201
    assert response.json()["files_total"] == 5  # duplicates are staged once
    summary = api.get(f"{NATIVE}/requests/{response.json()['id']}").json()
    assert summary["request"]["priority"] == 7
    assert summary["request"]["group"] == "star"
    assert summary["request"]["activity"] == "reco"
    assert summary["request"]["api"] == "native"
    assert summary["counts"] == {"SUBMITTED": 5, "STARTED": 0, "COMPLETED": 0, "FAILED": 0, "CANCELLED": 0}
    with session_factory() as session:
        files = session.scalars(select(QueuedFileRow)).all()
        assert {(f.grp, f.priority) for f in files} == {("star", 7)}


def test_a_higher_priority_asker_raises_the_shared_recall(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    low = _submit(api, library_paths[:2], priority=1, group="first")
    high = _submit(api, library_paths[1:3], priority=9, group="second")
    with session_factory() as session:
        rows = {f.path: (f.priority, f.grp) for f in session.scalars(select(QueuedFileRow))}
    assert rows == {
        library_paths[0]: (1, "first"),
        library_paths[1]: (9, "first"),  # the group stays the first asker's
        library_paths[2]: (9, "second"),
    }
    # When the high-priority asker cancels, the recall falls back to the highest one still waiting.
    assert api.post(f"{NATIVE}/requests/{high}/cancel").status_code == 200
    with session_factory() as session:
        shared = session.scalars(select(QueuedFileRow).where(QueuedFileRow.path == library_paths[1])).one()
        assert (shared.priority, shared.state) == (1, FileState.QUEUED.value)
    assert api.get(f"{NATIVE}/requests/{low}").json()["counts"]["SUBMITTED"] == 2


def test_paged_file_status_with_state_filter(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    paths = [*library_paths[:7], "/not/in/library/1", "/not/in/library/2"]
    request_id = _submit(api, paths)
    with session_factory() as session, session.begin():
        session.execute(
            update(QueuedFileRow)
            .where(QueuedFileRow.path == library_paths[3])
            .values(state=FileState.SUBMITTED.value)
        )

    seen: list[dict[str, object]] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, object] = {"limit": 4}
        if cursor is not None:
            params["cursor"] = cursor
        page = api.get(f"{NATIVE}/requests/{request_id}/files", params=params).json()
        seen.extend(page["files"])
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert [f["path"] for f in seen] == paths
    assert seen[3]["state"] == "STARTED"
    assert seen[7]["state"] == "FAILED"
    assert seen[7]["error"] == "not in the library"

    failed = api.get(f"{NATIVE}/requests/{request_id}/files", params={"state": "FAILED"}).json()
    assert [f["path"] for f in failed["files"]] == paths[7:]
    assert failed["next_cursor"] is None
    counts = api.get(f"{NATIVE}/requests/{request_id}").json()["counts"]
    assert counts == {"SUBMITTED": 6, "STARTED": 1, "COMPLETED": 0, "FAILED": 2, "CANCELLED": 0}


def test_list_the_callers_requests_newest_first(
    api: SyncApi, library_paths: list[str], clock: ManualClock
) -> None:
    ids = []
    for index in range(5):
        ids.append(_submit(api, library_paths[index : index + 1]))
        clock.advance(1)
    listed: list[str] = []
    cursor = None
    while True:
        params: dict[str, object] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = api.get(f"{NATIVE}/requests", params=params).json()
        listed.extend(r["id"] for r in page["requests"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert listed == ids[::-1]
    api.delete(f"{NATIVE}/requests/{ids[0]}")
    assert ids[0] not in [r["id"] for r in api.get(f"{NATIVE}/requests").json()["requests"]]


def test_cancel_some_release_and_delete(
    api: SyncApi,
    library_paths: list[str],
    row_counts: Callable[[], RowCounts],
    session_factory: sessionmaker[Session],
) -> None:
    request_id = _submit(api, library_paths[:3])
    response = api.post(f"{NATIVE}/requests/{request_id}/cancel", json={"paths": [library_paths[0]]})
    assert response.status_code == 200
    assert response.json()["counts"]["CANCELLED"] == 1
    assert_problem(
        api.post(f"{NATIVE}/requests/{request_id}/cancel", json={"paths": ["/elsewhere"]}), 400, field="paths"
    )
    assert api.post(f"{NATIVE}/requests/{request_id}/release").status_code == 200
    assert_problem(api.post(f"{NATIVE}/requests/unknown/release"), 404)
    assert api.delete(f"{NATIVE}/requests/{request_id}").status_code == 200
    assert_problem(api.get(f"{NATIVE}/requests/{request_id}"), 404)
    with session_factory() as session:
        request = session.get(StageRequest, request_id)
        assert request is not None and request.state == "DELETED"  # kept for history
    assert row_counts().requests == 1


def test_unknown_fields_are_refused(
    api: SyncApi, library_paths: list[str], row_counts: Callable[[], RowCounts]
) -> None:
    response = api.post(f"{NATIVE}/requests", json={"paths": library_paths[:1], "priorty": 5})
    assert_problem(response, 400, field="priorty")
    assert row_counts() == RowCounts(0, 0, 0)


def test_bulk_limit(
    make_api: Callable[..., SyncApi], library_paths: list[str], row_counts: Callable[[], RowCounts]
) -> None:
    api = make_api(limits={"max_files_per_request_native": 3})
    assert_problem(
        api.post(f"{NATIVE}/requests", json={"paths": library_paths[:4]}),
        413,
        field="paths",
        says="limit is 3",
    )
    assert row_counts() == RowCounts(0, 0, 0)
    assert api.post(f"{NATIVE}/requests", json={"paths": library_paths[:3]}).status_code == 201


def test_bad_cursor_and_state(api: SyncApi, library_paths: list[str]) -> None:
    request_id = _submit(api, library_paths[:1])
    assert_problem(
        api.get(f"{NATIVE}/requests/{request_id}/files", params={"cursor": "x"}), 400, field="cursor"
    )
    assert_problem(
        api.get(f"{NATIVE}/requests/{request_id}/files", params={"state": "DONE"}), 400, field="state"
    )
    assert_problem(api.get(f"{NATIVE}/requests", params={"cursor": "!!"}), 400, field="cursor")
    assert_problem(api.get(f"{NATIVE}/requests", params={"limit": 0}), 400, field="limit")

"""The WLCG Tape REST API v1 as real clients use it: exact codes, shapes and choices."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.completion_queries import finish_file
from carousel.db.models import QueuedFileRow, StageRequest
from carousel.domain.clock import ManualClock
from carousel.domain.states import STAGE, FileState
from tests.integration.api.conftest import BASE_URL, RowCounts, SyncApi, assert_problem, stage


def _mark_staged(session_factory: sessionmaker[Session], paths: list[str], *, on_disk: bool = True) -> None:
    """What the completion step leaves behind once the library reports the files read."""
    with session_factory() as session, session.begin():
        session.execute(
            update(QueuedFileRow)
            .where(QueuedFileRow.path.in_(paths))
            .values(state=FileState.STAGED.value, on_disk=on_disk)
        )


def test_discovery_gives_an_absolute_uri(api: SyncApi, make_api: Callable[..., SyncApi]) -> None:
    response = api.get("/.well-known/wlcg-tape-rest-api")
    assert response.status_code == 200
    body = response.json()
    assert body["sitename"] == "carousel"
    [endpoint] = body["endpoints"]
    assert endpoint["uri"] == f"{BASE_URL}/api/v1"
    assert endpoint["version"] == "v1"
    assert endpoint["metadata"]["maxFilesPerStageRequest"] == 10_000

    configured = make_api(public_url="https://tape.example.org:8443/", site_name="BNL")
    body = configured.get("/.well-known/wlcg-tape-rest-api").json()
    assert body["sitename"] == "BNL"
    assert body["endpoints"][0]["uri"] == "https://tape.example.org:8443/api/v1"


def test_stage_with_and_without_trailing_slash(api: SyncApi, library_paths: list[str]) -> None:
    for url in ("/api/v1/stage", "/api/v1/stage/"):
        response = api.post(url, json={"files": [{"path": library_paths[0]}]})
        assert response.status_code == 201, url
        request_id = response.json()["requestId"]
        assert response.headers["location"] == f"{BASE_URL}/api/v1/stage/{request_id}"
        assert api.get(response.headers["location"]).status_code == 200


def test_status_shape(api: SyncApi, library_paths: list[str], clock: ManualClock) -> None:
    request_id = stage(api, [library_paths[0], "/not/in/the/library"])
    response = api.get(f"/api/v1/stage/{request_id}")
    assert response.status_code == 200
    body = response.json()
    created = int(clock.now().timestamp())
    assert body["id"] == request_id
    assert body["createdAt"] == created
    assert body["startedAt"] == created
    assert "completedAt" not in body
    first, missing = body["files"]
    assert first == {"path": library_paths[0], "state": "SUBMITTED"}
    # A path the library does not hold fails for that file at polling time, not the whole request.
    assert missing["state"] == "FAILED"
    assert missing["error"] == "not in the library"
    assert missing["finishedAt"] == created
    for entry in body["files"]:
        assert ("state" in entry) != ("onDisk" in entry)


def test_a_request_already_satisfied_is_complete_at_once(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    stage(api, library_paths[:1])
    _mark_staged(session_factory, library_paths[:1])  # on disk from the first request's recall
    request_id = stage(api, [library_paths[0], "/nowhere/at/all"])
    body = api.get(f"/api/v1/stage/{request_id}").json()
    assert [f["state"] for f in body["files"]] == ["COMPLETED", "FAILED"]
    assert body["completedAt"] == body["createdAt"]


def test_a_request_is_done_at_submit_only_when_no_file_waits(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    waiting = stage(api, [library_paths[1], "/nowhere/at/all"])  # one file to recall, one failed at once
    failed = stage(api, ["/nor/here", "/nor/there"])
    with session_factory() as session:
        states = {id_: state for id_, state in session.execute(select(StageRequest.id, StageRequest.state))}
    assert states == {waiting: "ACTIVE", failed: "DONE"}
    assert "completedAt" not in api.get(f"/api/v1/stage/{waiting}").json()
    body = api.get(f"/api/v1/stage/{failed}").json()
    assert body["completedAt"] == body["createdAt"]


def test_unknown_fields_and_foreign_metadata_are_ignored(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    body = {
        "files": [
            {
                "path": library_paths[0],
                "diskLifetime": 86400,
                "targetedMetadata": {"other-endpoint": {"colour": "blue"}},
                "somethingNew": [1, 2],
            },
            {"path": library_paths[1], "diskLifetime": "P1D", "targetedMetadata": "raw text"},
        ],
        "notInTheStandard": True,
    }
    response = api.post("/api/v1/stage", json=body, headers={"ClientInfo": "job=42"})
    assert response.status_code == 201, response.text
    with session_factory() as session:
        request = session.get(StageRequest, response.json()["requestId"])
        assert request is not None
        assert request.client_info == "job=42"
        assert request.files_total == 2


def test_duplicate_slashes_collapse_and_duplicates_stage_once(
    api: SyncApi, library_paths: list[str], row_counts: Callable[[], RowCounts]
) -> None:
    path = library_paths[0]
    doubled = path.replace("/", "//")
    request_id = stage(api, [path, doubled, path + "/"])
    files = api.get(f"/api/v1/stage/{request_id}").json()["files"]
    assert files == [{"path": path, "state": "SUBMITTED"}]
    assert row_counts() == RowCounts(requests=1, files=1, links=1)


def test_cancel(api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]) -> None:
    request_id = stage(api, library_paths[:3])
    response = api.post(f"/api/v1/stage/{request_id}/cancel", json={"paths": [library_paths[1]]})
    assert response.status_code == 200
    states = [f["state"] for f in api.get(f"/api/v1/stage/{request_id}").json()["files"]]
    assert states == ["SUBMITTED", "CANCELLED", "SUBMITTED"]
    with session_factory() as session:
        row = session.scalars(select(QueuedFileRow).where(QueuedFileRow.path == library_paths[1])).one()
        assert row.state == FileState.CANCELLED.value  # nobody else waited for it, and it was only queued


def test_cancel_with_a_foreign_path_changes_nothing(api: SyncApi, library_paths: list[str]) -> None:
    request_id = stage(api, library_paths[:2])
    before = api.get(f"/api/v1/stage/{request_id}").json()
    response = api.post(
        f"/api/v1/stage/{request_id}/cancel", json={"paths": [library_paths[0], "/not/in/request"]}
    )
    assert_problem(response, 400, field="paths", says="/not/in/request")
    assert api.get(f"/api/v1/stage/{request_id}").json() == before


def test_cancel_unknown_request(api: SyncApi) -> None:
    response = api.post("/api/v1/stage/no-such-id/cancel", json={"paths": ["/a"]})
    assert_problem(response, 404, says="no-such-id")


def test_delete_cancels_and_hides(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    request_id = stage(api, library_paths[:2])
    assert api.delete(f"/api/v1/stage/{request_id}").status_code == 200
    assert_problem(api.get(f"/api/v1/stage/{request_id}"), 404)
    assert_problem(api.delete(f"/api/v1/stage/{request_id}"), 404)
    with session_factory() as session:
        states = set(session.scalars(select(QueuedFileRow.state)))
        assert states == {FileState.CANCELLED.value}


def test_release_of_a_known_request(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    request_id = stage(api, library_paths[:2])
    _mark_staged(session_factory, library_paths[:2])
    response = api.post(f"/api/v1/release/{request_id}", json={"paths": [library_paths[0]]})
    assert response.status_code == 200
    with session_factory() as session:
        on_disk = {
            path: flag for path, flag in session.execute(select(QueuedFileRow.path, QueuedFileRow.on_disk))
        }
    # The released file may leave the buffer; the other is still wanted by its (completed) requester.
    assert on_disk == {library_paths[0]: False, library_paths[1]: True}
    assert_problem(
        api.post(f"/api/v1/release/{request_id}", json={"paths": ["/not/in/request"]}), 400, field="paths"
    )


def test_release_with_the_gfal2_placeholder_releases_by_path(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    stage(api, library_paths[:1])
    stage(api, library_paths[:1])
    _mark_staged(session_factory, library_paths[:1])
    response = api.post(
        "/api/v1/release/gfal2-placeholder-id", json={"paths": [library_paths[0], "/never/asked/for"]}
    )
    assert response.status_code == 200
    with session_factory() as session:
        row = session.scalars(select(QueuedFileRow)).one()
        assert row.on_disk is False  # both of the caller's requests let go of it


def test_archive_info(api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]) -> None:
    stage(api, library_paths[:1])
    _mark_staged(session_factory, library_paths[:1])
    paths = [library_paths[0], library_paths[1], "/not/in/the/library", "relative", "/a/../b"]
    for url in ("/api/v1/archiveinfo", "/api/v1/archiveinfo/"):
        response = api.post(url, json={"paths": paths})
        assert response.status_code == 200
        answer = response.json()
        assert [entry["path"] for entry in answer] == paths
        assert answer[0] == {"path": library_paths[0], "locality": "DISK_AND_TAPE"}
        assert answer[1] == {"path": library_paths[1], "locality": "TAPE"}
        assert answer[2] == {"path": "/not/in/the/library", "error": "not in the library"}
        assert "not absolute" in answer[3]["error"]
        assert "'..'" in answer[4]["error"]
    assert api.post("/api/v1/archiveinfo", json={"paths": []}).json() == []


def test_archive_info_never_fails_for_too_many_paths(
    make_api: Callable[..., SyncApi], library_paths: list[str]
) -> None:
    api = make_api(limits={"max_archiveinfo_paths": 2})
    response = api.post("/api/v1/archiveinfo", json={"paths": library_paths[:3]})
    assert response.status_code == 200
    answer = response.json()
    assert [e.get("locality") for e in answer[:2]] == ["TAPE", "TAPE"]
    assert "limit of 2 paths" in answer[2]["error"]


def test_small_status_documents_are_always_fresh(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    request_id = stage(api, library_paths[:2])
    assert api.get(f"/api/v1/stage/{request_id}").json()["files"][0]["state"] == "SUBMITTED"
    _mark_staged(session_factory, library_paths[:1])
    assert api.get(f"/api/v1/stage/{request_id}").json()["files"][0]["state"] == "COMPLETED"


def test_a_cached_status_is_dropped_by_a_cancel(
    make_api: Callable[..., SyncApi], library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    api = make_api(status_cache_s=3600, status_cache_min_files=1)
    request_id = stage(api, library_paths[:2])
    first = api.get(f"/api/v1/stage/{request_id}").json()
    _mark_staged(session_factory, library_paths[:1])  # the scheduler's progress shows up only later
    assert api.get(f"/api/v1/stage/{request_id}").json() == first
    assert (
        api.post(f"/api/v1/stage/{request_id}/cancel", json={"paths": [library_paths[1]]}).status_code == 200
    )
    states = [f["state"] for f in api.get(f"/api/v1/stage/{request_id}").json()["files"]]
    assert states == ["COMPLETED", "CANCELLED"]
    assert api.delete(f"/api/v1/stage/{request_id}").status_code == 200
    assert_problem(api.get(f"/api/v1/stage/{request_id}"), 404)


def test_every_route_takes_a_trailing_slash(api: SyncApi, library_paths: list[str]) -> None:
    request_id = stage(api, library_paths[:3])
    body = {"paths": [library_paths[0]]}
    assert api.get(f"/api/v1/stage/{request_id}/").json()["id"] == request_id
    assert api.post(f"/api/v1/stage/{request_id}/cancel/", json=body).status_code == 200
    assert api.post(f"/api/v1/release/{request_id}/", json=body).status_code == 200
    states = [f["state"] for f in api.get(f"/api/v1/stage/{request_id}").json()["files"]]
    assert states == ["CANCELLED", "SUBMITTED", "SUBMITTED"]
    assert api.delete(f"/api/v1/stage/{request_id}/").status_code == 200
    assert_problem(api.get(f"/api/v1/stage/{request_id}"), 404)


def _mark_in_flight(session_factory: sessionmaker[Session], path: str, clock: ManualClock) -> None:
    """What a cycle leaves behind once the library took the file."""
    with session_factory() as session, session.begin():
        session.execute(
            update(QueuedFileRow)
            .where(QueuedFileRow.path == path)
            .values(state=FileState.SUBMITTED.value, claimed_at=clock.now(), submitted_at=clock.now())
        )


def test_a_started_file_keeps_its_started_at_once_cancelled_and_queued_again(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session], clock: ManualClock
) -> None:
    path = library_paths[0]
    request_id = stage(api, [path])
    clock.advance(60)
    started = int(clock.now().timestamp())
    _mark_in_flight(session_factory, path, clock)
    assert api.get(f"/api/v1/stage/{request_id}").json()["files"][0]["startedAt"] == started
    clock.advance(60)
    assert api.post(f"/api/v1/stage/{request_id}/cancel", json={"paths": [path]}).status_code == 200
    [cancelled] = api.get(f"/api/v1/stage/{request_id}").json()["files"]
    assert cancelled == {
        "path": path,
        "state": "CANCELLED",
        "startedAt": started,
        "finishedAt": started + 60,
    }
    # The library stops the read; a later request queues the file anew: the first answer stays as it was.
    with session_factory() as session, session.begin():
        session.execute(
            update(QueuedFileRow)
            .where(QueuedFileRow.path == path)
            .values(state=FileState.CANCELLED.value, finished_at=clock.now())
        )
    clock.advance(60)
    stage(api, [path])
    assert api.get(f"/api/v1/stage/{request_id}").json()["files"] == [cancelled]


def test_a_completed_file_keeps_its_started_at_when_queued_again(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session], clock: ManualClock
) -> None:
    path = library_paths[0]
    request_id = stage(api, [path])
    clock.advance(60)
    _mark_in_flight(session_factory, path, clock)
    started = int(clock.now().timestamp())
    clock.advance(60)
    with session_factory() as session, session.begin():
        file_id = session.scalars(select(QueuedFileRow.id).where(QueuedFileRow.path == path)).one()
        assert finish_file(session, file_id, STAGE, clock.now())  # the completion step's own write
    [completed] = api.get(f"/api/v1/stage/{request_id}").json()["files"]
    assert completed["state"] == "COMPLETED" and completed["startedAt"] == started
    assert api.post(f"/api/v1/release/{request_id}", json={"paths": [path]}).status_code == 200
    clock.advance(60)
    stage(api, [path])  # released, so queued anew
    assert api.get(f"/api/v1/stage/{request_id}").json()["files"] == [completed]


def _activity(session_factory: sessionmaker[Session], request_id: str) -> str:
    with session_factory() as session:
        request = session.get(StageRequest, request_id)
        assert request is not None
        return request.activity


def test_the_activity_comes_from_the_targeted_metadata_for_this_site(
    make_api: Callable[..., SyncApi], library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    api = make_api(site_name="BNL-TAPE")
    ours = {"BNL-TAPE": {"activity": "Data Consolidation", "priority": 3}, "CERN": {"activity": "Other"}}
    body = {
        "files": [
            {"path": library_paths[0]},
            {"path": library_paths[1], "targetedMetadata": ours},
            {"path": library_paths[2], "targetedMetadata": ours},
        ]
    }
    response = api.post("/api/v1/stage", json=body)
    assert response.status_code == 201, response.text
    assert _activity(session_factory, response.json()["requestId"]) == "Data Consolidation"
    foreign = {"files": [{"path": library_paths[3], "targetedMetadata": {"CERN": {"activity": "Other"}}}]}
    assert (
        _activity(session_factory, api.post("/api/v1/stage", json=foreign).json()["requestId"]) == "default"
    )


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"BNL-TAPE": {"activity": 7}}, "files[1].targetedMetadata.BNL-TAPE.activity"),
        ({"BNL-TAPE": {"activity": "x\u0000y"}}, "files[1].targetedMetadata.BNL-TAPE.activity"),
        ({"BNL-TAPE": {"activity": "a" * 129}}, "files[1].targetedMetadata.BNL-TAPE.activity"),
        ({"BNL-TAPE": {"activity": " lead"}}, "files[1].targetedMetadata.BNL-TAPE.activity"),
        ({"BNL-TAPE": {"activity": "Other"}}, "files[1].targetedMetadata.BNL-TAPE.activity"),  # disagrees
        ({"BNL-TAPE": "Staging"}, "files[1].targetedMetadata.BNL-TAPE"),
    ],
    ids=["number", "control", "long", "leading-space", "two-activities", "not-an-object"],
)
def test_a_bad_activity_in_the_metadata_is_a_400_naming_it(
    make_api: Callable[..., SyncApi],
    library_paths: list[str],
    row_counts: Callable[[], RowCounts],
    metadata: dict[str, object],
    field: str,
) -> None:
    api = make_api(site_name="BNL-TAPE")
    before = row_counts()
    first = {"path": library_paths[0], "targetedMetadata": {"BNL-TAPE": {"activity": "Staging"}}}
    body = {"files": [first, {"path": library_paths[1], "targetedMetadata": metadata}]}
    assert_problem(api.post("/api/v1/stage", json=body), 400, field=field)
    assert row_counts() == before

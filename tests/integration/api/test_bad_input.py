"""Every refused request answers 4xx problem+json naming the problem, and writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.api.conftest import RowCounts, SyncApi, assert_problem, stage

STAGE = "/api/v1/stage"
NATIVE = "/api/native/v1/requests"


@pytest.mark.parametrize(
    ("url", "body", "status", "field", "says"),
    [
        (STAGE, b"{not json", 400, "body", "not valid JSON"),
        (STAGE, b"", 400, "body", "required"),
        (STAGE, b"[]", 400, "body", ""),
        (STAGE, b'"files"', 400, "body", ""),
        (STAGE, b"{}", 400, "files", "Field required"),
        (STAGE, b'{"files": "/a"}', 400, "files", "list"),
        (STAGE, b'{"files": [{"path": 7}]}', 400, "files[0].path", "string"),
        (STAGE, b'{"files": [{"name": "/a"}]}', 400, "files[0].path", "required"),
        (STAGE, b'{"files": []}', 400, "files", "at least one"),
        (STAGE, b'{"files": [{"path": "/ok"}, {"path": "/a/../b"}]}', 400, "files[1].path", "'..'"),
        (STAGE, b'{"files": [{"path": "/a\\u0000b"}]}', 400, "files[0].path", "NUL"),
        (STAGE, b'{"files": [{"path": "/a\\u0007b"}]}', 400, "files[0].path", "control character"),
        (STAGE, b'{"files": [{"path": "relative"}]}', 400, "files[0].path", "not absolute"),
        (STAGE, b'{"files": [{"path": "/\\udc80"}]}', 400, "files[0].path", "Unicode"),
        (NATIVE, b'{"paths": ["/a"], "priority": "high"}', 400, "priority", "integer"),
        (NATIVE, b'{"paths": ["/a"], "priority": 5000}', 400, "priority", "less than or equal"),
        (NATIVE, b'{"paths": ["/a"], "group": "bad group!"}', 400, "group", "pattern"),
        (NATIVE, b'{"paths": []}', 400, "paths", "at least one"),
        (NATIVE, b'{"paths": ["/a", "//x/./../y"]}', 400, "paths[1]", "'..'"),
    ],
)
def test_refused_and_nothing_written(
    api: SyncApi,
    row_counts: Callable[[], RowCounts],
    url: str,
    body: bytes,
    status: int,
    field: str,
    says: str,
) -> None:
    response = api.post(url, content=body, headers={"Content-Type": "application/json"})
    assert_problem(response, status, field=field, says=says)
    assert row_counts() == RowCounts(0, 0, 0)


def test_too_many_files(make_api: Callable[..., SyncApi], row_counts: Callable[[], RowCounts]) -> None:
    api = make_api(limits={"max_files_per_request_tape_rest": 3})
    files = [{"path": f"/f/{n}"} for n in range(4)]
    assert_problem(api.post(STAGE, json={"files": files}), 413, field="files", says="limit is 3")
    assert row_counts() == RowCounts(0, 0, 0)


def test_path_over_the_length_limit(api: SyncApi, row_counts: Callable[[], RowCounts]) -> None:
    response = api.post(STAGE, json={"files": [{"path": "/" + "p" * 5000}]})
    assert_problem(response, 400, field="files[0].path", says="longer than 4096 bytes")
    assert row_counts() == RowCounts(0, 0, 0)


def test_body_over_the_limit_is_refused_before_it_is_read(
    make_api: Callable[..., SyncApi], row_counts: Callable[[], RowCounts]
) -> None:
    api = make_api(limits={"max_body_bytes": 1000})
    body = json.dumps({"files": [{"path": f"/f/{n:04d}"} for n in range(100)]}).encode()
    assert len(body) > 1000
    response = api.post(STAGE, content=body, headers={"Content-Type": "application/json"})
    assert_problem(response, 413, says="limit of 1000 bytes")

    async def chunks() -> Any:  # no Content-Length: counted as it arrives
        for start in range(0, len(body), 100):
            yield body[start : start + 100]

    response = api.post(STAGE, content=chunks(), headers={"Content-Type": "application/json"})
    assert_problem(response, 413, says="limit of 1000 bytes")
    # Unknown routes get the same answer rather than reading a big body.
    assert_problem(api.post("/nowhere", content=body), 413)
    assert row_counts() == RowCounts(0, 0, 0)


def test_json_without_content_type_is_understood(api: SyncApi, library_paths: list[str]) -> None:
    body = json.dumps({"files": [{"path": library_paths[0]}]}).encode()
    assert api.post(STAGE, content=body).status_code == 201


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain; charset=utf-8"])
def test_json_sent_as_another_type_is_told_what_to_send(
    api: SyncApi, library_paths: list[str], row_counts: Callable[[], RowCounts], content_type: str
) -> None:
    """What `curl -d` does: the JSON goes as a form. The answer names the header to send, not a field."""
    body = json.dumps({"files": [{"path": library_paths[0]}]}).encode()
    answer = api.post(STAGE, content=body, headers={"Content-Type": content_type})
    assert_problem(answer, 415, field="body", says="Content-Type: application/json")
    assert content_type.split(";", maxsplit=1)[0] in answer.json()["detail"]
    assert row_counts() == RowCounts(0, 0, 0)


@pytest.mark.parametrize("request_id", ["no-such-id", "x" * 300, "%00"])
def test_unknown_request_ids(api: SyncApi, request_id: str) -> None:
    assert_problem(api.get(f"{STAGE}/{request_id}"), 404, field="id")
    assert_problem(api.delete(f"{STAGE}/{request_id}"), 404)
    assert_problem(api.post(f"{STAGE}/{request_id}/cancel", json={"paths": ["/a"]}), 404)
    assert_problem(api.get(f"{NATIVE}/{request_id}"), 404)


def test_cancel_and_release_bodies(api: SyncApi, library_paths: list[str]) -> None:
    request_id = stage(api, library_paths[:1])
    assert_problem(api.post(f"{STAGE}/{request_id}/cancel", json={"paths": []}), 400, field="paths")
    assert_problem(api.post(f"{STAGE}/{request_id}/cancel", json={}), 400, field="paths")
    assert_problem(
        api.post(f"{STAGE}/{request_id}/cancel", json={"paths": ["/a/../b"]}), 400, field="paths[0]"
    )
    assert_problem(api.post("/api/v1/release/whatever", json={"paths": [3]}), 400, field="paths[0]")
    assert_problem(api.post("/api/v1/archiveinfo", json={"paths": "nope"}), 400, field="paths")


def test_routes_and_methods(api: SyncApi) -> None:
    assert_problem(api.get("/api/v2/stage"), 404, says="/api/v2/stage")
    response = api.request("PUT", STAGE)
    assert_problem(response, 405, says="PUT")
    assert "POST" in response.headers["allow"]


def test_anonymous_calls_can_be_refused(make_api: Callable[..., SyncApi]) -> None:
    api = make_api(anonymous=False)
    response = api.post(STAGE, json={"files": [{"path": "/a"}]})
    assert_problem(response, 401, says="anonymous")
    # RFC 6750: no credentials sent, so the challenge names no error
    assert response.headers["www-authenticate"] == 'Bearer realm="carousel"'
    assert api.get("/.well-known/wlcg-tape-rest-api").status_code == 200  # discovery stays open

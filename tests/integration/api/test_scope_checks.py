"""CTA's Tape REST checks, as its curl scripts run them: one request staged by its owner, then archive info,
status, release, cancel and delete with tokens of each scope (none, `storage.stage:/`, `storage.poll:/`,
`storage.stage:<dir>/`), over real HTTP (uvicorn on loopback). The table they check is docs/security.md,
"Which scope allows which call"."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from carousel.config.auth import AuthSettings
from carousel.domain.clock import ManualClock
from tests.integration.api.conftest import SyncApi, assert_problem
from tests.integration.live_server import serving
from tests.tokens import Issuer

API = "/api/v1"
FORBIDDEN_PATH = "forbidden: no storage.* scope of the credential covers this path"


def dataset(path: str) -> str:
    """/star/<dataset>/<tape>/<n>.root -> /star/<dataset>"""
    return posixpath.dirname(posixpath.dirname(path))


@dataclass
class Site:
    url: str
    issuer: Issuer
    clock: ManualClock
    inside: list[str]  # files of one directory
    outside: list[str]  # files of another

    @property
    def directory(self) -> str:
        return dataset(self.inside[0]) + "/"

    def call(self, method: str, url: str, scope: str | None, **kwargs: Any) -> httpx.Response:
        headers = {}
        if scope is not None:
            headers["Authorization"] = "Bearer " + self.issuer.mint(self.clock.now(), sub="cta", scope=scope)
        return httpx.request(method, self.url + url, headers=headers, timeout=30, **kwargs)

    def stage(self, paths: list[str]) -> str:
        response = self.call(
            "POST", f"{API}/stage", "storage.stage:/", json={"files": [{"path": p} for p in paths]}
        )
        assert response.status_code == 201, response.text
        request_id: str = response.json()["requestId"]
        return request_id


@pytest.fixture
def site(
    make_app: Callable[..., FastAPI], clock: ManualClock, library_paths: list[str], tmp_path: Path
) -> Iterator[Site]:
    issuer = Issuer()
    auth = AuthSettings(issuers=(issuer.settings(issuer.write_pem(tmp_path)),))
    directories = sorted({dataset(p) for p in library_paths})
    inside = [p for p in library_paths if dataset(p) == directories[0]][:3]
    outside = [p for p in library_paths if dataset(p) == directories[1]][:2]
    assert len(inside) == 3 and len(outside) == 2
    with serving(make_app(anonymous=False, auth=auth)) as url:
        yield Site(url, issuer, clock, inside, outside)


def test_without_a_token_every_call_is_401(site: Site) -> None:
    request_id = site.stage(site.inside[:1])
    body = {"paths": site.inside[:1]}
    for method, url, kwargs in (
        ("POST", f"{API}/archiveinfo", {"json": body}),
        ("GET", f"{API}/stage/{request_id}", {}),
        ("POST", f"{API}/release/{request_id}", {"json": body}),
        ("POST", f"{API}/stage/{request_id}/cancel", {"json": body}),
        ("DELETE", f"{API}/stage/{request_id}", {}),
    ):
        assert_problem(site.call(method, url, None, **kwargs), 401)


@pytest.mark.parametrize("scope", ["storage.stage:/", "storage.poll:/"])
def test_a_token_for_everything_sees_every_file(site: Site, scope: str) -> None:
    paths = site.inside[:1] + site.outside[:1]
    request_id = site.stage(paths)
    info = site.call("POST", f"{API}/archiveinfo", scope, json={"paths": paths})
    assert info.status_code == 200
    assert [entry.get("locality") for entry in info.json()] == ["TAPE", "TAPE"]
    status = site.call("GET", f"{API}/stage/{request_id}", scope)
    assert status.status_code == 200
    assert [(f["path"], f["state"]) for f in status.json()["files"]] == [(p, "SUBMITTED") for p in paths]


def test_a_stage_token_for_everything_may_release_cancel_and_delete(site: Site) -> None:
    scope = "storage.stage:/"
    paths = site.inside[:1] + site.outside[:2]
    request_id = site.stage(paths)
    assert (
        site.call("POST", f"{API}/release/{request_id}", scope, json={"paths": paths[:1]}).status_code == 200
    )
    assert (
        site.call("POST", f"{API}/stage/{request_id}/cancel", scope, json={"paths": paths[1:2]}).status_code
        == 200
    )
    files = site.call("GET", f"{API}/stage/{request_id}", scope).json()["files"]
    assert [f["state"] for f in files] == ["SUBMITTED", "CANCELLED", "SUBMITTED"]
    assert site.call("DELETE", f"{API}/stage/{request_id}", scope).status_code == 200
    assert_problem(site.call("GET", f"{API}/stage/{request_id}", scope), 404)


def test_a_poll_token_may_ask_but_not_release_cancel_or_delete(site: Site) -> None:
    request_id = site.stage(site.inside[:2])
    body = {"paths": site.inside[:1]}
    scope = "storage.poll:/"
    for response in (
        site.call("POST", f"{API}/release/{request_id}", scope, json=body),
        site.call("POST", f"{API}/stage/{request_id}/cancel", scope, json=body),
        site.call("DELETE", f"{API}/stage/{request_id}", scope),
    ):
        assert_problem(response, 403, says="storage.stage")
    stage_scope = site.call("GET", f"{API}/stage/{request_id}", "storage.stage:/").json()
    assert [f["state"] for f in stage_scope["files"]] == ["SUBMITTED", "SUBMITTED"]  # nothing changed


def test_a_directory_token_is_held_to_its_directory_on_every_call(site: Site) -> None:
    scope = f"storage.stage:{site.directory}"
    mine, theirs = site.inside[:2], site.outside[:1]
    request_id = site.stage(mine + theirs)

    info = site.call("POST", f"{API}/archiveinfo", scope, json={"paths": [mine[0], theirs[0]]}).json()
    assert info == [{"path": mine[0], "locality": "TAPE"}, {"path": theirs[0], "error": FORBIDDEN_PATH}]

    status = site.call("GET", f"{API}/stage/{request_id}", scope)
    assert status.status_code == 200
    assert status.json()["files"] == [
        {"path": mine[0], "state": "SUBMITTED"},
        {"path": mine[1], "state": "SUBMITTED"},
        {"path": theirs[0], "error": FORBIDDEN_PATH},
    ]

    outside = {"paths": theirs}
    assert_problem(
        site.call("POST", f"{API}/stage/{request_id}/cancel", scope, json=outside), 403, field="paths"
    )
    assert_problem(site.call("POST", f"{API}/release/{request_id}", scope, json=outside), 403, field="paths")
    assert_problem(site.call("DELETE", f"{API}/stage/{request_id}", scope), 403, says=theirs[0])

    assert (
        site.call("POST", f"{API}/stage/{request_id}/cancel", scope, json={"paths": mine[:1]}).status_code
        == 200
    )
    assert (
        site.call("POST", f"{API}/release/{request_id}", scope, json={"paths": mine[1:]}).status_code == 200
    )
    everything = site.call("GET", f"{API}/stage/{request_id}", "storage.stage:/").json()["files"]
    assert [f["state"] for f in everything] == ["CANCELLED", "SUBMITTED", "SUBMITTED"]

    inside_only = site.stage(mine)
    assert site.call("DELETE", f"{API}/stage/{inside_only}", scope).status_code == 200
    assert_problem(site.call("GET", f"{API}/stage/{inside_only}", "storage.stage:/"), 404)


def test_two_tokens_of_one_subject_never_share_a_cached_status(
    make_api: Callable[..., SyncApi], clock: ManualClock, library_paths: list[str], tmp_path: Path
) -> None:
    # A status cache keyed by the caller alone would answer the directory token with the full document.
    issuer = Issuer()
    auth = AuthSettings(issuers=(issuer.settings(issuer.write_pem(tmp_path)),))
    api = make_api(anonymous=False, auth=auth, status_cache_s=3600, status_cache_min_files=1)
    directory = dataset(library_paths[0]) + "/"
    outside = next(p for p in library_paths if not p.startswith(directory))

    def headers(scope: str) -> dict[str, str]:
        return {"Authorization": "Bearer " + issuer.mint(clock.now(), sub="cta", scope=scope)}

    staged = api.post(
        f"{API}/stage",
        json={"files": [{"path": library_paths[0]}, {"path": outside}]},
        headers=headers("storage.stage:/"),
    )
    request_id = staged.json()["requestId"]
    full = api.get(f"{API}/stage/{request_id}", headers=headers("storage.poll:/")).json()["files"]
    narrow = api.get(f"{API}/stage/{request_id}", headers=headers(f"storage.poll:{directory}")).json()[
        "files"
    ]
    assert full[1] == {"path": outside, "state": "SUBMITTED"}
    assert narrow[1] == {"path": outside, "error": FORBIDDEN_PATH}
    assert api.get(f"{API}/stage/{request_id}", headers=headers("storage.poll:/")).json()["files"] == full


def test_the_native_file_pages_are_held_to_the_poll_scopes_too(site: Site) -> None:
    scope = f"storage.poll:{site.directory}"
    mine, theirs = site.inside[0], site.outside[0]
    request_id = site.stage([mine, theirs])
    files = site.call("GET", f"/api/native/v1/requests/{request_id}/files", scope).json()["files"]
    assert [(f["path"], f["state"], f["error"]) for f in files] == [
        (mine, "SUBMITTED", None),
        (theirs, None, FORBIDDEN_PATH),
    ]
    url = f"/api/native/v1/requests/{request_id}/files?state=SUBMITTED"
    assert [f["path"] for f in site.call("GET", url, scope).json()["files"]] == [mine]
    everything = site.call("GET", url, "storage.poll:/").json()["files"]
    assert [f["path"] for f in everything] == [mine, theirs]

"""What a site of two simulated libraries tells users of files it cannot place, through the API, on
PostgreSQL and SQLite: a path on tape in no library that answered while a library could not say (it is
offline) waits, its words naming each library with what it said, at submit and at each cycle's lookup
again; once every library answers it fails naming each (`in no library …`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from carousel.cli.outlook import outlook_lines
from carousel.config.auth import AuthSettings
from carousel.domain.clock import ManualClock
from hsm_adapters.site import Site
from tests.integration.api.conftest import SyncApi
from tests.integration.api.test_auth import Bearer
from tests.integration.api.test_site_media import build_site, files, site_cycle, step
from tests.tokens import static_token

NATIVE = "/api/native/v1"
TAPE_REST = "/api/v1"
OLD_OFFLINE = {"old": {"offline_windows": [{"start_s": 0.0, "end_s": 60.0}]}}


@pytest.fixture
def library(clock: ManualClock, tmp_path: Path, session_factory: sessionmaker[Session]) -> Iterator[Site]:
    """The site the API asks: `new` (LTO-9) and `old` (LTO-7, offline for its first minute)."""
    site = build_site(clock, tmp_path, session_factory, OLD_OFFLINE)
    yield site
    site.close()


@pytest.fixture
def admin(make_api: Callable[..., SyncApi]) -> Bearer:
    token, entry = static_token("ops", admin=True)
    return Bearer(make_api(anonymous=False, auth=AuthSettings(static_tokens=(entry,)), policy="fifo"), token)


def _get(admin: Bearer, url: str) -> Any:
    response = admin.api.request("GET", url, headers=admin.headers)
    assert response.status_code == 200, response.text
    return response.json()


NOT_FOUND_YET = "not found yet: new: not in the library; old: the library is offline"


def test_a_library_that_cannot_say_is_named_with_what_it_said(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    response = admin.api.request(
        "POST", f"{NATIVE}/requests", json={"paths": ["/nowhere", "/new/a"]}, headers=admin.headers
    )
    assert response.status_code == 201, response.text
    request_id = response.json()["id"]
    assert files(session_factory)["/nowhere"] == ("UNRESOLVED", "default", None, NOT_FOUND_YET)

    outlook = _get(admin, f"{NATIVE}/requests/{request_id}")["outlook"]
    unknown = [w for w in outlook["waiting"] if w["code"] == "tape_unknown"]
    assert unknown == [{"code": "tape_unknown", "files": 1, "reason": NOT_FOUND_YET, "library": None}]
    assert f"waiting: 1 files tape_unknown: {NOT_FOUND_YET}" in outlook_lines(outlook)  # `carousel status`

    cycle = site_cycle(session_factory, library, clock)
    cycle.run_once()  # old still offline: the cycle's lookup again says the same
    assert files(session_factory)["/nowhere"][::3] == ("UNRESOLVED", NOT_FOUND_YET)

    clock.advance(60)  # old is back: the path is in neither, and fails naming both
    step(cycle, clock, lambda: files(session_factory)["/nowhere"][0] == "FAILED")
    status = _get(admin, f"{TAPE_REST}/stage/{request_id}")
    failed = {f["path"]: f.get("error") for f in status["files"]}
    assert failed["/nowhere"] == "in no library (new, old): not in the library"

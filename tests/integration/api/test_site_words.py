"""What a site of two simulated libraries tells users of files it cannot place, through the API, on
PostgreSQL and SQLite: a path on tape in no library that answered while a library could not say (it is
offline) waits, its words naming each library with what it said, at submit and at each cycle's lookup
again; once every library answers it fails naming each (`in no library …`). A file of a library an admin
took out of the settings waits, named so in its request's outlook and `carousel status`, out of the
estimate, read by no cycle until the library is named again."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from carousel.cli.outlook import outlook_lines
from carousel.domain.clock import ManualClock
from carousel.domain.libraries import not_in_settings_words
from carousel.outlook.request_outlook import absent_libraries_note
from hsm_adapters.site import Site
from tests.integration.api.conftest import Bearer
from tests.integration.api.test_site_media import faults, files, library, site_cycle, step  # noqa: F401 - fixtures

NATIVE = "/api/native/v1"
TAPE_REST = "/api/v1"
OLD_OFFLINE = {"old": {"offline_windows": [{"start_s": 0.0, "end_s": 60.0}]}}


def _submit(admin: Bearer, paths: list[str]) -> str:
    response = admin.api.request("POST", f"{NATIVE}/requests", json={"paths": paths}, headers=admin.headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _get(admin: Bearer, url: str) -> Any:
    response = admin.api.request("GET", url, headers=admin.headers)
    assert response.status_code == 200, response.text
    return response.json()


NOT_FOUND_YET = "not found yet: new: not in the library; old: the library is offline"


@pytest.mark.parametrize("faults", [OLD_OFFLINE])
def test_a_library_that_cannot_say_is_named_with_what_it_said(
    admin: Bearer,
    library: Site,  # noqa: F811 - test_site_media's fixture
    clock: ManualClock,
    session_factory: sessionmaker[Session],
) -> None:
    request_id = _submit(admin, ["/nowhere", "/new/a"])
    assert files(session_factory)["/nowhere"] == ("UNRESOLVED", "default", None, NOT_FOUND_YET)

    outlook = _get(admin, f"{NATIVE}/requests/{request_id}")["outlook"]
    unknown = [w for w in outlook["waiting"] if w["code"] == "tape_unknown"]
    assert unknown == [{"code": "tape_unknown", "files": 1, "reason": NOT_FOUND_YET, "library": None}]
    assert f"waiting: 1 file tape_unknown: {NOT_FOUND_YET}" in outlook_lines(outlook)  # `carousel status`

    cycle = site_cycle(session_factory, library, clock)
    cycle.run_once()  # old still offline: the cycle's lookup again says the same
    assert files(session_factory)["/nowhere"][::3] == ("UNRESOLVED", NOT_FOUND_YET)

    clock.advance(60)  # old is back: the path is in neither, and fails naming both
    step(cycle, clock, lambda: files(session_factory)["/nowhere"][0] == "FAILED")
    status = _get(admin, f"{TAPE_REST}/stage/{request_id}")
    failed = {f["path"]: f.get("error") for f in status["files"]}
    assert failed["/nowhere"] == "in no library (new, old): not in the library"


def test_a_file_of_a_library_no_longer_named_waits_for_it_saying_so(
    admin: Bearer,
    library: Site,  # noqa: F811 - test_site_media's fixture
    clock: ManualClock,
    session_factory: sessionmaker[Session],
) -> None:
    request_id = _submit(admin, ["/new/a", "/old/b"])
    only_old = _submit(admin, ["/old/b"])
    old = library.libraries.pop("old")  # an admin takes `old` out of the settings: the site is `new` alone
    clock.advance(1)  # a read asks for a fresh projection

    outlook = _get(admin, f"{NATIVE}/requests/{request_id}")["outlook"]
    words = not_in_settings_words("old")
    assert words.startswith("its library old is not in this service's settings: nothing reads it")
    assert outlook["waiting"] == [
        {"code": "library_not_in_settings", "files": 1, "reason": words, "library": "old"}
    ]
    assert outlook["unplanned"] == 1 and outlook["site_libraries"] == 1
    # /new/a alone is projected, on new's T1 (old's T1 is another tape, which no cycle of this site reads)
    assert [(e["library"], e["next_cycle"]) for e in outlook["libraries"]] == [("new", 1)]
    assert outlook["eta"] is not None
    # `carousel status` names no library on a site of one: the words do
    assert f"waiting: 1 file library_not_in_settings: {words}" in outlook_lines(outlook)

    # a request of `old`'s files alone: not placed, and not "yet" (nothing places them by itself)
    outlook = _get(admin, f"{NATIVE}/requests/{only_old}")["outlook"]
    assert outlook["position"] is None and outlook["eta"] is None
    assert outlook["note"] == absent_libraries_note(["old"])
    lines = outlook_lines(outlook)
    assert lines[0] == "position: none while its library old is not in this service's settings"
    assert not any("yet" in line for line in lines if not line.startswith("waiting"))

    # archive info says the same of it, where the site alone would say it is in no library; a path in no
    # library at all keeps the library's own words
    response = admin.post(f"{TAPE_REST}/archiveinfo", json={"paths": ["/old/b", "/nowhere"]})
    assert response.status_code == 200, response.text
    assert response.json() == [
        {"path": "/old/b", "error": words},
        {"path": "/nowhere", "error": "not in the library"},
    ]

    cycle = site_cycle(session_factory, library, clock)  # the site's cycle: `new` alone
    step(cycle, clock, lambda: files(session_factory)["/new/a"][0] == "STAGED")
    for _ in range(5):
        cycle.run_once()
        clock.advance(60)
    assert files(session_factory)["/old/b"][:3] == ("QUEUED", "old", "T1")  # as the words say

    library.libraries["old"] = old  # named again: its cycle reads it
    step(
        site_cycle(session_factory, library, clock),
        clock,
        lambda: files(session_factory)["/old/b"][0] == "STAGED",
    )

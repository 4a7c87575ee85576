"""A site of two libraries through the API, on PostgreSQL and SQLite: staging records each file's library
(a path with copies in both: the one served soonest; the same tape ID in both stays two tapes; a path in
neither fails as not on tape); a report of one library holds its history only, and an unknown library is
refused naming the parameter; the history replay, which runs one library, is refused (409)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.config.auth import AuthSettings
from carousel.db.engine import transaction
from carousel.db.models import Mount, QueuedFileRow
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.site import Site
from tests.integration.api.conftest import Bearer, SyncApi, assert_problem
from tests.tokens import static_token

GB = 10**9


@pytest.fixture
def library(clock: ManualClock, tmp_path: Path) -> Iterator[Site]:
    """The site the API asks (the conftest's `library`, overridden): LTO-9 × 8 and LTO-7 × 4, both with a
    tape T1; /both/x on each, mid-tape (LTO-9 serves it sooner)."""
    rows = {
        "new": [f"/new/a,{GB},T1,0", f"/both/x,{GB},T1,{GB}"],
        "old": [f"/old/b,{GB},T1,0", f"/both/x,{GB},T1,{GB}"],
    }
    adapters = {}
    for name, profile, drives in (("new", "lto9", 8), ("old", "lto7", 4)):
        catalogue = tmp_path / f"{name}.csv"
        catalogue.write_text("path,size_bytes,tape,position_bytes\n" + "".join(f"{r}\n" for r in rows[name]))
        options = {"profile": profile, "drives": drives, "catalogue": str(catalogue)}
        adapters[name] = build_simulated_adapter(options, clock)
    site = Site(adapters)
    yield site
    site.close()


def test_each_file_records_the_library_of_the_copy_chosen(
    api: SyncApi, session_factory: sessionmaker[Session]
) -> None:
    paths = ["/new/a", "/old/b", "/both/x", "/nowhere"]
    response = api.post("/api/v1/stage", json={"files": [{"path": p} for p in paths]})
    assert response.status_code == 201, response.text
    with session_factory() as session:
        rows = session.execute(
            select(QueuedFileRow.path, QueuedFileRow.state, QueuedFileRow.library, QueuedFileRow.tape)
        )
        found = {path: (state, library, tape) for path, state, library, tape in rows}
    assert found["/new/a"] == ("QUEUED", "new", "T1")
    assert found["/old/b"] == ("QUEUED", "old", "T1")
    assert found["/both/x"] == ("QUEUED", "new", "T1")
    assert found["/nowhere"][0] == "FAILED"


SITE_SETTINGS = {"libraries": {"new": {"adapter_options": {"profile": "lto9"}}, "old": {}}}


def test_a_report_of_one_library_holds_its_mounts_only(
    make_api: Callable[..., SyncApi], session_factory: sessionmaker[Session], clock: ManualClock
) -> None:
    api = make_api(**SITE_SETTINGS)
    start = clock.now()
    with transaction(session_factory) as session:
        for library, minutes in (("new", 1), ("old", 2)):  # the same tape ID and drive name in both
            session.add(
                Mount(
                    tape="T1",
                    library=library,
                    drive="d1",
                    mounted_at=start + timedelta(minutes=minutes),
                    unmounted_at=start + timedelta(minutes=minutes + 10),
                )
            )
    window = {"since": start.isoformat(), "until": (start + timedelta(hours=1)).isoformat()}

    def mounts(**query: str) -> list[str]:
        response = api.get("/api/reports/mounts", params={**window, **query})
        assert response.status_code == 200, response.text
        return [row["mounted_at"] for row in response.json()["rows"]]

    assert len(mounts()) == 2  # the site's
    assert mounts(library="new") == [(start + timedelta(minutes=1)).isoformat().replace("+00:00", "Z")]
    assert len(mounts(library="old")) == 1


def test_an_unknown_library_is_refused_naming_the_parameter(make_api: Callable[..., SyncApi]) -> None:
    api = make_api(**SITE_SETTINGS)
    response = api.get("/api/reports/mounts", params={"library": "nope"})
    assert_problem(
        response, 400, field="library", says="'nope' is not a library of this site (its libraries: new, old)"
    )


def test_the_history_replay_of_a_site_of_several_libraries_is_refused(
    make_api: Callable[..., SyncApi],
) -> None:
    # not the shared `admin`: this API serves the site of two libraries, not the one simulated library
    token, entry = static_token("ops", admin=True)
    api = make_api(**SITE_SETTINGS, anonymous=False, auth=AuthSettings(static_tokens=(entry,)))
    response = Bearer(api, token).post("/api/admin/v1/policy/replay", json={"hours": 1})
    assert_problem(response, 409, says="the history replay runs one library, and this site has 2 (new, old)")


def test_the_dashboard_shows_each_library_beside_the_site(api: SyncApi, library: Site) -> None:
    page = api.get("/dashboard")
    assert page.status_code == 200, page.text
    assert 'id="library-health">library ONLINE<' in page.text
    assert 'id="library-health-new">new ONLINE · 0 / 8 drives<' in page.text
    assert 'id="library-health-old">old ONLINE · 0 / 4 drives<' in page.text
    library.libraries["new"].close()  # a closed adapter answers nothing: as a library that is down
    page = api.get("/dashboard")
    assert 'id="library-health">library DEGRADED<' in page.text
    assert 'id="library-health-new">new unknown<' in page.text

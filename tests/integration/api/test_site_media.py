"""Tape and drive states on a site of two simulated libraries, through the admin API, on PostgreSQL and
SQLite, with the site cycle stepped in virtual time: a tape is (library, tape) and a drive (library, drive).
The same tape ID in both libraries: disabling it in one leaves the other's mounted and read. A broken tape's
files with a copy in the other library are read from there; those without fail with the admin's reason. A
path submitted (or looked up again by the cycle) while its soonest copy's tape is broken or disabled is
queued on the other library's copy at once.
Drives named alike in both are taken down separately. Bad input (an unknown library, a name in both without
the library, a tape in no library) is a problem naming the field, and nothing changes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.cli.service import site_of
from carousel.config import Settings
from carousel.db.models import DriveStateRow, MediaAudit, Mount, QueuedFileRow, Recall, TapeStateRow
from carousel.domain.clock import ManualClock
from carousel.scheduler.site_cycle import SiteCycle
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.site import Site
from policies.registry import build_policy
from tests.integration.api.conftest import Bearer, assert_problem

GB = 10**9
ADMIN = "/api/admin/v1"
NATIVE = "/api/native/v1"
# per library: path, tape, position. T1 is in both; /both/x is on new's T2 and old's T5 (new, LTO-9, serves
# it sooner, so it is queued there); /new/only is on new's T2 alone.
CATALOGUES = {
    "new": [("/new/a", "T1", 0), ("/both/x", "T2", GB), ("/new/only", "T2", 3 * GB)],
    "old": [("/old/b", "T1", 0), ("/both/x", "T5", GB)],
}


def build_site(
    clock: ManualClock,
    tmp_path: Path,
    factory: sessionmaker[Session],
    faults: dict[str, dict[str, Any]] | None = None,
) -> Site:
    """LTO-9 × 2 (`new`) and LTO-7 × 2 (`old`), drives drive00 and drive01 in each; `faults` per library.
    Built as the service builds it (its lookup reads the tape states and each library's queued bytes)."""
    adapters = {}
    for name, profile in (("new", "lto9"), ("old", "lto7")):
        catalogue = tmp_path / f"{name}.csv"
        lines = "".join(f"{path},{GB},{tape},{position}\n" for path, tape, position in CATALOGUES[name])
        catalogue.write_text("path,size_bytes,tape,position_bytes\n" + lines)
        options: dict[str, Any] = {"profile": profile, "drives": 2, "catalogue": str(catalogue)}
        if faults and name in faults:
            options["faults"] = faults[name]
        adapters[name] = build_simulated_adapter(options, clock)
    site = site_of(adapters, factory, named=True)
    assert isinstance(site, Site)
    return site


@pytest.fixture
def faults() -> dict[str, dict[str, Any]]:
    return {}


@pytest.fixture
def library(
    clock: ManualClock,
    tmp_path: Path,
    session_factory: sessionmaker[Session],
    faults: dict[str, dict[str, Any]],
) -> Iterator[Site]:
    """The site the API asks (the conftest's `library`, overridden); a test's `faults` parameter gives a
    library a fault plan."""
    site = build_site(clock, tmp_path, session_factory, faults)
    adapters = dict(site.libraries)
    yield site
    for adapter in adapters.values():  # one a test took out of the site too
        adapter.close()


def site_cycle(factory: sessionmaker[Session], site: Site, clock: ManualClock, **extra: Any) -> SiteCycle:
    policies = {name: (lambda: build_policy("fifo")) for name in site.libraries}
    settings = Settings(policy="fifo", **extra)
    return SiteCycle(settings, factory, site.libraries, policies, clock, lookup=site)


def step(cycle: SiteCycle, clock: ManualClock, done: Callable[[], bool], *, max_cycles: int = 300) -> None:
    for _ in range(max_cycles):
        cycle.run_once()
        if done():
            return
        clock.advance(1)
    raise AssertionError(f"not done after {max_cycles} cycles")


def submit(admin: Bearer, paths: list[str]) -> None:
    response = admin.api.request("POST", f"{NATIVE}/requests", json={"paths": paths}, headers=admin.headers)
    assert response.status_code == 201, response.text


def put(admin: Bearer, url: str, body: dict[str, Any], **query: str) -> Any:
    return admin.api.request("PUT", f"{ADMIN}{url}", json=body, params=query, headers=admin.headers)


def files(factory: sessionmaker[Session]) -> dict[str, tuple[str, str, str | None, str | None]]:
    """path -> (state, library, tape, error)."""
    with factory() as session:
        rows = session.execute(
            select(
                QueuedFileRow.path,
                QueuedFileRow.state,
                QueuedFileRow.library,
                QueuedFileRow.tape,
                QueuedFileRow.error,
            )
        )
        return {path: (state, library, tape, error) for path, state, library, tape, error in rows}


def mounts(factory: sessionmaker[Session]) -> set[tuple[str, str]]:
    with factory() as session:
        return {(lib, tape) for lib, tape in session.execute(select(Mount.library, Mount.tape))}


def media_rows(factory: sessionmaker[Session]) -> tuple[int, int, int]:
    with factory() as session:
        return tuple(  # type: ignore[return-value]
            session.scalar(select(func.count()).select_from(t)) or 0
            for t in (TapeStateRow, DriveStateRow, MediaAudit)
        )


def test_the_same_tape_id_disabled_in_one_library_is_read_in_the_other(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    answer = put(admin, "/tapes/T1/state", {"state": "disabled", "reason": "inspection"}, library="new")
    assert answer.status_code == 200, answer.text
    assert answer.json()["tape"]["library"] == "new" and answer.json()["audit"]["library"] == "new"
    submit(admin, ["/new/a", "/old/b"])
    cycle = site_cycle(session_factory, library, clock)
    step(cycle, clock, lambda: files(session_factory)["/old/b"][0] == "STAGED")
    for _ in range(30):  # long after, new's T1 is untouched
        cycle.run_once()
        clock.advance(1)
    assert files(session_factory)["/new/a"][:3] == ("QUEUED", "new", "T1")
    assert mounts(session_factory) == {("old", "T1")}
    listed = admin.get(f"{ADMIN}/tapes").json()["tapes"]
    assert [(t["library"], t["tape"], t["state"]) for t in listed] == [("new", "T1", "disabled")]
    shown = admin.get(f"{ADMIN}/tapes/T1", params={"library": "old"}).json()
    assert (shown["library"], shown["state"], shown["files"]) == ("old", "active", {"STAGED": 1})

    assert (
        put(admin, "/tapes/T1/state", {"state": "active", "reason": "ok"}, library="new").status_code == 200
    )
    step(cycle, clock, lambda: files(session_factory)["/new/a"][0] == "STAGED")
    assert mounts(session_factory) == {("old", "T1"), ("new", "T1")}


def test_a_broken_tapes_files_are_read_from_another_librarys_copy_or_fail_with_the_reason(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    submit(admin, ["/both/x", "/new/only"])
    assert files(session_factory)["/both/x"][:3] == ("QUEUED", "new", "T2")  # the soonest copy
    answer = put(admin, "/tapes/T2/state", {"state": "broken", "reason": "snapped leader"})
    assert answer.status_code == 200, answer.text  # T2 is in one library: `library` may be left out
    assert answer.json()["tape"]["library"] == "new"

    cycle = site_cycle(session_factory, library, clock)
    step(cycle, clock, lambda: files(session_factory)["/both/x"][0] == "STAGED")
    found = files(session_factory)
    assert found["/both/x"][:3] == ("STAGED", "old", "T5")
    # a site of several: the failure names the tape's library
    assert found["/new/only"] == ("FAILED", "new", "T2", "tape T2 of library new is broken: snapped leader")
    assert mounts(session_factory) == {("old", "T5")}
    with session_factory() as session:
        assert set(session.scalars(select(Recall.library))) == {"old"}


@pytest.mark.parametrize("state", ["broken", "disabled"])
def test_a_file_is_queued_at_submit_on_a_copy_whose_tape_is_not_held(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session], state: str
) -> None:
    # new's T2 holds the copy of /both/x served soonest; old's T5 holds the other
    assert put(admin, "/tapes/T2/state", {"state": state, "reason": "snapped"}).status_code == 200
    submit(admin, ["/both/x", "/new/only"])
    found = files(session_factory)
    assert found["/both/x"][:3] == ("QUEUED", "old", "T5")
    assert found["/new/only"][:3] == ("QUEUED", "new", "T2")  # its one copy: queued there, as before

    cycle = site_cycle(session_factory, library, clock)
    report = cycle.run_once()
    assert report.libraries["new"].media is not None and report.libraries["new"].media.moved_files == 0
    step(cycle, clock, lambda: files(session_factory)["/both/x"][0] == "STAGED")
    assert mounts(session_factory) == {("old", "T5")}
    # only a copy on a broken tape: failed by the leader's cycle with the tape's reason; on a disabled one,
    # it waits for the tape
    expected = (
        ("FAILED", "tape T2 of library new is broken: snapped") if state == "broken" else ("QUEUED", None)
    )
    assert (files(session_factory)["/new/only"][0], files(session_factory)["/new/only"][3]) == expected


def test_a_file_whose_every_copy_is_broken_fails_naming_each_library_and_its_reason(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    assert put(admin, "/tapes/T2/state", {"state": "broken", "reason": "dead1"}).status_code == 200
    assert put(admin, "/tapes/T5/state", {"state": "broken", "reason": "dead2"}).status_code == 200
    submit(admin, ["/both/x"])
    assert files(session_factory)["/both/x"][:3] == (
        "QUEUED",
        "new",
        "T2",
    )  # the soonest of two broken copies

    site_cycle(session_factory, library, clock).run_once()

    # its own tape first, then the other library's copy: each library's reason, each library named
    expected = "tape T2 of library new is broken: dead1; tape T5 of library old is broken: dead2"
    assert files(session_factory)["/both/x"] == ("FAILED", "new", "T2", expected)


def test_a_file_moved_to_the_other_librarys_copy_is_not_said_to_be_submitted_since_the_outlook(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    response = admin.api.request(
        "POST", f"{NATIVE}/requests", json={"paths": ["/both/x"]}, headers=admin.headers
    )
    request_id = response.json()["id"]
    clock.advance(1)
    assert admin.get(f"{NATIVE}/requests/{request_id}").json()["outlook"]["libraries"][0]["library"] == "new"
    assert put(admin, "/tapes/T2/state", {"state": "broken", "reason": "snapped"}).status_code == 200
    site_cycle(session_factory, library, clock).cycles["new"].media.run()  # new's cycle moves it, at once
    assert files(session_factory)["/both/x"][:3] == ("QUEUED", "old", "T5")

    # the outlook made before the move has not seen it on old's T5: it says so, truly
    (moved,) = admin.get(f"{NATIVE}/requests/{request_id}").json()["outlook"]["waiting"]
    assert (moved["code"], moved["library"]) == ("not_projected", "old")
    assert moved["reason"] == "queued on this tape after the outlook was made: in the next one"
    clock.advance(10)  # the next outlook places it
    outlook = admin.get(f"{NATIVE}/requests/{request_id}").json()["outlook"]
    assert outlook["waiting"] == [] and outlook["eta"] is not None


def test_archive_info_answers_lost_only_when_no_library_has_a_copy_on_a_tape_that_is_not_broken(
    admin: Bearer,
) -> None:
    def localities() -> list[str]:
        answer = admin.post("/api/v1/archiveinfo", json={"paths": ["/both/x", "/new/only"]}).json()
        return [entry["locality"] for entry in answer]

    assert put(admin, "/tapes/T2/state", {"state": "broken", "reason": "dead1"}).status_code == 200
    assert localities() == ["TAPE", "LOST"]  # /both/x is read from old's T5
    assert put(admin, "/tapes/T5/state", {"state": "broken", "reason": "dead2"}).status_code == 200
    assert localities() == ["LOST", "LOST"]


@pytest.mark.parametrize(
    "faults",
    [{name: {"offline_windows": [{"start_s": 0.0, "end_s": 60.0}]} for name in ("new", "old")}],
)
def test_a_path_looked_up_again_by_the_cycle_is_queued_on_a_copy_whose_tape_is_not_broken(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    submit(admin, ["/both/x"])  # neither library answers: the file waits for the cycle to ask again
    assert files(session_factory)["/both/x"][0] == "UNRESOLVED"
    assert put(admin, "/tapes/T2/state", {"state": "broken", "reason": "snapped"}).status_code == 200
    clock.advance(60)  # both libraries are back

    site_cycle(session_factory, library, clock).run_once()

    assert files(session_factory)["/both/x"][:3] in {("QUEUED", "old", "T5"), ("SUBMITTED", "old", "T5")}


def test_drives_of_the_same_name_in_two_libraries_are_taken_down_separately(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    listed = admin.get(f"{ADMIN}/drives").json()["drives"]
    assert [(d["library"], d["drive"]) for d in listed] == [
        ("new", "drive00"),
        ("new", "drive01"),
        ("old", "drive00"),
        ("old", "drive01"),
    ]
    answer = put(admin, "/drives/drive00/state", {"state": "down", "reason": "firmware"}, library="old")
    assert answer.status_code == 200, answer.text
    assert answer.json()["drive"]["library"] == "old"
    site_cycle(session_factory, library, clock).run_once()
    assert library.libraries["old"].capacity().drives_total == 1
    assert library.libraries["new"].capacity().drives_total == 2
    states = {(d["library"], d["drive"]): d["state"] for d in admin.get(f"{ADMIN}/drives").json()["drives"]}
    assert states == {
        ("new", "drive00"): "up",
        ("new", "drive01"): "up",
        ("old", "drive00"): "down",
        ("old", "drive01"): "up",
    }
    only_old = admin.get(f"{ADMIN}/drives", params={"library": "old"}).json()["drives"]
    assert {d["library"] for d in only_old} == {"old"}
    trail = admin.get(f"{ADMIN}/media/audit", params={"library": "old"}).json()["entries"]
    assert [(e["library"], e["name"], e["new_state"]) for e in trail] == [
        ("old", "drive00", "down (after_mount)")
    ]
    assert admin.get(f"{ADMIN}/media/audit", params={"library": "new"}).json()["entries"] == []


@pytest.mark.parametrize(
    ("url", "body", "query", "status", "field"),
    [
        ("/tapes/T1/state", {"state": "disabled", "reason": "x"}, {"library": "nope"}, 404, "library"),
        ("/tapes/T1/state", {"state": "disabled", "reason": "x"}, {}, 400, "library"),
        ("/tapes/T9/state", {"state": "disabled", "reason": "x"}, {}, 404, "tape"),
        ("/tapes/T2/state", {"state": "disabled", "reason": "x"}, {"library": "old"}, 404, "tape"),
        ("/drives/drive00/state", {"state": "down", "reason": "x"}, {"library": "nope"}, 404, "library"),
        ("/drives/drive00/state", {"state": "down", "reason": "x"}, {}, 400, "library"),
        ("/drives/drive07/state", {"state": "down", "reason": "x"}, {"library": "new"}, 404, "drive"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(
    admin: Bearer,
    session_factory: sessionmaker[Session],
    url: str,
    body: dict[str, Any],
    query: dict[str, str],
    status: int,
    field: str,
) -> None:
    submit(admin, ["/new/a", "/old/b"])  # T1 is known in both libraries by their files
    before = files(session_factory)
    assert_problem(put(admin, url, body, **query), status, field=field)
    assert media_rows(session_factory) == (0, 0, 0)
    assert files(session_factory) == before


def test_reads_name_the_library_tape_or_drive_they_cannot_find(admin: Bearer) -> None:
    submit(admin, ["/new/a", "/old/b"])
    assert_problem(admin.get(f"{ADMIN}/tapes", params={"library": "nope"}), 404, field="library")
    assert_problem(admin.get(f"{ADMIN}/tapes/T1"), 400, field="library")
    assert_problem(admin.get(f"{ADMIN}/tapes/T9"), 404, field="tape", says="no library of the site holds it")
    unknown_drive = put(admin, "/drives/drive07/state", {"state": "down", "reason": "x"})
    assert_problem(unknown_drive, 404, field="drive", says="no library of the site has a drive 'drive07'")
    assert_problem(admin.get(f"{ADMIN}/media/audit", params={"library": "nope"}), 404, field="library")


@pytest.mark.parametrize("faults", [{"new": {"bad_cartridges": ["T1"]}}])
def test_failed_mounts_break_one_librarys_tape_and_not_the_same_id_in_the_other(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    submit(admin, ["/new/a", "/old/b"])
    cycle = site_cycle(session_factory, library, clock, media={"break_after_failed_mounts": 1})
    step(cycle, clock, lambda: {f[0] for f in files(session_factory).values()} == {"STAGED", "FAILED"})
    assert files(session_factory)["/old/b"][:3] == ("STAGED", "old", "T1")
    with session_factory() as session:
        rows = session.execute(select(TapeStateRow.library, TapeStateRow.tape, TapeStateRow.state))
        assert sorted(tuple(row) for row in rows) == [("new", "T1", "broken")]
        audit = session.execute(select(MediaAudit.who, MediaAudit.library, MediaAudit.name))
        assert [tuple(row) for row in audit] == [("service", "new", "T1")]


@pytest.mark.parametrize("faults", [{"old": {"offline_windows": [{"start_s": 0.0, "end_s": 60.0}]}}])
def test_a_broken_tapes_file_waits_while_a_library_cannot_say_whether_it_holds_a_copy(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    submit(admin, ["/both/x", "/new/only"])  # old is offline: the lookup takes new's copy
    assert files(session_factory)["/both/x"][:3] == ("QUEUED", "new", "T2")
    assert put(admin, "/tapes/T2/state", {"state": "broken", "reason": "snapped"}).status_code == 200
    cycle = site_cycle(session_factory, library, clock)
    for _ in range(5):  # old does not answer: neither file is failed while a copy may exist
        cycle.run_once()
        clock.advance(1)
    assert {path: f[:3] for path, f in files(session_factory).items()} == {
        "/both/x": ("QUEUED", "new", "T2"),
        "/new/only": ("QUEUED", "new", "T2"),
    }
    clock.advance(60)  # old is back
    step(cycle, clock, lambda: files(session_factory)["/both/x"][0] == "STAGED")
    assert files(session_factory)["/both/x"][:3] == ("STAGED", "old", "T5")
    assert files(session_factory)["/new/only"][3] == "tape T2 of library new is broken: snapped"


def test_disabling_one_librarys_tape_takes_back_its_files_only(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    submit(admin, ["/new/a", "/old/b"])
    cycle = site_cycle(session_factory, library, clock)
    assert cycle.run_once().files_submitted == 2  # handed over; neither library has started them yet
    assert {f[0] for f in files(session_factory).values()} == {"SUBMITTED"}

    assert (
        put(admin, "/tapes/T1/state", {"state": "disabled", "reason": "x"}, library="old").status_code == 200
    )
    report = cycle.run_once()  # at the same instant: nothing has started at either library
    assert report.libraries["old"].media is not None and report.libraries["old"].media.taken_back == 1
    assert report.libraries["new"].media is not None and report.libraries["new"].media.taken_back == 0
    found = files(session_factory)
    assert found["/old/b"][0] == "QUEUED" and found["/new/a"][0] == "SUBMITTED"
    step(cycle, clock, lambda: files(session_factory)["/new/a"][0] == "STAGED")
    assert files(session_factory)["/old/b"][0] == "QUEUED"

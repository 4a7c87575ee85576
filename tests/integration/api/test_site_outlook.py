"""The outlook and the dry run of a site of two libraries through the API, on PostgreSQL and SQLite: each
library is projected on its own drives and costs (the slower library's files later), positions count the
files of the request's own library, a tape ID in both libraries is two tapes, one library offline leaves
the other's ETAs, the libraries share the free disk buffer in the cycle's order, and the dry run reports
each library beside the site's total."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from carousel.cli.outlook import outlook_lines
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.site import Site
from tests.integration.api.conftest import Bearer, SyncApi

GB = 10**9
NATIVE = "/api/native/v1"
DRY_RUN = "/api/admin/v1/policy/dry-run"


@pytest.fixture
def slow_drives() -> int:
    return 1


@pytest.fixture
def library(clock: ManualClock, tmp_path: Path, slow_drives: int) -> Iterator[Site]:
    """The site the API asks (the conftest's `library`, overridden): one LTO-9 drive (`fast`) and one LTO-7
    drive (`slow`, or `slow_drives`), both with a tape T1 holding a file of 1 GB; `slow` has a tape T2 as
    well."""
    rows = {
        "fast": [f"/fast/a,{GB},T1,0"],
        "slow": [f"/slow/b,{GB},T1,0", f"/slow/c,{GB},T2,0"],
    }
    adapters = {}
    for name, profile in (("fast", "lto9"), ("slow", "lto7")):
        catalogue = tmp_path / f"{name}.csv"
        catalogue.write_text("path,size_bytes,tape,position_bytes\n" + "".join(f"{r}\n" for r in rows[name]))
        drives = slow_drives if name == "slow" else 1
        options = {"profile": profile, "drives": drives, "catalogue": str(catalogue)}
        adapters[name] = build_simulated_adapter(options, clock)
    site = Site(adapters)
    yield site
    site.close()


def _submit(api: Bearer, paths: list[str]) -> str:
    response = api.post(f"{NATIVE}/requests", json={"paths": paths})
    assert response.status_code == 201, response.text
    request_id: str = response.json()["id"]
    return request_id


def _outlook(api: Bearer, request_id: str) -> dict[str, Any]:
    response = api.get(f"{NATIVE}/requests/{request_id}")
    assert response.status_code == 200, response.text
    outlook: dict[str, Any] = response.json()["outlook"]
    assert outlook is not None
    return outlook


def test_each_library_is_projected_on_its_own_drives(admin: Bearer, clock: ManualClock) -> None:
    both = _submit(admin, ["/fast/a", "/slow/b"])
    behind = _submit(admin, ["/slow/c"])
    clock.advance(1)  # submitted after any projection: a read asks for a fresh one

    outlook = _outlook(admin, both)
    per_library = {entry["library"]: entry for entry in outlook["libraries"]}

    assert set(per_library) == {"fast", "slow"}
    fast, slow = (datetime.fromisoformat(per_library[n]["eta"]) for n in ("fast", "slow"))
    # the same 1 GB read from the front of a tape: the LTO-7 drive mounts and reads it later than the LTO-9
    assert clock.now() < fast < slow
    assert datetime.fromisoformat(outlook["eta"]) == slow  # the request is done when its last library is
    assert per_library["fast"]["position"] == per_library["slow"]["position"] == outlook["position"] == 0
    assert outlook["unplanned"] == 0 and outlook["note"] is None
    # the slow library's one drive reads T1 first: /slow/c waits behind /slow/b only, not behind /fast/a
    later = _outlook(admin, behind)
    assert later["position"] == 1
    assert [entry["library"] for entry in later["libraries"]] == ["slow"]
    assert datetime.fromisoformat(later["eta"]) > slow


def test_waiting_reasons_name_the_library_of_their_files(
    make_api: Callable[..., SyncApi], clock: ManualClock
) -> None:
    # cta mounts a tape once it holds enough work or has waited an hour: fresh work waits in both libraries
    api = make_api(policy="cta")
    response = api.post(f"{NATIVE}/requests", json={"paths": ["/fast/a", "/slow/b", "/slow/c"]})
    assert response.status_code == 201, response.text

    outlook = api.get(f"{NATIVE}/requests/{response.json()['id']}").json()["outlook"]

    waits = {(w["library"], w["code"]): w["files"] for w in outlook["waiting"]}
    assert waits == {("slow", "not_worth_mounting_yet"): 2, ("fast", "not_worth_mounting_yet"): 1}
    assert [w["library"] for w in outlook["waiting"]] == ["slow", "fast"]  # most files first


def test_a_request_in_one_library_of_a_site_of_two_is_told_its_library_by_carousel_status(
    make_api: Callable[..., SyncApi],
) -> None:
    api = make_api(policy="cta")  # fresh work waits
    response = api.post(f"{NATIVE}/requests", json={"paths": ["/slow/b"]})
    assert response.status_code == 201, response.text

    outlook = api.get(f"{NATIVE}/requests/{response.json()['id']}").json()["outlook"]

    assert outlook["site_libraries"] == 2 and [e["library"] for e in outlook["libraries"]] == ["slow"]
    lines = outlook_lines(outlook)  # what `carousel status` prints of it
    assert any(line.startswith("library slow: 0 files ahead, eta ") for line in lines)
    assert any(line.startswith("waiting (library slow): 1 file not_worth_mounting_yet: ") for line in lines)


def test_the_dry_run_reports_each_library_and_the_site(admin: Bearer) -> None:
    _submit(admin, ["/fast/a", "/slow/b", "/slow/c"])

    response = admin.post(DRY_RUN, json={"policy": "cta"})

    assert response.status_code == 200, response.text
    body = response.json()
    libraries = {entry["library"]: entry for entry in body["libraries"]}
    assert list(libraries) == ["fast", "slow"]
    # T1 of fast and T1 of slow are two tapes
    assert (libraries["fast"]["tapes_with_work"], libraries["slow"]["tapes_with_work"]) == (1, 2)
    assert body["tapes_with_work"] == 3
    active = body["active"]  # fifo: every file handed over at once, each library on its own drive
    passes = sorted((p["library"], p["tape"], p["files"]) for p in active["passes"])
    assert passes == [("fast", "T1", 1), ("slow", "T1", 1), ("slow", "T2", 1)]
    assert active["passes_total"] == sum(libraries[n]["active"]["passes_total"] for n in libraries)
    drained = {n: datetime.fromisoformat(libraries[n]["active"]["drained_at"]) for n in libraries}
    assert drained["fast"] < drained["slow"] == datetime.fromisoformat(active["drained_at"])
    candidate = body["candidate"]  # cta waits for its thresholds: every tape of both libraries waits
    assert sorted((w["library"], w["tape"]) for w in candidate["waiting"]) == [
        ("fast", "T1"),
        ("slow", "T1"),
        ("slow", "T2"),
    ]
    assert candidate["waiting_total"] == 3 and candidate["selections"] == []


def test_a_library_offline_leaves_the_other_libraries_etas(
    admin: Bearer, library: Site, clock: ManualClock
) -> None:
    request_id = _submit(admin, ["/fast/a", "/slow/b", "/slow/c"])
    library.libraries["slow"].close()  # a closed adapter answers nothing: as a library that is down
    clock.advance(1)

    outlook = _outlook(admin, request_id)

    per_library = {entry["library"]: entry for entry in outlook["libraries"]}
    assert per_library["slow"]["eta"] is None and per_library["slow"]["unplanned"] == 2
    assert outlook["eta"] == per_library["fast"]["eta"] is not None  # the files it can place
    assert outlook["waiting"] == [
        {"code": "library_offline", "files": 2, "reason": outlook["waiting"][0]["reason"], "library": "slow"}
    ]
    assert outlook["unplanned"] == 2 and outlook["note"] == "2 file(s) not in the estimate: see waiting"


@pytest.mark.parametrize("slow_drives", [2])
def test_the_libraries_share_the_free_buffer_in_the_cycles_order(
    make_api: Callable[..., SyncApi], clock: ManualClock, tmp_path: Path
) -> None:
    # 2.375 GB of room below the high watermark: `fast` (first named) takes 1 GB for /fast/a; `slow` has the
    # 1.375 GB left, room for T1's 1 GB file and not T2's, though its two drives could read both at once
    buffer = {"enabled": True, "capacity_bytes": 2_500_000_000, "directory": str(tmp_path / "buffer")}
    api = make_api(policy="star2006", buffer=buffer)
    response = api.post(f"{NATIVE}/requests", json={"paths": ["/fast/a", "/slow/b", "/slow/c"]})
    assert response.status_code == 201, response.text
    clock.advance(1)

    outlook = api.get(f"{NATIVE}/requests/{response.json()['id']}").json()["outlook"]

    assert {(w["library"], w["code"]): w["files"] for w in outlook["waiting"]} == {("slow", "buffer_full"): 1}
    per_library = {entry["library"]: entry for entry in outlook["libraries"]}
    fast, slow = (datetime.fromisoformat(per_library[n]["eta"]) for n in ("fast", "slow"))
    assert datetime.fromisoformat(outlook["eta"]) == slow
    # with the whole room each, T2 would be read beside T1 on the second drive: the ETA of one LTO-7 read;
    # shared, it waits for T1's pass, so the slow library's ETA is past two reads
    lone = make_api(policy="star2006", buffer={**buffer, "capacity_bytes": 10 * GB})
    alone = lone.post(f"{NATIVE}/requests", json={"paths": ["/slow/b", "/slow/c"]})
    assert alone.status_code == 201, alone.text
    whole = datetime.fromisoformat(
        lone.get(f"{NATIVE}/requests/{alone.json()['id']}").json()["outlook"]["eta"]
    )
    assert clock.now() < fast < whole < slow

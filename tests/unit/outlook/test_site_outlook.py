"""A request's outlook on a site of several libraries, read from each library's real projection: the same
tape ID in two libraries is two tapes, the eta the latest library's, the position the smallest, and files
no library of the site holds (not looked up yet, or of a library no longer named) counted apart."""

from __future__ import annotations

from carousel.domain.queue import RequestWork
from carousel.outlook.projection import project
from carousel.outlook.request_outlook import NOT_PROJECTED, TAPE_UNKNOWN
from carousel.outlook.site import SiteProjection, site_request_outlook
from policies.registry import build_policy
from tests.unit.policies.snapshots import T0, snapshot, tape


def two_libraries() -> SiteProjection:
    """`a`: tape T1 alone on one drive; `b`: T0 then T1 on one drive (T1 waits for it)."""
    plan = build_policy("fifo").plan
    a = project(snapshot(tape("T1", 2, age_s=60), drives=1), plan)
    b = project(snapshot(tape("T0", 4, age_s=90), tape("T1", 3, age_s=60), drives=1), plan)
    return SiteProjection(T0, {"a": a, "b": b})


def test_the_same_tape_id_in_two_libraries_is_two_tapes() -> None:
    site = two_libraries()
    work = RequestWork(libraries={"a": RequestWork(queued={"T1": 2}), "b": RequestWork(queued={"T1": 3})})

    outlook = site_request_outlook(site, work)

    a, b = site.libraries["a"].tapes["T1"], site.libraries["b"].tapes["T1"]
    assert a.eta is not None and b.eta is not None and a.eta < b.eta
    assert outlook.eta == b.eta
    assert outlook.files_ahead == 0  # read first in `a`; in `b` behind T0's 4 files
    per_library = {entry.library: entry.outlook for entry in outlook.libraries}
    assert (per_library["a"].eta, per_library["b"].eta) == (a.eta, b.eta)
    assert (per_library["a"].files_ahead, per_library["b"].files_ahead) == (0, 4)
    assert outlook.next_cycle == 5 and outlook.unplanned == 0 and outlook.note is None


def test_files_no_library_of_the_site_holds_wait_apart() -> None:
    work = RequestWork(
        libraries={
            "a": RequestWork(queued={"T1": 2}),
            "gone": RequestWork(queued={"X": 1}),  # a library the settings no longer name
            "default": RequestWork(tape_unknown=1),  # not looked up yet
        }
    )

    outlook = site_request_outlook(two_libraries(), work)

    assert [entry.library for entry in outlook.libraries] == ["a"]
    assert sorted((w.library, w.code, w.files) for w in outlook.waiting if w.library is None) == [
        (None, NOT_PROJECTED, 1),
        (None, TAPE_UNKNOWN, 1),
    ]
    assert outlook.unplanned == 2 and outlook.note == "2 file(s) not in the estimate: see waiting"
    assert (
        outlook.eta
        == site_request_outlook(
            two_libraries(), RequestWork(libraries={"a": RequestWork(queued={"T1": 2})})
        ).eta
    )

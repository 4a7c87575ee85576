"""A request's outlook on a site of several libraries, read from each library's real projection: the same
tape ID in two libraries is two tapes, the eta the latest library's, the position the smallest, and files
no library of the site holds (not looked up yet, or of a library no longer named) counted apart. The
libraries share the free disk buffer in the cycle's order, each planning on the room those before it left."""

from __future__ import annotations

from dataclasses import replace

from carousel.domain.buffer import BUFFER_FULL, BufferView
from carousel.domain.libraries import not_in_settings_words
from carousel.domain.queue import RequestWork
from carousel.outlook.projection import project
from carousel.outlook.request_outlook import (
    LIBRARY_NOT_IN_SETTINGS,
    TAPE_UNKNOWN,
    absent_libraries_note,
)
from carousel.outlook.site import SiteProjection, project_snapshots, site_request_outlook
from policies.base import Policy
from policies.registry import build_policy
from tests.unit.policies.snapshots import MB, T0, busy, snapshot, tape


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
            # a library the settings no longer name: a file queued, one handed over, one backing off
            "gone": RequestWork(queued={"X": 1}, in_flight={"Y": 1}, retry_pending=1),
            "default": RequestWork(tape_unknown=1),  # not looked up yet
        }
    )

    outlook = site_request_outlook(two_libraries(), work)

    assert [entry.library for entry in outlook.libraries] == ["a"]
    assert sorted((w.library or "", w.code, w.files) for w in outlook.waiting if w.library != "a") == [
        ("", TAPE_UNKNOWN, 1),
        ("gone", LIBRARY_NOT_IN_SETTINGS, 3),  # named, and not said to be in the next outlook
    ]
    (gone,) = (w for w in outlook.waiting if w.library == "gone")
    assert gone.reason == not_in_settings_words("gone")
    assert gone.reason.startswith("its library gone is not in this service's settings: ")
    assert outlook.reading == 0  # no cycle hears of the file handed to `gone`
    assert outlook.unplanned == 4 and outlook.note == "4 file(s) not in the estimate: see waiting"
    assert (
        outlook.eta
        == site_request_outlook(
            two_libraries(), RequestWork(libraries={"a": RequestWork(queued={"T1": 2})})
        ).eta
    )


def test_a_site_of_one_library_tells_apart_the_files_of_a_library_no_longer_named() -> None:
    site = two_libraries()
    one = SiteProjection(T0, {"a": site.libraries["a"]})  # `b` taken out of the settings
    mine = RequestWork(queued={"T1": 2})
    work = RequestWork(
        queued={"T1": 5},  # the total: the same tape ID in `b` too
        tape_unknown=1,
        unknown_reason="the library is offline",
        libraries={
            "a": mine,
            "b": RequestWork(queued={"T1": 3}),
            "default": RequestWork(tape_unknown=1),
        },
    )

    outlook = site_request_outlook(one, work)

    alone = site_request_outlook(one, RequestWork(queued={"T1": 2}, libraries={"a": mine}))
    assert outlook.eta == alone.eta is not None and outlook.next_cycle == 2  # b's 3 files are not read in a
    assert sorted((w.library, w.code, w.files) for w in outlook.waiting) == [
        ("a", TAPE_UNKNOWN, 1),  # not looked up yet: in the one library's figures, as always
        ("b", LIBRARY_NOT_IN_SETTINGS, 3),
    ]
    assert [(e.library, e.outlook.unplanned) for e in outlook.libraries] == [("a", 1)]
    assert outlook.unplanned == 4 and outlook.site_libraries == 1
    # every file the one library's, or not looked up yet: as it always was, from the request's own figures
    usual = replace(work, queued={"T1": 2}, libraries={"a": mine, "default": RequestWork(tape_unknown=1)})
    outlook = site_request_outlook(one, usual)
    assert [(w.library, w.code, w.reason) for w in outlook.waiting] == [
        ("a", TAPE_UNKNOWN, "the library is offline")
    ]
    assert outlook.next_cycle == 2 and outlook.eta == alone.eta


def _fifo() -> Policy:
    return build_policy("fifo")


def _room(admissible: int) -> BufferView:
    """A buffer with `admissible` bytes of room, none of it used."""
    return BufferView(1000 * MB, 0, 0, 0, free_bytes=admissible, admissible_bytes=admissible)


def test_libraries_share_the_free_buffer_in_the_cycles_order() -> None:
    # 550 MB of room: `a` (first in the settings) takes 500 MB of it with A1; `b` reads B0 on one of its two
    # drives and has B1 (100 MB files) queued, which fits the whole room but not the 50 MB `a` leaves
    a = replace(snapshot(tape("A1", 5), drives=1), buffer=_room(550 * MB))
    b = replace(snapshot(tape("B1", 2), drives=2, in_flight=(busy("B0", 10),)), buffer=_room(550 * MB))

    shared = project_snapshots({"a": a, "b": b}, _fifo)
    whole = {name: project(own, _fifo().plan) for name, own in (("a", a), ("b", b))}

    assert shared.libraries["a"].tapes["A1"].eta == whole["a"].tapes["A1"].eta  # the first plans on all of it
    assert shared.libraries["b"].plan.waiting.get("B1") == BUFFER_FULL  # as b's cycle would find it
    assert "B1" not in whole["b"].plan.waiting
    later, early = shared.libraries["b"].tapes["B1"].eta, whole["b"].tapes["B1"].eta
    assert later is not None and early is not None and later > early  # B1 waits for B0's pass: no room now
    # the order is the cycle's: `b` first plans on the whole room, and `a` still finds enough for A1
    swapped = project_snapshots({"b": b, "a": a}, _fifo)
    assert swapped.libraries["b"].tapes["B1"].eta == early
    assert swapped.libraries["a"].tapes["A1"].eta == whole["a"].tapes["A1"].eta


def test_without_a_buffer_or_with_one_library_each_projection_is_its_own() -> None:
    a = snapshot(tape("A1", 5), drives=1)
    b = snapshot(tape("B1", 2), drives=2, in_flight=(busy("B0", 10),))
    shared = project_snapshots({"a": a, "b": b}, _fifo)
    assert shared.libraries["b"].tapes["B1"].eta == project(b, _fifo().plan).tapes["B1"].eta
    alone = replace(b, buffer=_room(50 * MB))  # one library: its own room, as it always was
    only = project_snapshots({"b": alone}, _fifo)
    assert only.libraries["b"].tapes["B1"] == project(alone, _fifo().plan).tapes["B1"]


def test_files_only_of_libraries_no_longer_named_are_not_said_to_be_placed_yet() -> None:
    site = two_libraries()
    one = SiteProjection(T0, {"a": site.libraries["a"]})  # `b` taken out of the settings
    only_b = RequestWork(queued={"T1": 3}, libraries={"b": RequestWork(queued={"T1": 3})})

    outlook = site_request_outlook(one, only_b)

    assert outlook.eta is None and outlook.files_ahead is None
    assert outlook.note == absent_libraries_note(["b"])
    assert "yet" not in (outlook.note or "") and "names it again" in (outlook.note or "")
    # on a site of several, two libraries gone
    gone = RequestWork(libraries={"x": RequestWork(queued={"X": 1}), "y": RequestWork(in_flight={"Y": 2})})
    outlook = site_request_outlook(two_libraries(), gone)
    assert outlook.note == absent_libraries_note(["x", "y"])
    assert outlook.note.startswith("its files wait for libraries x, y, not in this service's settings")
    # with a file not looked up yet beside them, the lookup may place it: "yet" again
    mixed = RequestWork(libraries={**gone.libraries, "default": RequestWork(tape_unknown=1)})
    assert site_request_outlook(two_libraries(), mixed).note == "none of its files is in the outlook yet"

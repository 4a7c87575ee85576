"""A site's lookup across its libraries (simulated libraries, CSV catalogues): a path with copies in two is
read from the one the cost model serves soonest, which moves with the bytes queued there; a path in one
library names it; a path in none is not on tape, unless a library could not answer. Tapes an operator holds
come last: a copy on a disabled tape after one on an active tape, a broken one after both (and only when
every copy is broken)."""

from __future__ import annotations

from pathlib import Path

import pytest

from carousel.domain.clock import ManualClock
from carousel.domain.media import TapeState
from carousel.scheduler.planning_path import published_costs
from hsm_adapters.base import Health, NotOnTape, OnTape, Unknown
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.site import BrokenCopies, Site

GB = 10**9


def _library(tmp_path: Path, name: str, profile: str, drives: int, rows: list[str], clock: ManualClock):
    catalogue = tmp_path / f"{name}.csv"
    catalogue.write_text("path,size_bytes,tape,position_bytes\n" + "".join(f"{row}\n" for row in rows))
    return build_simulated_adapter({"profile": profile, "drives": drives, "catalogue": str(catalogue)}, clock)


@pytest.fixture
def libraries(tmp_path: Path):
    clock = ManualClock()
    # mid-tape copies: LTO-9 locates and reads faster (45 s and 400 MB/s against 56 s and 300 MB/s), though
    # it mounts 2 s slower
    new = _library(tmp_path, "new", "lto9", 8, [f"/new/z,{GB},N1,0", f"/both/x,{GB},N1,{GB}"], clock)
    old = _library(tmp_path, "old", "lto7", 4, [f"/old/y,{GB},O1,0", f"/both/x,{GB},O1,{GB}"], clock)
    return {"new": new, "old": old}


def test_a_copy_in_two_libraries_is_read_from_the_soonest(libraries) -> None:
    site = Site(libraries)
    x, y, z, none = site.lookup(["/both/x", "/old/y", "/new/z", "/nowhere"])
    assert isinstance(x, OnTape) and (x.library, x.tape, x.position_bytes) == ("new", "N1", GB)
    assert isinstance(y, OnTape) and (y.library, y.tape) == ("old", "O1")
    assert isinstance(z, OnTape) and z.library == "new"
    # every library named once, with the reason they gave alike
    assert isinstance(none, NotOnTape) and none.reason == "in no library (new, old): not in the library"


def test_a_path_in_no_library_names_each_library_with_its_own_reason(libraries) -> None:
    class OwnWords:  # a library that says why in words of its own
        def lookup(self, paths: list[str]) -> list[NotOnTape]:
            return [NotOnTape(path, "no such file in the name space") for path in paths]

    site = Site({"new": libraries["new"], "old": OwnWords()})  # type: ignore[dict-item]
    (none,) = site.lookup(["/nowhere"])
    assert isinstance(none, NotOnTape)
    assert none.reason == "in no library: new: not in the library; old: no such file in the name space"


def test_a_library_that_answers_unknown_itself_is_named_with_what_it_said(libraries) -> None:
    class CannotSay:  # a library that answers, but cannot say now (its own catalogue is unavailable)
        def lookup(self, paths: list[str]) -> list[Unknown]:
            return [Unknown(path, "the name space is being rebuilt") for path in paths]

    site = Site({"new": libraries["new"], "old": CannotSay()})  # type: ignore[dict-item]
    none, z = site.lookup(["/nowhere", "/new/z"])
    assert isinstance(none, Unknown)
    assert none.reason == "not found yet: new: not in the library; old: the name space is being rebuilt"
    assert isinstance(z, OnTape) and z.library == "new"  # a copy found is read, whatever another said
    (both,) = Site({"a": CannotSay(), "b": CannotSay()}).lookup(["/nowhere"])  # type: ignore[dict-item]
    assert both == Unknown("/nowhere", "not found yet (a, b): the name space is being rebuilt")
    (alone,) = Site({"old": CannotSay()}).lookup(["/nowhere"])  # type: ignore[dict-item]
    assert alone == Unknown("/nowhere", "the name space is being rebuilt")  # one library: its own words


def test_the_bytes_queued_in_a_library_send_a_copy_to_the_other(libraries) -> None:
    site = Site(libraries, backlog=lambda: {"new": 100_000 * GB})
    (x,) = site.lookup(["/both/x"])
    assert isinstance(x, OnTape) and (x.library, x.tape) == ("old", "O1")


def test_a_library_that_does_not_answer_leaves_its_paths_unknown_not_absent(libraries) -> None:
    libraries["new"].close()  # a closed adapter refuses every call
    site = Site(libraries)
    x, z = site.lookup(["/both/x", "/new/z"])
    assert isinstance(x, OnTape) and x.library == "old"  # the copy the other library holds
    # each library named with what it said: old has no /new/z, new could not say
    assert isinstance(z, Unknown) and z.reason.startswith("not found yet: new: the library did not answer: ")
    assert z.reason.endswith("; old: not in the library")
    assert site.health() is Health.DEGRADED
    assert site.capacity().drives_total == 4


def test_a_site_of_one_library_answers_as_that_library_naming_it(libraries) -> None:
    site = Site({"old": libraries["old"]})
    y, none = site.lookup(["/old/y", "/nowhere"])
    assert isinstance(y, OnTape) and y.library == "old"
    assert isinstance(none, NotOnTape) and not none.reason.startswith("in no library")
    with pytest.raises(TypeError, match="each library's adapter"):
        site.poll_events()


def test_a_site_publishes_the_costs_of_its_one_library_only(libraries) -> None:
    assert published_costs(Site({"old": libraries["old"]})) == libraries["old"].library_costs()
    assert published_costs(Site(libraries)) is None  # two libraries' costs differ


def test_another_copy_leaves_out_broken_tapes_and_says_when_it_cannot_know(libraries) -> None:
    site = Site(libraries)
    x, z, y = site.other_copies(["/both/x", "/new/z", "/old/y"], {("new", "N1")})
    assert isinstance(x, OnTape) and (x.library, x.tape, x.position_bytes) == ("old", "O1", GB)
    assert z == BrokenCopies("/new/z", (("new", "N1"),))  # its one copy is on the broken tape
    assert isinstance(y, OnTape) and y.library == "old"
    # every copy broken: each named, in the settings' order; a path in no library has none
    x, none = site.other_copies(["/both/x", "/nowhere"], {("new", "N1"), ("old", "O1")})
    assert x == BrokenCopies("/both/x", (("new", "N1"), ("old", "O1")))
    assert none is None
    # the same tape ID broken in another library leaves this one's copy alone
    (x,) = site.other_copies(["/both/x"], {("old", "N1")})
    assert isinstance(x, OnTape) and x.library == "new"
    libraries["old"].close()
    x, z = site.other_copies(["/both/x", "/new/z"], {("new", "N1")})
    assert isinstance(x, Unknown) and x.reason.startswith("no other copy found yet (old): the library did")
    assert isinstance(z, Unknown)  # old could not say whether it holds /new/z


def test_the_lookup_passes_over_a_copy_on_a_broken_or_disabled_tape(libraries) -> None:
    for state in (TapeState.BROKEN, TapeState.DISABLED):
        site = Site(libraries, tape_states=lambda state=state: {("new", "N1"): state})
        x, z = site.lookup(["/both/x", "/new/z"])
        assert isinstance(x, OnTape) and (x.library, x.tape) == ("old", "O1"), state
        # its one copy: answered as it is (a broken tape's file fails at the leader's next cycle)
        assert isinstance(z, OnTape) and (z.library, z.tape) == ("new", "N1"), state


def test_a_disabled_copy_comes_before_a_broken_one_and_every_broken_copy_leaves_the_soonest(
    libraries,
) -> None:
    held = {("new", "N1"): TapeState.BROKEN, ("old", "O1"): TapeState.DISABLED}
    (x,) = Site(libraries, tape_states=lambda: held).lookup(["/both/x"])
    assert isinstance(x, OnTape) and x.library == "old"
    both_broken = {("new", "N1"): TapeState.BROKEN, ("old", "O1"): TapeState.BROKEN}
    (x,) = Site(libraries, tape_states=lambda: both_broken).lookup(["/both/x"])
    assert isinstance(x, OnTape) and x.library == "new"  # as without states: the soonest copy


def test_the_tape_states_are_read_once_per_lookup_and_only_for_a_choice(libraries) -> None:
    reads: list[int] = []

    def tape_states() -> dict[tuple[str, str], TapeState]:
        reads.append(1)
        return {}

    site = Site(libraries, tape_states=tape_states)
    site.lookup(["/new/z", "/old/y", "/nowhere"])  # one copy each at most: nothing to choose
    assert reads == []
    site.lookup(["/both/x", "/both/x", "/new/z", "/both/x"])
    assert reads == [1]


def test_each_librarys_drives_are_asked_once_per_lookup_however_many_paths_it_weighs(
    libraries, monkeypatch
) -> None:
    asked: list[str] = []
    for name, adapter in libraries.items():  # the real library's answer, each question counted

        def counted(name=name, capacity=adapter.capacity):
            asked.append(name)
            return capacity()

        monkeypatch.setattr(adapter, "capacity", counted)
    site = Site(libraries)
    answers = site.lookup(["/both/x"] * 50)
    assert {a.library for a in answers if isinstance(a, OnTape)} == {"new"}
    assert sorted(asked) == ["new", "old"]
    asked.clear()
    site.lookup(["/both/x"] * 3)  # the next lookup asks again: drives come and go
    assert sorted(asked) == ["new", "old"]


def test_another_copy_prefers_an_active_tape_to_a_disabled_one(libraries) -> None:
    site = Site(libraries, tape_states=lambda: {("old", "O1"): TapeState.DISABLED})
    (x,) = site.other_copies(["/both/x"], set())
    assert isinstance(x, OnTape) and x.library == "new"
    site = Site(libraries, tape_states=lambda: {("new", "N1"): TapeState.DISABLED})
    (x,) = site.other_copies(["/both/x"], set())
    assert isinstance(x, OnTape) and x.library == "old"
    (x,) = site.other_copies(["/both/x"], {("old", "O1")})  # the disabled copy, when the other is broken
    assert isinstance(x, OnTape) and x.library == "new"


def test_a_site_evicts_nothing_each_library_is_told_its_own(libraries, monkeypatch) -> None:
    """Evicted copies are told per library (carousel.scheduler.eviction_notice): a site told of a path
    refuses, and no library hears of a copy that may not be its own."""
    told: list[tuple[str, list[str]]] = []
    for name, adapter in libraries.items():
        monkeypatch.setattr(adapter, "evict", lambda paths, name=name: told.append((name, list(paths))))
    for site in (Site(libraries), Site({"old": libraries["old"]})):
        with pytest.raises(TypeError, match="each library's adapter"):
            site.evict(["/old/y"])
    assert told == []

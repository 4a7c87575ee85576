"""Who hears of evicted buffer copies: each library its own; a site of one library everything; a library no
longer in the settings nobody; a library that fails to hear is an error, not a stop."""

from __future__ import annotations

from collections.abc import Sequence

from carousel.scheduler.eviction_notice import Evicted, per_library, tell_libraries


class Told:
    def __init__(self, fails: bool = False) -> None:
        self.paths: list[str] = []
        self.fails = fails

    def evict(self, paths: Sequence[str]) -> None:
        if self.fails:
            raise OSError("evict program missing")
        self.paths.extend(paths)


GONE = [Evicted("east", "/a"), Evicted("west", "/b"), Evicted("gone", "/c"), Evicted("east", "/d")]


def test_each_library_of_a_site_hears_its_own_paths_and_a_library_not_in_the_settings_none():
    east, west = Told(), Told()
    assert tell_libraries({"east": east, "west": west}, GONE) == []  # type: ignore[dict-item]
    assert east.paths == ["/a", "/d"] and west.paths == ["/b"]


def test_a_site_of_one_library_hears_every_path_whatever_its_rows_say():
    only = Told()
    assert per_library({"main": only}, GONE) == {"main": ["/a", "/b", "/c", "/d"]}  # type: ignore[dict-item]
    assert per_library({"main": only}, []) == {}  # type: ignore[dict-item]


def test_a_library_that_fails_to_hear_is_named_and_the_others_still_hear():
    east, west = Told(fails=True), Told()
    errors = tell_libraries({"east": east, "west": west}, GONE)  # type: ignore[dict-item]
    assert errors == ["evict in library east: evict program missing"]
    assert west.paths == ["/b"]

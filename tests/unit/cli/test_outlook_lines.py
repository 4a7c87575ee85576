"""`carousel status`'s outlook lines: as they were for one library; on a site of several, each library's
position and eta, and the library of each waiting reason."""

from __future__ import annotations

from typing import Any

from carousel.cli.outlook import outlook_lines

AT = "2026-11-22T06:00:00+00:00"


def _outlook(
    libraries: list[dict[str, Any]], waiting: list[dict[str, Any]], site_libraries: int | None = None
) -> dict[str, Any]:
    several = {} if site_libraries is None else {"site_libraries": site_libraries}
    return several | {
        "computed_at": AT,
        "position": 0,
        "eta": "2026-11-22T07:00:00+00:00",
        "rough": False,
        "reading": 0,
        "next_cycle": 1,
        "unplanned": 0,
        "waiting": waiting,
        "note": None,
        "libraries": libraries,
    }


def _own(library: str, position: int | None, eta: str | None) -> dict[str, Any]:
    return {"library": library, "position": position, "eta": eta}


def test_one_library_reads_as_before() -> None:
    wait = {"code": "no_free_drive", "files": 2, "reason": "no free drive", "library": "default"}
    lines = outlook_lines(_outlook([_own("default", 0, AT)], [wait]))
    assert not any(line.startswith("library ") for line in lines)
    assert "waiting: 2 files no_free_drive: no free drive" in lines


def test_a_request_in_one_library_of_a_site_of_several_is_told_its_library() -> None:
    wait = {"code": "tape_disabled", "files": 1, "reason": "inspection", "library": "new"}
    lines = outlook_lines(_outlook([_own("new", None, None)], [wait], site_libraries=2))
    assert "library new: not placed, eta unknown" in lines
    assert "waiting (library new): 1 file tape_disabled: inspection" in lines
    # a site of one library, named in the settings or not, reads as before
    lines = outlook_lines(_outlook([_own("new", None, None)], [wait], site_libraries=1))
    assert "waiting: 1 file tape_disabled: inspection" in lines
    assert not any(line.startswith("library ") for line in lines)


def test_a_site_of_several_names_each_library() -> None:
    wait = {"code": "no_free_drive", "files": 2, "reason": "no free drive", "library": "slow"}
    libraries = [_own("fast", 0, "2026-11-22T06:10:00+00:00"), _own("slow", None, None)]

    lines = outlook_lines(_outlook(libraries, [wait]))

    assert "library fast: 0 files ahead, eta 2026-11-22 06:10:00 UTC" in lines
    assert "library slow: not placed, eta unknown" in lines
    assert "waiting (library slow): 2 files no_free_drive: no free drive" in lines


def test_one_file_is_a_file() -> None:
    wait = {"code": "no_free_drive", "files": 1, "reason": "no free drive", "library": "slow"}
    outlook = _outlook([_own("fast", 1, AT), _own("slow", None, None)], [wait]) | {"position": 1}
    lines = outlook_lines(outlook)
    assert "position: 1 file of other work is read before its first" in lines
    assert "library fast: 1 file ahead, eta 2026-11-22 06:00:00 UTC" in lines
    assert "waiting (library slow): 1 file no_free_drive: no free drive" in lines
    assert not any("1 files" in line for line in lines)


def test_files_waiting_only_for_a_library_not_in_the_settings_are_not_placed_yet_no_more() -> None:
    words = "its library old is not in this service's settings: ..."
    wait = {"code": "library_not_in_settings", "files": 2, "reason": words, "library": "old"}
    outlook = _outlook([], [wait], site_libraries=1) | {"position": None, "eta": None, "next_cycle": 0}
    lines = outlook_lines(outlook)
    assert lines[0] == "position: none while its library old is not in this service's settings"
    assert f"waiting: 2 files library_not_in_settings: {words}" in lines
    # beside files that the lookup has yet to place, "yet" is true again
    unknown = {"code": "tape_unknown", "files": 1, "reason": "not looked up", "library": None}
    lines = outlook_lines(outlook | {"waiting": [wait, unknown]})
    assert lines[0] == "position: not placed yet"

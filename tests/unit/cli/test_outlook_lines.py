"""`carousel status`'s outlook lines: as they were for one library; on a site of several, each library's
position and eta, and the library of each waiting reason."""

from __future__ import annotations

from typing import Any

from carousel.cli.outlook import outlook_lines

AT = "2026-11-22T06:00:00+00:00"


def _outlook(libraries: list[dict[str, Any]], waiting: list[dict[str, Any]]) -> dict[str, Any]:
    return {
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


def test_a_site_of_several_names_each_library() -> None:
    wait = {"code": "no_free_drive", "files": 2, "reason": "no free drive", "library": "slow"}
    libraries = [_own("fast", 0, "2026-11-22T06:10:00+00:00"), _own("slow", None, None)]

    lines = outlook_lines(_outlook(libraries, [wait]))

    assert "library fast: 0 files ahead, eta 2026-11-22 06:10:00 UTC" in lines
    assert "library slow: not placed, eta unknown" in lines
    assert "waiting (library slow): 2 files no_free_drive: no free drive" in lines

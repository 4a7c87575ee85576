"""`carousel status`'s lines about a request's outlook (docs/cli.md): position, eta, why its files wait; on a
site of several libraries, each library's position and eta, and the library of each waiting reason."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from carousel.outlook.request_outlook import LIBRARY_NOT_IN_SETTINGS


def _when(text: str) -> str:
    return datetime.fromisoformat(text).strftime("%Y-%m-%d %H:%M:%S %Z")


def outlook_lines(outlook: Mapping[str, Any] | None) -> list[str]:
    """The native summary's `outlook` as lines for people; none for a finished request."""
    if outlook is None:
        return []
    position = outlook["position"]
    absent = _absent_libraries(outlook)
    if position is None and absent:  # nothing places them by itself: not "yet"
        lines = [f"position: none while {absent} not in this service's settings"]
    elif position is None:
        lines = ["position: not placed yet"]
    elif position == 0:
        lines = ["position: next (one of its tapes is being read or is the next to be)"]
    elif position == 1:
        lines = ["position: 1 file of other work is read before its first"]
    else:
        lines = [f"position: {position} files of other work are read before its first"]
    if outlook["eta"] is None:
        lines.append("eta: unknown")
    else:
        rough = " (rough: beyond the projected plans)" if outlook["rough"] else ""
        lines.append(f"eta: {_when(outlook['eta'])}{rough}")
    lines.append(
        f"files: {outlook['reading']} with the library, {outlook['next_cycle']} in the next cycle,"
        f" {outlook['unplanned']} not in the estimate"
    )
    # a site of several: say which library is which, even for a request with files in one of them (a server
    # without `site_libraries` told a site of several by the request's libraries)
    several = outlook.get("site_libraries", len(outlook.get("libraries") or [])) > 1
    if several:
        for own in outlook["libraries"]:
            eta = _when(own["eta"]) if own["eta"] is not None else "unknown"
            ahead = "not placed" if own["position"] is None else f"{files_word(own['position'])} ahead"
            lines.append(f"library {own['library']}: {ahead}, eta {eta}")
    for wait in outlook["waiting"]:
        where = f" (library {wait['library']})" if several and wait.get("library") else ""
        lines.append(f"waiting{where}: {files_word(wait['files'])} {wait['code']}: {wait['reason']}")
    if outlook["note"]:
        lines.append(f"note: {outlook['note']}")
    lines.append(f"(outlook of {_when(outlook['computed_at'])})")
    return lines


def files_word(count: int) -> str:
    """ "1 file", "3 files": how every line of the command line counts files."""
    return "1 file" if count == 1 else f"{count} files"


def _absent_libraries(outlook: Mapping[str, Any]) -> str | None:
    """ "library X is" (or "libraries X, Y are") when every reason its files wait is a library the settings
    no longer name (library_not_in_settings); else None."""
    waiting = outlook["waiting"]
    if not waiting or any(w["code"] != LIBRARY_NOT_IN_SETTINGS for w in waiting):
        return None
    names = sorted({w["library"] for w in waiting if w.get("library")})
    if len(names) == 1:
        return f"its library {names[0]} is"
    return f"its libraries {', '.join(names)} are" if names else "its library is"

"""Which library an admin's tape or drive is in (docs/decisions.md §17: a tape is (library, tape), a drive
(library, drive)). The library may be left out when the name is in one library only; a name in several
needs it (400, field `library`); an unknown library is a 404 naming `library`."""

from __future__ import annotations

from collections.abc import Callable

from carousel.domain.errors import InvalidInput, NotFound
from carousel.domain.libraries import DEFAULT_LIBRARY
from hsm_adapters.base import HsmAdapter
from hsm_adapters.site import Site

Libraries = dict[str, HsmAdapter | None]


def site_libraries(adapter: HsmAdapter | None) -> Libraries:
    """The site's libraries by name, each with its adapter: a site's own, else the one library `default`."""
    if isinstance(adapter, Site):
        return dict(adapter.libraries)
    return {DEFAULT_LIBRARY: adapter}


def known_library(libraries: Libraries, library: str) -> str:
    if library not in libraries:
        raise NotFound(
            f"no library {library!r}: the site's libraries are {', '.join(libraries)}", field="library"
        )
    return library


def library_of(
    libraries: Libraries, library: str | None, what: str, name: str, holds: Callable[[str], bool]
) -> str:
    """The library of the tape or drive `name` (`what`: "tape" or "drive"): the one named, which must hold it,
    else the only one that does. NotFound (field `what`) for a name no library holds."""
    if library is not None:
        known_library(libraries, library)
        if holds(library):
            return library
        raise NotFound(f"library {library} has no {what} {name!r}", field=what)
    holding = [each for each in libraries if holds(each)]
    if len(holding) > 1:
        raise InvalidInput(
            f"a {what} {name!r} is in several libraries ({', '.join(holding)}): say which", field="library"
        )
    if not holding:
        where = "the library has no" if len(libraries) == 1 else "no library of the site has a"
        raise NotFound(f"{where} {what} {name!r}", field=what)
    return holding[0]

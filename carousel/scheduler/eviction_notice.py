"""Telling the libraries which disk-buffer copies were evicted (`HsmAdapter.evict`).

The buffer is the site's, so one eviction may free files read from several libraries (docs/decisions.md §17):
each path is told to the library its file was read from (the file row's library), and only to it, one call
per library. A site of one library hears every path, whatever name its rows carry (rows recorded before the
settings named it say `default`). On a site of several, a path whose library is no longer in the settings is
told to none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import structlog

from hsm_adapters.base import HsmAdapter

log = structlog.get_logger(__name__)


class Evicted(NamedTuple):
    """A file that left the buffer: the library it was read from, and its path."""

    library: str
    path: str


def per_library(libraries: Mapping[str, HsmAdapter], evicted: Sequence[Evicted]) -> dict[str, list[str]]:
    """The paths each library is told, by library name, in eviction order."""
    if len(libraries) == 1:
        return {next(iter(libraries)): [e.path for e in evicted]} if evicted else {}
    told: dict[str, list[str]] = {}
    for library, path in evicted:
        told.setdefault(library, []).append(path)
    unknown = [name for name in told if name not in libraries]
    for name in unknown:
        log.warning("evicted copies of a library not in the settings: told to none", library=name)
        del told[name]
    return told


def tell_libraries(libraries: Mapping[str, HsmAdapter], evicted: Sequence[Evicted]) -> list[str]:
    """Each library's adapter hears its own evicted paths. A failure is a stale count at the library, never
    a blocker: returned as errors (`evict: …`, naming the library on a site of several) and logged."""
    errors: list[str] = []
    for name, paths in per_library(libraries, evicted).items():
        try:
            libraries[name].evict(paths)
        except Exception as exc:
            log.warning(
                "the library was not told of evicted copies", library=name, files=len(paths), error=str(exc)
            )
            errors.append(f"evict: {exc}" if len(libraries) == 1 else f"evict in library {name}: {exc}")
    return errors

"""Several libraries behind one queue (docs/decisions.md §17): a library's name, and the unit fair share
accounts drive time in across libraries of different drive generations.

A path with copies in several libraries is read from the one the cost model says serves it soonest
(`soonest_copy`), among the copies on tapes an operator holds least: a copy on a disabled tape waits until the
tape is enabled, one on a broken tape fails, so either comes after any copy on an active tape.

A drive-second of a slow drive is not one of a fast drive: usage is counted in reference drive-seconds, a
library's drive-seconds times its native rate over the site's reference rate (its fastest library's). A site
of one library weighs 1 and accounts exactly as it always did.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from carousel.domain.planning import LibraryCosts

DEFAULT_LIBRARY = "default"  # the one library of a site that names none
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


def not_in_settings_words(library: str) -> str:
    """Why a file whose row names a library the settings no longer name waits: each library's cycle plans,
    hands over and watches its own files only (carousel.scheduler.site_cycle): none does a thing with it."""
    return (
        f"its library {library} is not in this service's settings: nothing reads it nor hears of it, out of"
        " the estimate, until an admin names that library again (or it is cancelled)"
    )


def library_name_problem(name: str) -> str | None:
    """Why `name` cannot name a library, or None when it can."""
    if _NAME.fullmatch(name) is None:
        return f"{name!r} is not a library name: 1 to 32 of a-z, 0-9, '_' and '-', a letter or digit first"
    return None


def usage_weights(rates_bytes_per_s: Mapping[str, float]) -> dict[str, float]:
    """Per library, what one of its drive-seconds counts in reference drive-seconds: its native rate over the
    fastest library's."""
    if not rates_bytes_per_s:
        return {}
    for name, rate in rates_bytes_per_s.items():
        if not rate > 0:
            raise ValueError(f"library {name!r}: the native rate must be positive, not {rate}")
    reference = max(rates_bytes_per_s.values())
    return {name: rate / reference for name, rate in rates_bytes_per_s.items()}


@dataclass(frozen=True, slots=True)
class CopyEstimate:
    """One library's copy of a file, and how soon that library would serve it."""

    library: str
    wait_s: float  # inf: the library publishes no costs, so no estimate
    disabled: bool = False  # its tape is disabled: the file would wait until an admin enables it
    broken: bool = False  # its tape is broken: the file would fail unless it were read elsewhere


def copy_wait_s(
    costs: LibraryCosts | None, *, position_bytes: int, size_bytes: int, queued_bytes: int, drives: int
) -> float:
    """How soon a library serves one file, by its cost model: the bytes queued there ahead of it shared over
    its drives, then a mount, a locate, the per-file overhead and the read. No costs: infinity."""
    if costs is None:
        return math.inf
    rate = costs.rate_bytes_per_s
    backlog_s = queued_bytes / (rate * max(drives, 1))
    locate_s = costs.locate_per_file_s(1) if position_bytes > 0 else 0.0
    return backlog_s + costs.mount_s + locate_s + costs.overhead_s + size_bytes / rate


def soonest_copy(copies: Sequence[CopyEstimate]) -> CopyEstimate:
    """The copy to read a file from, among the libraries holding one (in the settings' order): a copy on an
    active tape before one on a disabled tape before one on a broken tape, then the least estimated wait; on a
    tie (or no estimate at all) the first named. Every copy on a broken tape: the soonest of them (the caller
    decides whether a broken copy will do)."""
    if not copies:
        raise ValueError("no copy to choose from")
    return min(enumerate(copies), key=lambda c: (c[1].broken, c[1].disabled, c[1].wait_s, c[0]))[1]

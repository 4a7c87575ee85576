"""Where else a file can be read when its tape is broken (docs/decisions.md §15, §17).

A file of a broken tape fails with the tape's reason unless another copy of it can be read: on a site of
several libraries, the site's lookup (hsm_adapters.site) asks every library and, among the copies on a tape
that is not broken, chooses as its lookup does (`soonest_copy`: an active tape before a disabled one, then
the soonest by the cost model); the caller (carousel.scheduler.media_states) moves the queued file to that
copy (its library, tape and position, the write a lookup makes). With none, the caller fails the file naming
every broken copy found, each with its library. One library, or a lookup that is not a site's: there is no
other copy.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from hsm_adapters.base import HsmAdapter, OnTape
from hsm_adapters.site import BrokenCopies, Site


@dataclass(frozen=True, slots=True)
class OtherCopy:
    library: str
    tape: str
    position_bytes: int
    size_bytes: int


class NotKnownYet:
    """A library could not say whether it holds a copy: the file waits (its tape is held) and is asked about
    again at the next cycle, rather than failed while a copy may exist."""


NOT_KNOWN_YET = NotKnownYet()


@dataclass(frozen=True, slots=True)
class NoOtherCopy:
    """No copy to read instead; `broken`: (library, tape) of each copy the site's libraries hold, every one on
    a broken tape (empty on a site of one library, which is not asked)."""

    broken: tuple[tuple[str, str], ...] = ()


NO_OTHER_COPY = NoOtherCopy()


def several_libraries(lookup: HsmAdapter | None) -> bool:
    """A site of several libraries: a file's failure names its library."""
    return isinstance(lookup, Site) and len(lookup.libraries) > 1


def other_copies(
    lookup: HsmAdapter | None, paths: Sequence[str], broken: Collection[tuple[str, str]]
) -> list[OtherCopy | NotKnownYet | NoOtherCopy]:
    """For each path, a copy on a tape not in `broken` ((library, tape)) to read instead, or none."""
    if not isinstance(lookup, Site) or not several_libraries(lookup) or not paths:
        return [NO_OTHER_COPY] * len(paths)
    found: list[OtherCopy | NotKnownYet | NoOtherCopy] = []
    for answer in lookup.other_copies(paths, set(broken)):
        if isinstance(answer, OnTape) and answer.library is not None:
            found.append(OtherCopy(answer.library, answer.tape, answer.position_bytes, answer.size_bytes))
        elif isinstance(answer, BrokenCopies):
            found.append(NoOtherCopy(answer.copies))
        elif answer is None:
            found.append(NO_OTHER_COPY)
        else:
            found.append(NOT_KNOWN_YET)
    return found

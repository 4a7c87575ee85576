"""Where else a file can be read when its tape is broken: the seam for several libraries.

A file of a broken tape fails with the tape's reason unless another copy of it can be read. The service
knows one library today, so there is no other copy and `another_copy` answers None. When files carry the
library that holds them and a path can have copies in several libraries, this is where the other copy is
found; the caller (carousel.scheduler.media_states) then leaves the file to be queued for that copy instead
of failing it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OtherCopy:
    library: str
    tape: str


def another_copy(path: str, broken_tape: str) -> OtherCopy | None:
    """A copy of `path` on a tape other than `broken_tape` that can be read instead; None: there is none
    (always, with one library)."""
    return None

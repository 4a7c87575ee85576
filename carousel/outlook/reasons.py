"""Why a file waits, as a stable code next to the policy's own words.

Policies explain each tape they leave waiting in a sentence (`Plan.waiting`); users and programs want a word
they can test. The sentences are sorted by the phrases the built-in policies use
(tests/unit/outlook/test_reasons.py runs each policy to keep them in step), plus the ones the cycle itself
gives: every tape while the library is stalled, tapes whose work waits for space in the disk buffer, and
tapes an admin disabled (or broke). A sentence no phrase matches is `waiting`, with its words.
"""

from __future__ import annotations

from enum import StrEnum

from carousel.domain.media import TAPE_BROKEN_WORDS, TAPE_DISABLED_WORDS


class WaitCode(StrEnum):
    NOT_WORTH_MOUNTING_YET = "not_worth_mounting_yet"  # its tape gathers work before a mount pays
    NO_FREE_DRIVE = "no_free_drive"
    GROUP_OVER_SHARE = "group_over_share"  # its group holds its share (or limit) of the drives
    LIBRARY_OFFLINE = "library_offline"
    LIBRARY_STALLED = "library_stalled"  # online, but nothing started or finished for too long (the cycle's)
    RETRY_PENDING = "retry_pending"  # a read failed; the next attempt waits for a new mount
    BUFFER_FULL = "buffer_full"  # the disk buffer has no room for its bytes until clients release files
    TAPE_DISABLED = "tape_disabled"  # an admin disabled its tape: nothing mounts it until it is enabled
    TAPE_BROKEN = "tape_broken"  # its tape is broken: its files fail at the next cycle
    WAITING = "waiting"  # another reason of the policy's: its words say which


# (phrase, code), first match wins; phrases of policies/*.py
_PHRASES: tuple[tuple[str, WaitCode], ...] = (
    (TAPE_DISABLED_WORDS, WaitCode.TAPE_DISABLED),  # carousel.domain.media: the cycle's, not a policy's
    (TAPE_BROKEN_WORDS, WaitCode.TAPE_BROKEN),
    ("library is offline", WaitCode.LIBRARY_OFFLINE),
    ("library not progressing", WaitCode.LIBRARY_STALLED),
    (
        "space in the disk buffer",
        WaitCode.BUFFER_FULL,
    ),  # carousel.domain.buffer.BUFFER_FULL  # carousel.scheduler.liveness.stalled_reason
    ("share of the drives", WaitCode.GROUP_OVER_SHARE),
    ("holds its", WaitCode.GROUP_OVER_SHARE),  # cta: a group at its drive limit
    ("failed on", WaitCode.RETRY_PENDING),
    ("its retries", WaitCode.RETRY_PENDING),
    ("gathering work", WaitCode.NOT_WORTH_MOUNTING_YET),
    ("below the mount thresholds", WaitCode.NOT_WORTH_MOUNTING_YET),
    ("free drive", WaitCode.NO_FREE_DRIVE),
    ("needs a drive", WaitCode.NO_FREE_DRIVE),
)


def classify(reason: str) -> WaitCode:
    """The code of a policy's waiting reason."""
    lowered = reason.lower()
    for phrase, code in _PHRASES:
        if phrase in lowered:
            return code
    return WaitCode.WAITING

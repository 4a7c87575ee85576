"""One request's outlook: where it stands in the queue, when it should be done, and why its files wait.

Read from a projection of the whole queue (`carousel.outlook.projection`) and the request's own pending
files per tape (`carousel.domain.queue.RequestWork`):

- `files_ahead` (the queue position users see): the files of other work the library is expected to read
  before the first of the request's files is read; 0 when one of its tapes is being read or is next. It is
  the smallest `files_ahead` of the tapes the request has files on.
- `eta`: when the last of its files with a projected pass is expected on disk (the latest pass end of its
  tapes). Files the projection cannot place (tape not known yet, a retry backing off, submitted after the
  projection was made, no time for the library) are counted in `unplanned` and named in `waiting`; with no
  file placed the eta is None and `note` says why.
- `waiting`: why its queued files are not in the next cycle's plan, as codes (carousel.outlook.reasons) with
  the number of files and the policy's own words for the tape holding most of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from carousel.domain.queue import RequestWork
from carousel.outlook.projection import Projection
from carousel.outlook.reasons import WaitCode, classify

TAPE_UNKNOWN = "tape_unknown"  # the library has not said yet which tape holds the file
# its tape has work the projection did not see (submitted or queued there since)
NOT_PROJECTED = "not_projected"
# its row names a library the settings no longer name: no cycle reads it, hands it over or hears of it
LIBRARY_NOT_IN_SETTINGS = "library_not_in_settings"

HELD_CODES = frozenset({WaitCode.TAPE_DISABLED, WaitCode.TAPE_BROKEN})
_OFFLINE_WORDS = "the library is offline: nothing moves until it is back"
_BEHIND_WORDS = "queued behind other work: the next cycle's plan does not reach it"
_SUBMITTED_SINCE_WORDS = "submitted after the outlook was made: in the next one"
# a request older than the snapshot whose file reached its tape's queue after the snapshot read it: moved
# there from a broken tape's copy, queued by a later lookup, due again after a failed read, or its queue's
# change not yet folded when the snapshot was read (the words name no cause: it may be any of them)
_QUEUED_SINCE_WORDS = "queued on this tape after the outlook was made: in the next one"


def absent_libraries_note(libraries: Sequence[str]) -> str:
    """The outlook's note when every pending file of a request waits for a library the settings no longer
    name: nothing places them by itself, so the note says what would (not "yet")."""
    one = len(libraries) == 1
    which = f"library {libraries[0]}" if one else f"libraries {', '.join(libraries)}"
    return (
        f"its files wait for {which}, not in this service's settings: none is in the outlook until an admin"
        f" names {'it' if one else 'them'} again (or they are cancelled)"
    )


@dataclass(frozen=True, slots=True)
class WaitReason:
    code: str
    files: int
    reason: str
    library: str | None = None  # the library of the files it counts (carousel.outlook.site)


@dataclass(frozen=True, slots=True)
class RequestOutlook:
    computed_at: datetime  # the projection's snapshot
    files_ahead: int | None
    eta: datetime | None
    rough: bool  # some of its tapes were placed beyond the policy's projected plans
    reading: int  # files handed to the library (claimed, mounted or being read)
    next_cycle: int  # queued files the next cycle's plan hands to the library
    unplanned: int  # pending files the eta does not cover
    waiting: tuple[WaitReason, ...] = ()
    note: str | None = None
    libraries: tuple[LibraryOutlook, ...] = ()  # each library's figures (carousel.outlook.site)
    site_libraries: int = 1  # the libraries of the site: several, and each figure and reason names its own


@dataclass(frozen=True, slots=True)
class LibraryOutlook:
    """The request's outlook in one library: its files there, that library's projection."""

    library: str
    outlook: RequestOutlook


def request_outlook(
    projection: Projection, work: RequestWork, *, submitted_at: datetime | None = None
) -> RequestOutlook:
    """`submitted_at`: the request's submission, so work the projection did not see is said to be new only
    when the request is newer than the snapshot."""
    reasons: dict[str, list[tuple[int, str]]] = {}  # code -> (files, words) per tape
    older = submitted_at is not None and submitted_at < projection.now
    unseen_words = _QUEUED_SINCE_WORDS if older else _SUBMITTED_SINCE_WORDS

    def wait(code: str, files: int, words: str) -> None:
        if files > 0:
            reasons.setdefault(code, []).append((files, words))

    offline = projection.note is not None and "offline" in projection.note
    etas: list[datetime] = []
    ahead: list[int] = []
    rough = False
    next_cycle = 0
    unplanned = work.retry_pending + work.tape_unknown
    for tape in sorted(set(work.queued) | set(work.in_flight)):
        queued, flying = work.queued.get(tape, 0), work.in_flight.get(tape, 0)
        outlook = projection.tapes.get(tape)
        held = projection.plan.waiting.get(tape)
        if queued and held is not None and classify(held) in HELD_CODES:
            # an admin holds the tape back: its queued files are in no pass until it is enabled (files the
            # library had already are, below)
            unplanned += queued
            wait(classify(held).value, queued, held)
            queued = 0
            if outlook is None:
                unplanned += flying
                continue
            if flying == 0:
                continue
        if outlook is None or outlook.queued < queued:
            # the tape's queue grew since the snapshot: the next projection places these files
            unplanned += queued
            wait(NOT_PROJECTED, queued, unseen_words)
            if outlook is None:
                unplanned += flying
                continue
            queued = 0  # its files in flight are in the projection
            if flying == 0:
                continue
        if outlook.eta is None:
            unplanned += queued + flying
        else:
            etas.append(outlook.eta)
        if outlook.files_ahead is not None:
            ahead.append(outlook.files_ahead)
        rough = rough or outlook.rough
        if queued == 0:
            continue
        if outlook.selected:
            next_cycle += queued
        elif outlook.reason is not None:
            wait(classify(outlook.reason).value, queued, outlook.reason)
        elif offline:
            wait(WaitCode.LIBRARY_OFFLINE.value, queued, _OFFLINE_WORDS)
        else:
            wait(WaitCode.WAITING.value, queued, _BEHIND_WORDS)
    due = f" (due again at {work.retry_due_at.isoformat()})" if work.retry_due_at is not None else ""
    wait(WaitCode.RETRY_PENDING.value, work.retry_pending, f"a read failed: retried later{due}")
    unknown_words = work.unknown_reason or "the library has not said which tape holds it"
    wait(TAPE_UNKNOWN, work.tape_unknown, unknown_words)

    note = None
    if not etas and work.pending:
        note = projection.note or "none of its files is in the outlook yet"
    elif unplanned:
        note = f"{unplanned} file(s) not in the estimate: see waiting"
    return RequestOutlook(
        computed_at=projection.now,
        files_ahead=min(ahead, default=None),
        eta=max(etas, default=None),
        rough=rough,
        reading=sum(work.in_flight.values()),
        next_cycle=next_cycle,
        unplanned=unplanned,
        waiting=tuple(
            WaitReason(code, sum(n for n, _ in per_tape), max(per_tape, key=lambda e: e[0])[1])
            for code, per_tape in sorted(reasons.items(), key=lambda item: -sum(n for n, _ in item[1]))
        ),
        note=note,
    )

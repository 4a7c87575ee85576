"""What the end of a read does to its file: the one rule of the service's completion (carousel.completion,
over database rows) and of the replay's (carousel.replay.memory_store, over memory).

Pure and per file: given what is known of the file now and how its read ended, it says what the file becomes
(which move, attempts, not_before, error) and what the end counts as. It writes nothing, so a store may apply
the answers one by one or gather those of a batch of events into one statement per kind of change. Each
answer's move is one of carousel.domain.states' FileMoves and starts from the file's present state, so the
transition table guards completion too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from carousel.domain.errors import InvalidTransition
from carousel.domain.states import (
    CANCEL_READ,
    FAIL_READ,
    FILE_IN_FLIGHT,
    REQUEUE,
    STAGE,
    FileMove,
    FileState,
)

NO_REASON = "the library reported a failed read without a reason"


@dataclass(frozen=True, slots=True)
class RetryRule:
    """Failed reads: retried until max_attempts reads have failed, each retry after backoff_s."""

    max_attempts: int
    backoff_s: float


class FileFacts(Protocol):
    """What completion needs to know of a file to judge an event about it."""

    @property
    def state(self) -> FileState: ...

    @property
    def batch_key(self) -> str | None: ...  # the batch that holds it while in flight

    @property
    def attempts(self) -> int: ...  # failed reads so far

    @property
    def wanted(self) -> bool: ...  # some requester still waits for it


@dataclass(frozen=True, slots=True)
class FileNow:
    """A file's FileFacts as the database holds them, with its id."""

    id: int
    state: FileState
    batch_key: str | None
    attempts: int
    wanted: bool


# ReadEnd and Completion are made for every event a replay applies: not frozen, whose __init__ costs a few
# times more. Nothing changes them after they are made.
@dataclass(slots=True)
class ReadEnd:
    """How the library says a read ended: an event FILE_STAGED, FILE_FAILED or FILE_CANCELLED."""

    outcome: FileState  # STAGED, FAILED or CANCELLED
    at: datetime
    batch_key: str | None  # the batch whose read it was; None when the library does not say
    retryable: bool = True  # False: reading the file again will not help
    reason: str | None = None


class Counted(StrEnum):
    """What an end counts as in a completion report."""

    STAGED = "staged"
    RETRIED = "retried"  # failed, queued again after the backoff
    FAILED = "failed"  # failed for good
    REQUEUED = "requeued"  # cancelled by the HSM while someone still waits: queued again, no attempt counted
    CANCELLED = "cancelled"  # cancelled, nobody waits
    STALE = "stale"  # about an attempt the file has moved on from: changes nothing


@dataclass(slots=True)
class Completion:
    """What an end does to its file. move None: nothing (a stale event)."""

    counted: Counted
    move: FileMove | None
    attempts: int
    not_before: datetime | None = None
    error: str | None = None

    @property
    def state(self) -> FileState | None:
        """The file's state after the end; None when it stays as it was."""
        return self.move.target if self.move is not None else None


def holds_attempt(file: FileFacts, batch_key: str | None) -> bool:
    """An event of `batch_key` is about the file's present attempt: the file is in flight and, when the event
    names a batch, in that batch (not one a recovered claim or a cancel has taken it from)."""
    return file.state in FILE_IN_FLIGHT and (batch_key is None or batch_key == file.batch_key)


def read_ended(file: FileFacts, end: ReadEnd, retry: RetryRule) -> Completion:
    """The file's next state, attempts, not_before and error after its read ended as `end` says."""
    if end.outcome is FileState.STAGED:
        # A read that reached disk is good whichever batch did it.
        if file.state not in FILE_IN_FLIGHT:
            return _stale(file)
        return _move(file, Counted.STAGED, STAGE, attempts=file.attempts)
    if end.outcome not in (FileState.FAILED, FileState.CANCELLED):
        raise ValueError(f"a read ends STAGED, FAILED or CANCELLED, not {end.outcome}")
    # failures and cancels only count for the batch that holds the file now
    if not holds_attempt(file, end.batch_key):
        return _stale(file)
    if end.outcome is FileState.FAILED:
        return _failed(file, end, retry)
    if file.wanted:
        # The HSM dropped a file someone still waits for: queue it again (not a failed read: no attempt).
        return _move(file, Counted.REQUEUED, REQUEUE, attempts=file.attempts, error=end.reason)
    return _move(
        file, Counted.CANCELLED, CANCEL_READ, attempts=file.attempts, error=end.reason or "cancelled"
    )


def _failed(file: FileFacts, end: ReadEnd, retry: RetryRule) -> Completion:
    attempts = file.attempts + 1
    reason = end.reason or NO_REASON
    if file.wanted and end.retryable and attempts < retry.max_attempts:
        not_before = end.at + timedelta(seconds=retry.backoff_s)  # so the retry waits for a later mount
        return _move(file, Counted.RETRIED, REQUEUE, attempts=attempts, not_before=not_before, error=reason)
    gave_up = end.retryable and attempts >= retry.max_attempts
    detail = f"{reason} (gave up after {attempts} attempts)" if gave_up else reason
    return _move(file, Counted.FAILED, FAIL_READ, attempts=attempts, error=detail)


def _move(
    file: FileFacts,
    counted: Counted,
    move: FileMove,
    *,
    attempts: int,
    not_before: datetime | None = None,
    error: str | None = None,
) -> Completion:
    if file.state not in move.sources:
        raise InvalidTransition(f"file state {file.state} cannot become {move.target} on a read's end")
    return Completion(counted, move, attempts, not_before, error)


def _stale(file: FileFacts) -> Completion:
    return Completion(Counted.STALE, None, file.attempts)

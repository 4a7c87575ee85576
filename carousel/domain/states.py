"""States are data: enums, the table of allowed transitions, and a guard that refuses any other."""

from __future__ import annotations

from enum import StrEnum

from carousel.domain.errors import InvalidTransition


class FileState(StrEnum):
    """The state of one recall of one path (shared by every request that names the path)."""

    UNRESOLVED = "UNRESOLVED"  # the library could not say where the file is yet; retried, reason kept
    QUEUED = "QUEUED"  # tape known, waiting for the scheduler
    CLAIMED = "CLAIMED"  # a cycle took it; not yet confirmed handed to the HSM
    SUBMITTED = "SUBMITTED"  # the HSM has it
    STAGED = "STAGED"  # on disk
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


FILE_TRANSITIONS: dict[FileState, frozenset[FileState]] = {
    FileState.UNRESOLVED: frozenset({FileState.QUEUED, FileState.FAILED, FileState.CANCELLED}),
    FileState.QUEUED: frozenset({FileState.CLAIMED, FileState.CANCELLED, FileState.UNRESOLVED}),
    FileState.CLAIMED: frozenset({FileState.SUBMITTED, FileState.QUEUED, FileState.CANCELLED}),
    FileState.SUBMITTED: frozenset(
        {FileState.STAGED, FileState.FAILED, FileState.QUEUED, FileState.CANCELLED}
    ),
    # A terminal recall may be asked for again by a new request.
    FileState.STAGED: frozenset({FileState.QUEUED, FileState.UNRESOLVED}),
    FileState.FAILED: frozenset({FileState.QUEUED, FileState.UNRESOLVED}),
    FileState.CANCELLED: frozenset({FileState.QUEUED, FileState.UNRESOLVED}),
}

FILE_TERMINAL: frozenset[FileState] = frozenset({FileState.STAGED, FileState.FAILED, FileState.CANCELLED})
FILE_ACTIVE: frozenset[FileState] = frozenset(FileState) - FILE_TERMINAL


def check_file_transition(old: FileState, new: FileState) -> None:
    if new not in FILE_TRANSITIONS[old]:
        raise InvalidTransition(f"file state {old} cannot become {new}")


class TapeRestState(StrEnum):
    """What the WLCG Tape REST API shows a client for one file of its request."""

    SUBMITTED = "SUBMITTED"
    STARTED = "STARTED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


def client_state(file_state: FileState, link_cancelled: bool) -> TapeRestState:
    """One requester's view of a shared recall: its own cancel wins over the shared state."""
    if link_cancelled:
        return TapeRestState.CANCELLED
    return {
        FileState.UNRESOLVED: TapeRestState.SUBMITTED,
        FileState.QUEUED: TapeRestState.SUBMITTED,
        FileState.CLAIMED: TapeRestState.STARTED,
        FileState.SUBMITTED: TapeRestState.STARTED,
        FileState.STAGED: TapeRestState.COMPLETED,
        FileState.FAILED: TapeRestState.FAILED,
        FileState.CANCELLED: TapeRestState.CANCELLED,
    }[file_state]


class RequestState(StrEnum):
    ACTIVE = "ACTIVE"  # some file still pending
    DONE = "DONE"  # every file of the request has reached a final state for this requester
    DELETED = "DELETED"  # the client deleted it: gone for the client, kept for history


class LinkState(StrEnum):
    """One requester's view of one file. PENDING follows the shared recall; the others are final."""

    PENDING = "PENDING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class DeliveryState(StrEnum):
    PENDING = "PENDING"  # to be sent at next_attempt_at (again, after a failed attempt)
    DELIVERED = "DELIVERED"  # the receiver answered 2xx
    FAILED = "FAILED"  # every attempt failed, or it can never succeed; last_error says why

"""States are data: enums, the table of allowed transitions, the sets of states the code asks about, and the
moves that change a file's state, each checked against the table (a guard that refuses any other)."""

from __future__ import annotations

from dataclasses import dataclass
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


# Every change of a file's state the service makes: the FileMoves below, each checked against this table
# when it is defined, are all the changes the code writes.
FILE_TRANSITIONS: dict[FileState, frozenset[FileState]] = {
    FileState.UNRESOLVED: frozenset({FileState.QUEUED, FileState.FAILED, FileState.CANCELLED}),
    # FAILED: its tape was found broken (an admin's or the library's word) and no other copy can be read
    FileState.QUEUED: frozenset({FileState.CLAIMED, FileState.CANCELLED, FileState.FAILED}),
    # A claimed file's read may end before the hand-over is recorded (a crash, a slow commit): it ends as a
    # submitted one does.
    FileState.CLAIMED: frozenset(
        {FileState.SUBMITTED, FileState.QUEUED, FileState.STAGED, FileState.FAILED, FileState.CANCELLED}
    ),
    FileState.SUBMITTED: frozenset(
        {FileState.STAGED, FileState.FAILED, FileState.QUEUED, FileState.CANCELLED}
    ),
    # A terminal recall may be asked for again by a new request.
    FileState.STAGED: frozenset({FileState.QUEUED, FileState.UNRESOLVED}),
    FileState.FAILED: frozenset({FileState.QUEUED, FileState.UNRESOLVED}),
    FileState.CANCELLED: frozenset({FileState.QUEUED, FileState.UNRESOLVED}),
}

# The sets of states the code asks about, each defined here only. SQL takes their `.value`s.
FILE_TERMINAL: frozenset[FileState] = frozenset({FileState.STAGED, FileState.FAILED, FileState.CANCELLED})
FILE_ACTIVE: frozenset[FileState] = frozenset(FileState) - FILE_TERMINAL  # pending: not ended yet
FILE_WAITING: frozenset[FileState] = frozenset({FileState.UNRESOLVED, FileState.QUEUED})  # no cycle took it
FILE_IN_FLIGHT: frozenset[FileState] = frozenset({FileState.CLAIMED, FileState.SUBMITTED})  # a cycle took it
# work for a known tape: queued for it or being read from it (a NULL tape counts for none)
FILE_TAPE_WORK: frozenset[FileState] = frozenset({FileState.QUEUED}) | FILE_IN_FLIGHT


def check_file_transition(old: FileState, new: FileState) -> None:
    """Refuses a change the table does not allow. It guards every production transition: each FileMove is
    checked when it is defined (the moves are what every update of a file's state writes), and the completion
    rule checks each answer's move against the file's present state (carousel.domain.completion)."""
    if new not in FILE_TRANSITIONS[old]:
        raise InvalidTransition(f"file state {old} cannot become {new}")


@dataclass(frozen=True, slots=True)
class FileMove:
    """One kind of change of a file's state: the states it may start from and the one it ends in, each pair
    checked against FILE_TRANSITIONS when the move is defined. An update that makes the change takes its
    `WHERE state IN (...)` from `sources` and its new state from `target`, so the table guards every write."""

    sources: frozenset[FileState]
    target: FileState

    def __post_init__(self) -> None:
        for source in self.sources:
            check_file_transition(source, self.target)


# Every FileMove the service makes; together they are exactly FILE_TRANSITIONS (a test holds them to it).
CLAIM = FileMove(frozenset({FileState.QUEUED}), FileState.CLAIMED)  # a cycle takes a due queued file
HAND_OVER = FileMove(frozenset({FileState.CLAIMED}), FileState.SUBMITTED)  # the HSM took its batch
GIVE_BACK = FileMove(frozenset({FileState.CLAIMED}), FileState.QUEUED)  # refused, or its cycle died
STAGE = FileMove(FILE_IN_FLIGHT, FileState.STAGED)  # the read reached disk
FAIL_READ = FileMove(FILE_IN_FLIGHT, FileState.FAILED)  # the read failed for good
# a failed read to retry, or a read the HSM dropped while someone still waits
REQUEUE = FileMove(FILE_IN_FLIGHT, FileState.QUEUED)
CANCEL_READ = FileMove(FILE_IN_FLIGHT, FileState.CANCELLED)  # nobody wants it any more and the HSM let go
RESOLVE = FileMove(frozenset({FileState.UNRESOLVED}), FileState.QUEUED)  # the library found its tape
NOT_ON_TAPE = FileMove(frozenset({FileState.UNRESOLVED}), FileState.FAILED)  # the library says it has none
ABANDON = FileMove(FILE_WAITING, FileState.CANCELLED)  # every requester cancelled before a cycle took it
ASK_AGAIN = FileMove(FILE_TERMINAL, FileState.QUEUED)  # a new request for an ended recall, tape known
ASK_AGAIN_UNRESOLVED = FileMove(ASK_AGAIN.sources, FileState.UNRESOLVED)  # the same, tape not known now
TAPE_BROKEN = FileMove(frozenset({FileState.QUEUED}), FileState.FAILED)  # its tape is broken, no other copy

FILE_MOVES: tuple[FileMove, ...] = (
    CLAIM,
    HAND_OVER,
    GIVE_BACK,
    STAGE,
    FAIL_READ,
    REQUEUE,
    CANCEL_READ,
    RESOLVE,
    NOT_ON_TAPE,
    ABANDON,
    ASK_AGAIN,
    ASK_AGAIN_UNRESOLVED,
    TAPE_BROKEN,
)


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

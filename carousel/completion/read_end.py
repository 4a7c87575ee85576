"""An adapter's event about the end of a read, in the words of the completion rule
(carousel.domain.completion), for both stores that apply it: the service's (carousel.completion.apply) and
the replay's (carousel.replay.memory_store)."""

from __future__ import annotations

from carousel.domain.completion import ReadEnd
from carousel.domain.states import FileState
from hsm_adapters.base import Event, EventKind

OUTCOMES = {
    EventKind.FILE_STAGED: FileState.STAGED,
    EventKind.FILE_FAILED: FileState.FAILED,
    EventKind.FILE_CANCELLED: FileState.CANCELLED,
}


def read_end(event: Event) -> ReadEnd:
    """The end an event of kind FILE_STAGED, FILE_FAILED or FILE_CANCELLED reports (KeyError for others)."""
    return ReadEnd(OUTCOMES[event.kind], event.at, event.batch_key, event.retryable, event.reason)

"""When a link's recall started, kept on the link when the link ends: the file's own times belong to its
current recall and are reset when a later request queues it anew."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, ScalarSelect, func, select

from carousel.db.models import QueuedFileRow, RequestFile
from carousel.db.state_sets import values
from carousel.domain.states import FILE_IN_FLIGHT

F = QueuedFileRow


def recall_started() -> ColumnElement[Any]:
    """The file's recall start: the library's, or when it was handed over or claimed (what the client
    sees as STARTED)."""
    return func.coalesce(F.started_at, F.submitted_at, F.claimed_at)


def started_of_ending_recall() -> ScalarSelect[Any]:
    """For an UPDATE of request_files: the start of the recall that ends the link (the file holds it)."""
    return select(recall_started()).where(F.id == RequestFile.file_id).scalar_subquery()


def started_of_recall_in_flight() -> ScalarSelect[Any]:
    """For an UPDATE of request_files that a requester ends (a cancel): the start of its file's recall when
    that recall has started, else NULL."""
    return (
        select(recall_started())
        .where(F.id == RequestFile.file_id, F.state.in_(values(FILE_IN_FLIGHT)))
        .scalar_subquery()
    )

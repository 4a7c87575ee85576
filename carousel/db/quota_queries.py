"""How many files callers and groups have queued: what the queue quotas count.

A queued file is a link still PENDING (not ended for its requester) in an ACTIVE request: a file shared
by two requesters counts for each, since each asked for it."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from carousel.db.models import RequestFile, StageRequest
from carousel.domain.states import LinkState, RequestState


def queued_files_of_owner(session: Session, owner: str) -> int:
    query = (
        select(func.count())
        .select_from(RequestFile)
        .join(StageRequest, StageRequest.id == RequestFile.request_id)
        .where(
            StageRequest.owner == owner,
            StageRequest.state == RequestState.ACTIVE.value,
            RequestFile.state == LinkState.PENDING.value,
        )
    )
    return int(session.scalar(query) or 0)


def queued_files_of_group(session: Session, group: str) -> int:
    query = (
        select(func.count())
        .select_from(RequestFile)
        .join(StageRequest, StageRequest.id == RequestFile.request_id)
        .where(
            StageRequest.grp == group,
            StageRequest.state == RequestState.ACTIVE.value,
            RequestFile.state == LinkState.PENDING.value,
        )
    )
    return int(session.scalar(query) or 0)
